#!/usr/bin/env python3
"""A vocabulary-only GGUF written by llama.cpp's own gguf-py the way its converter writes a byte-level
BPE model's (conversion/base.py `_set_vocab_gpt2`: tokenizer.ggml.model "gpt2", the given pre name,
the token list and types of `get_vocab_base`, then `gguf.SpecialVocab(dir, load_merges=True)`).

    python3 scripts/interop/gguf-py-vocab.py LLAMA_CPP_SOURCE TOKENIZER_DIR VOCAB_SIZE PRE OUT.gguf

`get_vocab_base` reads the vocabulary through transformers' AutoTokenizer; this script reads the same
entries from TOKENIZER_DIR/tokenizer.json (model.vocab plus added_tokens; ids missing below
VOCAB_SIZE become "[PAD<i>]" UNUSED, added tokens CONTROL when special, else USER_DEFINED), so it
needs no transformers. No tensors: the file holds the vocabulary and `general.architecture` "llama".
"""
import json
import os
import sys

source, tokenizer_dir, vocab_size, pre, out = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4], sys.argv[5]
sys.path.insert(0, os.path.join(source, 'gguf-py'))
import gguf  # noqa: E402

with open(os.path.join(tokenizer_dir, 'tokenizer.json'), encoding='utf-8') as f:
    tj = json.load(f)
reverse = {i: t for t, i in tj['model']['vocab'].items()}
added = {a['id']: a for a in tj.get('added_tokens', [])}
for i, a in added.items():
    reverse[i] = a['content']
assert max(reverse) < vocab_size

tokens, types = [], []
for i in range(vocab_size):
    if i not in reverse:
        tokens.append(f'[PAD{i}]')
        types.append(gguf.TokenType.UNUSED)
    elif i in added:
        tokens.append(reverse[i])
        types.append(gguf.TokenType.CONTROL if added[i].get('special') else gguf.TokenType.USER_DEFINED)
    else:
        tokens.append(reverse[i])
        types.append(gguf.TokenType.NORMAL)

writer = gguf.GGUFWriter(out, 'llama')
writer.add_tokenizer_model('gpt2')
writer.add_tokenizer_pre(pre)
writer.add_token_list(tokens)
writer.add_token_types(types)
gguf.SpecialVocab(tokenizer_dir, load_merges=True).add_to_gguf(writer)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
