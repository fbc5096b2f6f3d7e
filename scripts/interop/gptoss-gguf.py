#!/usr/bin/env python3
"""A tiny random-weight gpt-oss GGUF (llama.cpp's `gpt-oss` architecture), written by llama.cpp's own
gguf-py, with f32 experts and with MXFP4 experts (gguf-py's quants.py quantizer, as
convert_hf_to_gguf.py stores the released model's experts).

    python3 scripts/interop/gptoss-gguf.py LLAMA_CPP_SOURCE OUT_DIR

Writes OUT_DIR/gptoss-f32.gguf and OUT_DIR/gptoss-mxfp4.gguf (the same weights; the experts'
matrices MXFP4). Seeded; d 256 (whole K-quant super-blocks), 4 heads of 64, 2 kv heads, 2 layers
(layer 0 sliding, window 8), 8 experts of width 256, 4 used, vocab 64, YaRN factor 32 at an original context of 4096 (gpt-oss's
own), rope base 150000. Every bias and sink nonzero; the router scaled so that several experts win
across positions; the head scaled so that the logits have margins well above the MXFP4 noise.
"""
import os
import sys

import numpy as np

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


tensors = [('token_embd.weight', normal((vocab, d), 1.0)), ('output_norm.weight', 1 + normal((d,), 0.1)),
           ('output.weight', normal((vocab, d), 4 / d ** 0.5))]
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
                (b + 'ffn_down_exps.weight', normal((experts, d, ffn), 1 / ffn ** 0.5))]


def write(file, mxfp4):
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


os.makedirs(out, exist_ok=True)
write('gptoss-f32.gguf', False)
write('gptoss-mxfp4.gguf', True)
