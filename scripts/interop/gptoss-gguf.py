#!/usr/bin/env python3
"""A tiny random-weight gpt-oss GGUF (llama.cpp's `gpt-oss` architecture), written by llama.cpp's own
gguf-py, with f32 experts and with MXFP4 experts (gguf-py's quants.py quantizer, as
convert_hf_to_gguf.py stores the released model's experts), and the same weights as Hugging Face
folders (transformers' GptOssForCausalLM layout, safetensors written here by hand).

    python3 scripts/interop/gptoss-gguf.py LLAMA_CPP_SOURCE OUT_DIR

Writes into OUT_DIR:
  gptoss-f32.gguf, gptoss-mxfp4.gguf  the same weights; the experts' matrices MXFP4 in the second;
  gptoss-bf16.gguf                    every tensor rounded to bf16, stored as f32 (what llama.cpp
                                      computes on for the bf16 folder);
  gptoss-hf-f32/, gptoss-hf-bf16/     HF folders of the f32 and the bf16-rounded weights (the bf16 one
                                      in two shards and an index, as released checkpoints are): experts
                                      fused and transposed (mlp.experts.gate_up_proj [E, d, 2 ffn],
                                      gate and up interleaved on the last axis, down_proj [E, ffn, d]);
  gptoss-hf-mxfp4/                    the HF MXFP4 form of gptoss-mxfp4.gguf's experts (the same
                                      quantized values: *_blocks [E, rows, cols / 32, 16], two e2m1
                                      values a byte, element 2j in byte j's low nibble, *_scales
                                      [E, rows, cols / 32] e8m0), other tensors f32.
The HF ↔ GGUF relation is convert_hf_to_gguf.py's (conversion/gpt_oss.py), inverted.

Seeded; d 256 (whole K-quant super-blocks), 4 heads of 64, 2 kv heads, 2 layers (layer 0 sliding,
window 8), 8 experts of width 256, 4 used, vocab 64, YaRN factor 32 at an original context of 4096
(gpt-oss's own), rope base 150000. Every bias and sink nonzero; the router scaled so that several
experts win across positions. Planted margins: the embedding dominates the residual stream and the
head's row of token NEXT[x] is the (unit) embedding of x, so each position's argmax is NEXT of its
token by a margin far above every quantized type's noise (greedy comparison is safe); NEXT is a
fixed permutation of the ids but the end-of-text one (which maps to itself and is never reached).
"""
import json
import os
import sys

import numpy as np

from safetensors_file import write_safetensors

source, out = sys.argv[1], sys.argv[2]
sys.path.insert(0, os.path.join(source, 'gguf-py'))
import gguf  # noqa: E402
from gguf import quants  # noqa: E402

MX = gguf.GGMLQuantizationType.MXFP4
rng = np.random.default_rng(31)
tokens = [chr(c) for c in range(ord('a'), ord('z') + 1)] + [chr(c) for c in range(ord('A'), ord('Z') + 1)]
tokens += [str(i) for i in range(10)] + ['ab', '<|endoftext|>']
d, heads, head_dim, kv_heads, layers, experts, used, ffn, vocab = 256, 4, 64, 2, 2, 8, 4, 256, len(tokens)
window = 8


