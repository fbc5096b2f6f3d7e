#!/usr/bin/env python3
"""Qwen3-Embedding and Qwen3-Reranker GGUFs as llama.cpp's converter writes them (conversion/qwen.py
and base.py's _try_set_pooling_type), made with llama.cpp's own gguf-py from a plain qwen3 GGUF (the
same weights, the same vocabulary):

    python3 scripts/interop/qwen3-retrieval-gguf.py LLAMA_CPP_SOURCE IN.gguf OUT_DIR

Writes into OUT_DIR
  qwen3-embedding.gguf        qwen3.pooling_type 3 (LAST); EOS <|endoftext|> appended
                              (tokenizer.ggml.eos_token_id, add_eos_token: what gguf-py's SpecialVocab
                              reads from Qwen3-Embedding's TemplateProcessing post-processor)
  qwen3-embedding-q8_0.gguf   the same with every 2-D matrix Q8_0 (gguf-py's quantizer)
  qwen3-reranker.gguf         qwen3.pooling_type 4 (RANK), classifier.output_labels [yes, no],
                              tokenizer.chat_template.rerank, cls.output.weight = the head's rows of
                              "yes" and "no" (output.weight's, or token_embd's when tied; an untied
                              output.weight is dropped, as the converter drops lm_head)
"""
import os
import sys

import numpy as np

source, src, out = sys.argv[1], sys.argv[2], sys.argv[3]
sys.path.insert(0, os.path.join(source, 'gguf-py'))
import gguf  # noqa: E402
from gguf import quants  # noqa: E402

RERANK_TEMPLATE = (
    "<|im_start|>system\nJudge whether the Document meets the requirements based on the Query and the Instruct provided. "
    "Note that the answer can only be \"yes\" or \"no\".<|im_end|>\n"
    "<|im_start|>user\n<Instruct>: Given a web search query, retrieve relevant passages that answer the query\n<Query>: {query}\n<Document>: {document}<|im_end|>\n"
    "<|im_start|>assistant\n<think>\n\n</think>\n\n"
)

reader = gguf.GGUFReader(src)
arch = reader.fields['general.architecture'].contents()
assert arch == 'qwen3', arch
tokens = reader.fields['tokenizer.ggml.tokens'].contents()
ids = {t: i for i, t in enumerate(tokens)}


def write(path, new_keys, drop_keys=(), tensors=None, quantize=False):
    writer = gguf.GGUFWriter(path, arch)
    for field in reader.fields.values():
        if field.name == 'general.architecture' or field.name.startswith('GGUF.') or field.name in new_keys or field.name in drop_keys:
            continue
        val_type = field.types[0]
        sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
        writer.add_key_value(field.name, field.contents(), val_type, sub_type=sub_type)
    for key, (value, val_type, sub_type) in new_keys.items():
        writer.add_key_value(key, value, val_type, sub_type=sub_type)
    for name, data, ttype in tensors:
        if quantize and data.ndim == 2 and ttype == gguf.GGMLQuantizationType.F32:
            q = quants.quantize(data, gguf.GGMLQuantizationType.Q8_0)
            writer.add_tensor(name, q, raw_shape=q.shape, raw_dtype=gguf.GGMLQuantizationType.Q8_0)
        else:
            writer.add_tensor(name, data, raw_dtype=ttype)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


plain = [(t.name, np.array(t.data), t.tensor_type) for t in reader.tensors]
for _, data, ttype in plain:
    assert ttype == gguf.GGMLQuantizationType.F32, 'the source must be f32'
U32, STR, ARR, BOOL = gguf.GGUFValueType.UINT32, gguf.GGUFValueType.STRING, gguf.GGUFValueType.ARRAY, gguf.GGUFValueType.BOOL

embedding_keys = {
    'qwen3.pooling_type': (int(gguf.PoolingType.LAST), U32, None),
    'tokenizer.ggml.eos_token_id': (ids['<|endoftext|>'], U32, None),
    'tokenizer.ggml.add_eos_token': (True, BOOL, None),
}
write(os.path.join(out, 'qwen3-embedding.gguf'), embedding_keys, tensors=plain)
write(os.path.join(out, 'qwen3-embedding-q8_0.gguf'), embedding_keys, tensors=plain, quantize=True)

by_name = {name: data for name, data, _ in plain}
head = by_name.get('output.weight', by_name['token_embd.weight'])  # [vocab, dim]
cls_out = np.stack([head[ids['yes']], head[ids['no']]]).astype(np.float32)
rerank_tensors = [t for t in plain if t[0] != 'output.weight'] + [('cls.output.weight', cls_out, gguf.GGMLQuantizationType.F32)]
write(os.path.join(out, 'qwen3-reranker.gguf'), {
    'qwen3.pooling_type': (int(gguf.PoolingType.RANK), U32, None),
    'qwen3.classifier.output_labels': (['yes', 'no'], ARR, STR),
    'tokenizer.chat_template.rerank': (RERANK_TEMPLATE, STR, None),
}, tensors=rerank_tensors)
