#!/usr/bin/env python3
"""A random-weight XLM-RoBERTa encoder written by llama.cpp's own gguf-py as its converter writes one
(conversion/bert.py XLMRobertaModel: general.architecture "bert", the UGM "t5" vocabulary, the position
table already cut to the rows from padding_idx + 1, context_length reduced by as many, one token type),
with the vocabulary key/values copied from a vocabulary-only GGUF (llama.cpp's
models/ggml-vocab-nomic-bert-moe.gguf: XLM-R's 250k pieces).

    python3 scripts/interop/xlmr-gguf.py LLAMA_CPP_SOURCE VOCAB.gguf OUT.gguf [--hidden 32] [--layers 2]
        [--heads 4] [--ffn 64] [--positions 64] [--pooling mean|cls] [--seed 1]

Weights: normal(0, 0.5) matrices and vectors, LayerNorm weights 1 + normal(0, 0.1), f32.
"""
import argparse
import os
import sys

p = argparse.ArgumentParser()
p.add_argument('source')
p.add_argument('vocab')
p.add_argument('out')
p.add_argument('--hidden', type=int, default=32)
p.add_argument('--layers', type=int, default=2)
p.add_argument('--heads', type=int, default=4)
p.add_argument('--ffn', type=int, default=64)
p.add_argument('--positions', type=int, default=64)
p.add_argument('--pooling', choices=['mean', 'cls'], default='mean')
p.add_argument('--seed', type=int, default=1)
a = p.parse_args()
sys.path.insert(0, os.path.join(a.source, 'gguf-py'))
import gguf  # noqa: E402
import numpy as np  # noqa: E402

reader = gguf.GGUFReader(a.vocab)
def field(name):
    f = reader.fields.get(name)
    return None if f is None else f.contents()

tokens = field('tokenizer.ggml.tokens')
n_vocab = len(tokens)
w = gguf.GGUFWriter(a.out, 'bert')
w.add_name('tiny-xlmr')
w.add_context_length(a.positions)
w.add_embedding_length(a.hidden)
w.add_feed_forward_length(a.ffn)
w.add_block_count(a.layers)
w.add_head_count(a.heads)
w.add_layer_norm_eps(1e-5)
w.add_causal_attention(False)
w.add_pooling_type(gguf.PoolingType.MEAN if a.pooling == 'mean' else gguf.PoolingType.CLS)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_tokenizer_model('t5')
w.add_tokenizer_pre('default')
w.add_token_list(tokens)
w.add_token_scores(field('tokenizer.ggml.scores'))
w.add_token_types(field('tokenizer.ggml.token_type'))
w.add_add_space_prefix(bool(field('tokenizer.ggml.add_space_prefix')))
w.add_token_type_count(1)
w.add_remove_extra_whitespaces(bool(field('tokenizer.ggml.remove_extra_whitespaces')))
w.add_precompiled_charsmap(bytes(field('tokenizer.ggml.precompiled_charsmap')))
for key, add in [('bos', w.add_bos_token_id), ('eos', w.add_eos_token_id), ('unknown', w.add_unk_token_id), ('seperator', w.add_sep_token_id),
                 ('padding', w.add_pad_token_id), ('mask', w.add_mask_token_id)]:
    v = field(f'tokenizer.ggml.{key}_token_id')
    if v is not None:
        add(int(v))
w.add_add_bos_token(True)
w.add_add_eos_token(True)

rng = np.random.default_rng(a.seed)
def mat(*shape):
    return rng.normal(0, 0.5, size=shape).astype(np.float32)
def norm(name):
    w.add_tensor(f'{name}.weight', (1 + rng.normal(0, 0.1, size=a.hidden)).astype(np.float32))
    w.add_tensor(f'{name}.bias', mat(a.hidden))

H, F = a.hidden, a.ffn
w.add_tensor('token_embd.weight', mat(n_vocab, H))
w.add_tensor('token_types.weight', mat(1, H))
w.add_tensor('position_embd.weight', mat(a.positions, H))
norm('token_embd_norm')
for i in range(a.layers):
    for t in ['attn_q', 'attn_k', 'attn_v', 'attn_output']:
        w.add_tensor(f'blk.{i}.{t}.weight', mat(H, H) / np.sqrt(H).astype(np.float32))
        w.add_tensor(f'blk.{i}.{t}.bias', mat(H))
    norm(f'blk.{i}.attn_output_norm')
    w.add_tensor(f'blk.{i}.ffn_up.weight', mat(F, H) / np.sqrt(H).astype(np.float32))
    w.add_tensor(f'blk.{i}.ffn_up.bias', mat(F))
    w.add_tensor(f'blk.{i}.ffn_down.weight', mat(H, F) / np.sqrt(F).astype(np.float32))
    w.add_tensor(f'blk.{i}.ffn_down.bias', mat(H))
    norm(f'blk.{i}.layer_output_norm')
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
