#!/usr/bin/env python3
"""A tiny Qwen3 GGUF whose FFN matrices are MXFP4, written and quantized by llama.cpp's own gguf-py
(quants.py's MXFP4 quantizer), with llama.cpp's C dequantization of every MXFP4 tensor beside it.

    python3 scripts/interop/mxfp4-gguf.py LLAMA_CPP_SOURCE OUT_DIR

LLAMA_CPP_SOURCE: the llama.cpp checkout of the benchmarks' peer cache (scripts/bench/peers/cache.js),
with its gguf-py/ and a build whose build/bin/libggml-base.so exports dequantize_row_mxfp4.
Writes OUT_DIR/mxfp4.gguf (what llama.cpp loads), OUT_DIR/mxfp4-wide.gguf (the same plus
`extra.mxfp4_wide`), OUT_DIR/<tensor name>.f32 (dequantize_row_mxfp4 of its blocks, float32
little-endian) and OUT_DIR/manifest.json ({ tensors: { name: { shape, file } } }). Random weights,
seeded; d 64, 2 heads of 32, 1 kv head, ffn 128, vocab 64, 1 layer; `extra.mxfp4_wide` has rows
whose magnitudes run from 2^-125.5 to 2^120 so that the e8m0 exponents cover the subnormal (e < 2) and
large scales (gguf-py wraps the exponent of rows below 2^-125 around uint8).
"""
import ctypes
import json
import os
import sys

import numpy as np

source, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(source, 'gguf-py'))
import gguf  # noqa: E402
from gguf import quants  # noqa: E402

MX = gguf.GGMLQuantizationType.MXFP4
lib = ctypes.CDLL(os.path.join(source, 'build', 'bin', 'libggml-base.so'))
lib.dequantize_row_mxfp4.argtypes = [ctypes.c_void_p, ctypes.c_void_p, ctypes.c_int64]
lib.dequantize_row_mxfp4.restype = None

rng = np.random.default_rng(27)
# tokens: letters, digits, one merge, the end token (ids 0..63)
tokens = [chr(c) for c in range(ord('a'), ord('z') + 1)] + [chr(c) for c in range(ord('A'), ord('Z') + 1)]
tokens += [str(i) for i in range(10)] + ['ab', '<|endoftext|>']
d, heads, head_dim, kv_heads, ffn, vocab = 64, 2, 32, 1, 128, len(tokens)

tensors = []  # (name, array, raw dtype or None)
manifest = {}


def write(file, extra):
    writer = gguf.GGUFWriter(os.path.join(out, file), 'qwen3')
    writer.add_block_count(1)
    writer.add_context_length(4096)
    writer.add_embedding_length(d)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_freq_base(1000000.0)
    writer.add_layer_norm_rms_eps(1e-6)
    writer.add_tokenizer_model('gpt2')
    writer.add_tokenizer_pre('qwen2')
    writer.add_token_list(tokens)
    writer.add_token_types([1] * (vocab - 1) + [3])
    writer.add_token_merges(['a b'])
    writer.add_eos_token_id(vocab - 1)
    writer.add_bos_token_id(vocab - 1)
    for name, array, raw in tensors + extra:
        writer.add_tensor(name, array, raw_dtype=raw)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def f32(name, shape, scale=0.1):
    tensors.append((name, (rng.standard_normal(shape) * scale).astype(np.float32), None))


def ones(name, n):
    tensors.append((name, np.ones(n, dtype=np.float32), None))


def mxfp4(name, values, into=tensors):
    blocks = quants.quantize(values.astype(np.float32), MX)
    into.append((name, blocks, MX))
    flat = np.ascontiguousarray(blocks)
    y = np.empty(values.size, dtype=np.float32)
    lib.dequantize_row_mxfp4(flat.ctypes.data, y.ctypes.data, values.size)
    file = name + '.f32'
    y.astype('<f4').tofile(os.path.join(out, file))
    manifest[name] = {'shape': list(values.shape), 'file': file}


f32('token_embd.weight', (vocab, d), 1.0)
ones('output_norm.weight', d)
f32('output.weight', (vocab, d), 1.0)  # logits of a few units: clear greedy margins
ones('blk.0.attn_norm.weight', d)
f32('blk.0.attn_q.weight', (heads * head_dim, d))
f32('blk.0.attn_k.weight', (kv_heads * head_dim, d))
f32('blk.0.attn_v.weight', (kv_heads * head_dim, d))
f32('blk.0.attn_output.weight', (d, heads * head_dim))
ones('blk.0.attn_q_norm.weight', head_dim)
ones('blk.0.attn_k_norm.weight', head_dim)
ones('blk.0.ffn_norm.weight', d)
mxfp4('blk.0.ffn_gate.weight', rng.standard_normal((ffn, d)) * 0.2)
mxfp4('blk.0.ffn_up.weight', rng.standard_normal((ffn, d)) * 0.2)
mxfp4('blk.0.ffn_down.weight', rng.standard_normal((d, ffn)) * 0.2)
wide = []
mxfp4('extra.mxfp4_wide', rng.standard_normal((27, 96)) * np.exp2(np.linspace(-125.5, 120, 27))[:, None], wide)

write('mxfp4.gguf', [])
write('mxfp4-wide.gguf', wide)
with open(os.path.join(out, 'manifest.json'), 'w') as f:
    json.dump({'tensors': manifest}, f)
