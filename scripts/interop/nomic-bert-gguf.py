#!/usr/bin/env python3
"""A random-weight nomic-bert encoder (nomic-embed-text's layout) twice from the same weights: an HF folder
(NomicBertModel config.json, model.safetensors with its checkpoint names: Wqkv fused, fc11 / fc12 / fc2,
emb_ln, norm1 / norm2, no biases, no position table) and the GGUF llama.cpp's converter writes for it,
by llama.cpp's own gguf-py (general.architecture "nomic-bert", attn_qkv, ffn_up = fc11, ffn_gate = fc12,
rope.freq_base), with the WordPiece vocabulary of a vocabulary-only BERT GGUF (its tokens, types and
special ids) and the HF folder's tokenizer files copied from TOKENIZER_DIR.

    python3 scripts/interop/nomic-bert-gguf.py LLAMA_CPP_SOURCE VOCAB.gguf TOKENIZER_DIR OUT_DIR
        [--hidden 64] [--layers 2] [--heads 4] [--ffn 96] [--positions 128] [--rope-base 1000] [--seed 1]

Writes OUT_DIR/hf/ and OUT_DIR/nomic-bert.gguf. Weights: normal(0, 0.5) scaled by 1/sqrt(fan-in) for
matrices, LayerNorm weights 1 + normal(0, 0.1), f32.
"""
import argparse
import json
import os
import shutil
import sys

p = argparse.ArgumentParser()
p.add_argument('source')
p.add_argument('vocab')
p.add_argument('tokenizer_dir')
p.add_argument('out')
p.add_argument('--hidden', type=int, default=64)
p.add_argument('--layers', type=int, default=2)
p.add_argument('--heads', type=int, default=4)
p.add_argument('--ffn', type=int, default=96)
p.add_argument('--positions', type=int, default=128)
p.add_argument('--rope-base', type=float, default=1000.0)
p.add_argument('--seed', type=int, default=1)
a = p.parse_args()
sys.path.insert(0, os.path.join(a.source, 'gguf-py'))
import gguf  # noqa: E402
import numpy as np  # noqa: E402
from safetensors_file import write_safetensors  # noqa: E402

reader = gguf.GGUFReader(a.vocab)
def field(name):
    f = reader.fields.get(name)
    return None if f is None else f.contents()
tokens = field('tokenizer.ggml.tokens')
V, H, F, L = len(tokens), a.hidden, a.ffn, a.layers
rng = np.random.default_rng(a.seed)
def mat(rows, cols):
    return (rng.normal(0, 0.5, size=(rows, cols)) / np.sqrt(cols)).astype(np.float32)
def vec(n):
    return rng.normal(0, 0.5, size=n).astype(np.float32)
def ln():
    return (1 + rng.normal(0, 0.1, size=H)).astype(np.float32), vec(H)

hf = {'embeddings.word_embeddings.weight': (rng.normal(0, 0.5, size=(V, H))).astype(np.float32), 'embeddings.token_type_embeddings.weight': vec(2 * H).reshape(2, H)}
hf['emb_ln.weight'], hf['emb_ln.bias'] = ln()
for i in range(L):
    pre = f'encoder.layers.{i}.'
    hf[pre + 'attn.Wqkv.weight'] = mat(3 * H, H)
    hf[pre + 'attn.out_proj.weight'] = mat(H, H)
    hf[pre + 'norm1.weight'], hf[pre + 'norm1.bias'] = ln()
    hf[pre + 'mlp.fc11.weight'] = mat(F, H)
    hf[pre + 'mlp.fc12.weight'] = mat(F, H)
    hf[pre + 'mlp.fc2.weight'] = mat(H, F)
    hf[pre + 'norm2.weight'], hf[pre + 'norm2.bias'] = ln()

# The HF folder (safetensors_file.py writes the file by hand).
folder = os.path.join(a.out, 'hf')
os.makedirs(folder, exist_ok=True)
write_safetensors(os.path.join(folder, 'model.safetensors'), [(name, 'F32', t) for name, t in hf.items()])
config = {
    'architectures': ['NomicBertModel'], 'model_type': 'nomic_bert', 'activation_function': 'swiglu', 'n_embd': H, 'n_head': a.heads,
    'n_layer': L, 'n_inner': F, 'n_positions': a.positions, 'layer_norm_epsilon': 1e-12, 'rotary_emb_base': a.rope_base,
    'rotary_emb_fraction': 1.0, 'rotary_emb_interleaved': False, 'rotary_emb_scale_base': None, 'rotary_scaling_factor': None,
    'qkv_proj_bias': False, 'mlp_fc1_bias': False, 'mlp_fc2_bias': False, 'prenorm': False, 'causal': False, 'type_vocab_size': 2, 'vocab_size': V,
}
with open(os.path.join(folder, 'config.json'), 'w') as f:
    json.dump(config, f, indent=1)
for name in os.listdir(a.tokenizer_dir):
    shutil.copy(os.path.join(a.tokenizer_dir, name), os.path.join(folder, name))

# The GGUF, as conversion/bert.py NomicBertModel writes it.
w = gguf.GGUFWriter(os.path.join(a.out, 'nomic-bert.gguf'), 'nomic-bert')
w.add_name('tiny-nomic-bert')
w.add_context_length(a.positions)
w.add_embedding_length(H)
w.add_feed_forward_length(F)
w.add_block_count(L)
w.add_head_count(a.heads)
w.add_layer_norm_eps(1e-12)
w.add_causal_attention(False)
w.add_pooling_type(gguf.PoolingType.MEAN)
w.add_rope_freq_base(a.rope_base)
w.add_file_type(gguf.LlamaFileType.ALL_F32)
w.add_tokenizer_model('bert')
w.add_tokenizer_pre(str(field('tokenizer.ggml.pre') or 'jina-v2-en'))
w.add_token_list(tokens)
w.add_token_types(field('tokenizer.ggml.token_type'))
w.add_token_type_count(2)
for key in reader.fields:
    if key.startswith('tokenizer.ggml.') and key.endswith('_token_id'):
        w.add_uint32(key, int(field(key)))
names = {'embeddings.word_embeddings.weight': 'token_embd.weight', 'embeddings.token_type_embeddings.weight': 'token_types.weight',
         'emb_ln.weight': 'token_embd_norm.weight', 'emb_ln.bias': 'token_embd_norm.bias'}
per_layer = {'attn.Wqkv.weight': 'attn_qkv.weight', 'attn.out_proj.weight': 'attn_output.weight', 'norm1.weight': 'attn_output_norm.weight',
             'norm1.bias': 'attn_output_norm.bias', 'mlp.fc11.weight': 'ffn_up.weight', 'mlp.fc12.weight': 'ffn_gate.weight',
             'mlp.fc2.weight': 'ffn_down.weight', 'norm2.weight': 'layer_output_norm.weight', 'norm2.bias': 'layer_output_norm.bias'}
for name, t in hf.items():
    if name.startswith('encoder.layers.'):
        i, rest = name[len('encoder.layers.'):].split('.', 1)
        w.add_tensor(f'blk.{i}.{per_layer[rest]}', t)
    else:
        w.add_tensor(names[name], t)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
