#!/usr/bin/env python3
"""A one-layer gpt-oss-20b-shaped HF folder (d 2880, experts of width 2880, 64 heads of 64, 8 kv
heads) of random values, for timing the safetensors reader's conversion of its experts
(scripts/bench/gptoss-hf-convert.js).

    python3 scripts/bench/gptoss-hf-folder.py OUT_DIR mxfp4|bf16 EXPERTS

The MXFP4 form: random bytes for the e2m1 pairs, exponents 118..127; bf16 values N(0, 0.02).
"""
import json, os, sys
import numpy as np
sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), '..', 'interop'))
from safetensors_file import write_safetensors  # noqa: E402
out, form, E = sys.argv[1], sys.argv[2], int(sys.argv[3])
d = f = 2880; heads, hd, kv, vocab = 64, 64, 8, 64
rng = np.random.default_rng(1)
os.makedirs(out, exist_ok=True)
named = []
def add(n, dt, a): named.append((n, dt, a))
def bf(shape): return (rng.standard_normal(shape, dtype=np.float32) * 0.02).view(np.uint32).__rshift__(16).astype(np.uint16)
add('model.embed_tokens.weight', 'BF16', bf((vocab, d))); add('model.norm.weight', 'BF16', bf((d,))); add('lm_head.weight', 'BF16', bf((vocab, d)))
p = 'model.layers.0.'
for n, s in [('input_layernorm.weight', (d,)), ('post_attention_layernorm.weight', (d,)), ('self_attn.sinks', (heads,)),
             ('self_attn.q_proj.weight', (heads*hd, d)), ('self_attn.q_proj.bias', (heads*hd,)), ('self_attn.k_proj.weight', (kv*hd, d)), ('self_attn.k_proj.bias', (kv*hd,)),
             ('self_attn.v_proj.weight', (kv*hd, d)), ('self_attn.v_proj.bias', (kv*hd,)), ('self_attn.o_proj.weight', (d, heads*hd)), ('self_attn.o_proj.bias', (d,)),
             ('mlp.router.weight', (E, d)), ('mlp.router.bias', (E,)), ('mlp.experts.gate_up_proj_bias', (E, 2*f)), ('mlp.experts.down_proj_bias', (E, d))]:
    add(p + n, 'BF16', bf(s))
if form == 'mxfp4':
    add(p + 'mlp.experts.gate_up_proj_blocks', 'U8', rng.integers(0, 256, (E, 2*f, d//32, 16), dtype=np.uint8))
    add(p + 'mlp.experts.gate_up_proj_scales', 'U8', rng.integers(118, 128, (E, 2*f, d//32), dtype=np.uint8))
    add(p + 'mlp.experts.down_proj_blocks', 'U8', rng.integers(0, 256, (E, d, f//32, 16), dtype=np.uint8))
    add(p + 'mlp.experts.down_proj_scales', 'U8', rng.integers(118, 128, (E, d, f//32), dtype=np.uint8))
else:
    add(p + 'mlp.experts.gate_up_proj', 'BF16', bf((E, d, 2*f))); add(p + 'mlp.experts.down_proj', 'BF16', bf((E, f, d)))
write_safetensors(os.path.join(out, 'model.safetensors'), named)
json.dump({'architectures': ['GptOssForCausalLM'], 'model_type': 'gpt_oss', 'hidden_size': d, 'intermediate_size': f, 'num_hidden_layers': 1,
           'num_attention_heads': heads, 'num_key_value_heads': kv, 'head_dim': hd, 'vocab_size': vocab, 'num_local_experts': E, 'num_experts_per_tok': 4,
           'sliding_window': 128, 'layer_types': ['sliding_attention'], 'attention_bias': True, 'rope_theta': 150000, 'swiglu_limit': 7.0,
           'rope_scaling': {'rope_type': 'yarn', 'factor': 32.0, 'beta_fast': 32.0, 'beta_slow': 1.0, 'original_max_position_embeddings': 4096, 'truncate': False},
           'tie_word_embeddings': False}, open(os.path.join(out, 'config.json'), 'w'))