def normal(shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


EMBED_SCALE, HEAD_SCALE = 3.0, 1.0
embed = normal((vocab, d), EMBED_SCALE)
NEXT = np.append(rng.permutation(vocab - 1), vocab - 1)
head = np.zeros((vocab, d), np.float32)
head[NEXT] = HEAD_SCALE * embed / np.linalg.norm(embed, axis=1, keepdims=True)
tensors = [('token_embd.weight', embed), ('output_norm.weight', 1 + normal((d,), 0.1)), ('output.weight', head)]
stacked = []  # the experts' matrices: f32 in one file, MXFP4 in the other
for l in range(layers):
    b = f'blk.{l}.'
    tensors += [
        (b + 'attn_norm.weight', 1 + normal((d,), 0.1)),
        (b + 'attn_q.weight', normal((heads * head_dim, d), 1 / d ** 0.5)), (b + 'attn_q.bias', normal((heads * head_dim,), 0.2)),
        (b + 'attn_k.weight', normal((kv_heads * head_dim, d), 1 / d ** 0.5)), (b + 'attn_k.bias', normal((kv_heads * head_dim,), 0.2)),
        (b + 'attn_v.weight', normal((kv_heads * head_dim, d), 1 / d ** 0.5)), (b + 'attn_v.bias', normal((kv_heads * head_dim,), 0.2)),
        (b + 'attn_output.weight', normal((d, heads * head_dim), 1 / (heads * head_dim) ** 0.5)), (b + 'attn_output.bias', normal((d,), 0.2)),
        (b + 'attn_sinks.weight', normal((heads,), 1.0)),
        (b + 'post_attention_norm.weight', 1 + normal((d,), 0.1)),
        (b + 'ffn_gate_inp.weight', normal((experts, d), 5 / d ** 0.5)), (b + 'ffn_gate_inp.bias', normal((experts,), 0.3)),
        (b + 'ffn_gate_exps.bias', normal((experts, ffn), 0.2)),
        (b + 'ffn_up_exps.bias', normal((experts, ffn), 0.2)),
        (b + 'ffn_down_exps.bias', normal((experts, d), 0.2)),
    ]
    # gate values up to ~±10 so that the clamp at 7 is reached
    stacked += [(b + 'ffn_gate_exps.weight', normal((experts, ffn, d), 2.5 / d ** 0.5)),
                (b + 'ffn_up_exps.weight', normal((experts, ffn, d), 2.5 / d ** 0.5)),
                (b + 'ffn_down_exps.weight', normal((experts, d, ffn), 0.3 / ffn ** 0.5))]


def bf16_bits(a):
    """f32 -> bf16 bits, rounded to nearest even (as torch's .to(bfloat16))."""
    u = np.ascontiguousarray(a, np.float32).view(np.uint32).astype(np.uint64)
    return ((u + 0x7FFF + ((u >> 16) & 1)) >> 16).astype(np.uint16)


def bf16_round(a):
    return (bf16_bits(a).astype(np.uint32) << 16).view(np.float32)


def write(file, mxfp4, tensors=tensors, stacked=stacked):
    writer = gguf.GGUFWriter(os.path.join(out, file), 'gpt-oss')
    writer.add_block_count(layers)
    writer.add_context_length(131072)
    writer.add_embedding_length(d)
    writer.add_feed_forward_length(ffn)
    writer.add_head_count(heads)
    writer.add_head_count_kv(kv_heads)
    writer.add_key_length(head_dim)
    writer.add_value_length(head_dim)
    writer.add_rope_freq_base(150000.0)
    writer.add_layer_norm_rms_eps(1e-5)
    writer.add_expert_count(experts)
    writer.add_expert_used_count(used)
    writer.add_expert_feed_forward_length(ffn)
    writer.add_sliding_window(window)
    writer.add_rope_scaling_type(gguf.RopeScalingType.YARN)
    writer.add_rope_scaling_factor(32.0)
    writer.add_rope_scaling_orig_ctx_len(4096)
    writer.add_tokenizer_model('gpt2')
    writer.add_tokenizer_pre('qwen2')
    writer.add_token_list(tokens)
    writer.add_token_types([1] * (vocab - 1) + [3])
    writer.add_token_merges(['a b'])
    writer.add_eos_token_id(vocab - 1)
    writer.add_bos_token_id(vocab - 1)
    for name, array in tensors:
        writer.add_tensor(name, array)
    for name, array in stacked:
        if mxfp4:
            writer.add_tensor(name, quants.quantize(array, MX), raw_dtype=MX)
        else:
            writer.add_tensor(name, array)
    writer.write_header_to_file()
    writer.write_kv_data_to_file()
    writer.write_tensors_to_file()
    writer.close()


def interleave(a, b, axis):
    """gate and up joined as transformers' GptOssExperts splits them: gate_up[..., ::2], gate_up[..., 1::2]."""
    shape = list(a.shape)
    shape[axis] *= 2
    out = np.empty(shape, a.dtype)
    index = [slice(None)] * len(shape)
    index[axis] = slice(0, None, 2)
    out[tuple(index)] = a
    index[axis] = slice(1, None, 2)
    out[tuple(index)] = b
    return out


def hf_mxfp4(array):
    """gguf-py's MXFP4 blocks of `array` [E, rows, cols] as HF's _blocks [E, rows, cols/32, 16] and _scales [E, rows, cols/32]."""
    q = quants.quantize(array, MX).reshape(array.shape[0], array.shape[1], array.shape[2] // 32, 17)
    scales, qs = q[..., 0], q[..., 1:]
    nibbles = np.concatenate([qs & 0x0F, qs >> 4], axis=-1)  # element i of each block (ggml: qs[j] low = j, high = j + 16)
    return (nibbles[..., 0::2] | (nibbles[..., 1::2] << 4)).astype(np.uint8), np.ascontiguousarray(scales)


def write_hf(folder, form, tensors=tensors, stacked=stacked):
    """An HF gpt-oss folder of the GGUF tensors: 'f32', 'bf16' (the values already bf16-rounded) or 'mxfp4' (experts only)."""
    os.makedirs(os.path.join(out, folder), exist_ok=True)
    g = dict(tensors + stacked)
    dtype = 'BF16' if form == 'bf16' else 'F32'
    cast = bf16_bits if form == 'bf16' else (lambda a: a.astype(np.float32))
    named = [('model.embed_tokens.weight', g['token_embd.weight']), ('model.norm.weight', g['output_norm.weight']), ('lm_head.weight', g['output.weight'])]
    raw = []
    for l in range(layers):
        b, p = f'blk.{l}.', f'model.layers.{l}.'
        named += [(p + 'input_layernorm.weight', g[b + 'attn_norm.weight']), (p + 'post_attention_layernorm.weight', g[b + 'post_attention_norm.weight']),
                  (p + 'self_attn.sinks', g[b + 'attn_sinks.weight'])]
        for hf, gg in (('q_proj', 'attn_q'), ('k_proj', 'attn_k'), ('v_proj', 'attn_v'), ('o_proj', 'attn_output')):
            named += [(p + f'self_attn.{hf}.weight', g[b + gg + '.weight']), (p + f'self_attn.{hf}.bias', g[b + gg + '.bias'])]
        named += [(p + 'mlp.router.weight', g[b + 'ffn_gate_inp.weight']), (p + 'mlp.router.bias', g[b + 'ffn_gate_inp.bias']),
                  (p + 'mlp.experts.gate_up_proj_bias', interleave(g[b + 'ffn_gate_exps.bias'], g[b + 'ffn_up_exps.bias'], 1)),
                  (p + 'mlp.experts.down_proj_bias', g[b + 'ffn_down_exps.bias'])]
        gate, up, down = g[b + 'ffn_gate_exps.weight'], g[b + 'ffn_up_exps.weight'], g[b + 'ffn_down_exps.weight']
        if form == 'mxfp4':
            gate_blocks, gate_scales = hf_mxfp4(gate)
            up_blocks, up_scales = hf_mxfp4(up)
            down_blocks, down_scales = hf_mxfp4(down)
            raw += [(p + 'mlp.experts.gate_up_proj_blocks', interleave(gate_blocks, up_blocks, 1)), (p + 'mlp.experts.gate_up_proj_scales', interleave(gate_scales, up_scales, 1)),
                    (p + 'mlp.experts.down_proj_blocks', down_blocks), (p + 'mlp.experts.down_proj_scales', down_scales)]
        else:
            # [E, d, 2 ffn]: x @ gate_up; [E, ffn, d]: act @ down.
            named += [(p + 'mlp.experts.gate_up_proj', interleave(gate.transpose(0, 2, 1), up.transpose(0, 2, 1), 2)),
                      (p + 'mlp.experts.down_proj', down.transpose(0, 2, 1))]
    tensors_out = [(n, dtype, cast(a)) for n, a in named] + [(n, 'U8', a) for n, a in raw]
    if form != 'bf16':
        write_safetensors(os.path.join(out, folder, 'model.safetensors'), tensors_out)
    else:
        # Two shards listed by model.safetensors.index.json, as released checkpoints are: layer 1's
        # gate_up_proj in the first, everything else of layer 1 in the second.
        first = [t for t in tensors_out if not t[0].startswith('model.layers.1.') or t[0] == 'model.layers.1.mlp.experts.gate_up_proj']
        second = [t for t in tensors_out if t not in first]
        shards = {'model-00001-of-00002.safetensors': first, 'model-00002-of-00002.safetensors': second}
        for name, part in shards.items():
            write_safetensors(os.path.join(out, folder, name), part)
        with open(os.path.join(out, folder, 'model.safetensors.index.json'), 'w') as f:
            json.dump({'metadata': {}, 'weight_map': {t[0]: name for name, part in shards.items() for t in part}}, f, indent=2)
    config = {
        'architectures': ['GptOssForCausalLM'], 'model_type': 'gpt_oss', 'hidden_size': d, 'intermediate_size': ffn,
        'num_hidden_layers': layers, 'num_attention_heads': heads, 'num_key_value_heads': kv_heads, 'head_dim': head_dim,
        'vocab_size': vocab, 'max_position_embeddings': 131072, 'rms_norm_eps': 1e-5, 'rope_theta': 150000.0,
        'rope_scaling': {'rope_type': 'yarn', 'factor': 32.0, 'beta_fast': 32.0, 'beta_slow': 1.0, 'original_max_position_embeddings': 4096},
        'num_local_experts': experts, 'num_experts_per_tok': used, 'sliding_window': window, 'swiglu_limit': 7.0, 'attention_bias': True,
        'layer_types': ['sliding_attention' if l % 2 == 0 else 'full_attention' for l in range(layers)],
        'tie_word_embeddings': False, 'hidden_act': 'silu', 'eos_token_id': vocab - 1, 'bos_token_id': vocab - 1,
        'torch_dtype': 'bfloat16' if form == 'bf16' else 'float32',
    }
    if form == 'mxfp4':
        config['quantization_config'] = {'quant_method': 'mxfp4', 'modules_to_not_convert': ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens', 'lm_head']}
    with open(os.path.join(out, folder, 'config.json'), 'w') as f:
        json.dump(config, f, indent=2)


os.makedirs(out, exist_ok=True)
write('gptoss-f32.gguf', False)
write('gptoss-mxfp4.gguf', True)
rounded = [(n, bf16_round(a)) for n, a in tensors]
rounded_stacked = [(n, bf16_round(a)) for n, a in stacked]
write('gptoss-bf16.gguf', False, rounded, rounded_stacked)
write_hf('gptoss-hf-f32', 'f32')
write_hf('gptoss-hf-bf16', 'bf16', rounded, rounded_stacked)
write_hf('gptoss-hf-mxfp4', 'mxfp4')
