#!/usr/bin/env python3
"""A tiny random-weight Gemma 3 vision pair in llama.cpp's layout, written by llama.cpp's own gguf-py:
the language model (`gemma3`, f32) and its mmproj (`clip`, projector type gemma3, as
convert_hf_to_gguf.py's Gemma3VisionModel writes it: f16 matrices, f32 embeddings, norms and
biases, the input projection f16 [vision, text], soft_emb_norm already + 1).

    python3 scripts/interop/gemma3-vision-gguf.py LLAMA_CPP_SOURCE OUT_DIR [mmproj-dtype]

Writes OUT_DIR/gemma3-lm.gguf and OUT_DIR/gemma3-mmproj.gguf (mmproj-dtype f16 (default), f32 or
q8_0 for the encoder's matrices), a random test image OUT_DIR/image.rgb (and image.ppm, the same
pixels) and OUT_DIR/embeddings.f32, its image embeddings by a float64 numpy reference from the
stored weights; and OUT_DIR/idefics3-mmproj.gguf, the same encoder with SmolVLM's projector
(pixel shuffle, one linear), with OUT_DIR/idefics3-embeddings.f32. Seeded. Encoder: 64 px images, 8 px patches (an 8×8 grid),
width 64 (4 heads of 16), FFN 96, 2 layers, gelu; pooled 2×2 (scale_factor 2) to 16 image tokens.
VISION_SHAPE="S,P,D,FF,LV,HV,MERGE" replaces the encoder's sizes (benchmarks). Language model: width 64, 4 heads of 16 (2 kv heads), FFN 128, 2 layers sliding over 24 positions
(pattern 2: layer 1 global), a 318-token SentencePiece vocabulary (specials, <0xNN> bytes, letters),
no space prefix, a Gemma-style chat template.

Also, for the Idefics3 mmproj, OUT_DIR/idefics3-lm.gguf: a SmolVLM-shaped language model (`llama`,
f32; width 64, 4 heads of 16 (2 kv heads), FFN 128, 2 layers) whose SentencePiece vocabulary holds
SmolVLM's image tokens (<fake_token_around_image>, <global-img>, <row_R_col_C> up to 6×6) and a
"\n\n" piece, with a SmolVLM-style chat template; and OUT_DIR/tiles.rgb / tiles.ppm, a random
2S×2S image (2×2 tiles with no resampling; the overview is resampled). Their own generators: the
Gemma 3 pair stays the same.
"""
import os
import sys

import numpy as np

source, out = sys.argv[1], sys.argv[2]
mm_dtype = sys.argv[3] if len(sys.argv) > 3 else 'f16'
sys.path.insert(0, os.path.join(source, 'gguf-py'))
import gguf  # noqa: E402
from gguf import quants  # noqa: E402

rng = np.random.default_rng(29)


def normal(shape, scale):
    return (rng.standard_normal(shape) * scale).astype(np.float32)


# ---- the mmproj
S, P, D, FF, LV, HV = 64, 8, 64, 96, 2, 4
MERGE = 2
if os.environ.get('VISION_SHAPE'):  # benchmarks: "S,P,D,FF,LV,HV,MERGE", e.g. SigLIP-So400m's 896,14,1152,4304,27,16,4
    S, P, D, FF, LV, HV, MERGE = (int(v) for v in os.environ['VISION_SHAPE'].split(','))
TEXT = 64
N = (S // P) ** 2

mm = [
    # a conv kernel [D, 3, p, p] (ggml ne = [p, p, 3, D])
    ('v.patch_embd.weight', normal((D, 3, P, P), 1 / (3 * P * P) ** 0.5), 'f32'),
    ('v.patch_embd.bias', normal((D,), 0.1), 'f32'),
    ('v.position_embd.weight', normal((N, D), 0.5), 'f32'),
    ('v.post_ln.weight', 1 + normal((D,), 0.1), 'f32'),
    ('v.post_ln.bias', normal((D,), 0.1), 'f32'),
    ('mm.soft_emb_norm.weight', 1 + normal((D,), 0.1), 'f32'),
    # HF's [vision, text] Parameter, stored as is (ggml ne = [text, vision])
    ('mm.input_projection.weight', normal((D, TEXT), 1 / D ** 0.5), 'f16'),
]
for l in range(LV):
    b = f'v.blk.{l}.'
    mm += [
        (b + 'ln1.weight', 1 + normal((D,), 0.1), 'f32'), (b + 'ln1.bias', normal((D,), 0.1), 'f32'),
        (b + 'attn_q.weight', normal((D, D), 1.5 / D ** 0.5), 'mm'), (b + 'attn_q.bias', normal((D,), 0.1), 'f32'),
        (b + 'attn_k.weight', normal((D, D), 1.5 / D ** 0.5), 'mm'), (b + 'attn_k.bias', normal((D,), 0.1), 'f32'),
        (b + 'attn_v.weight', normal((D, D), 1 / D ** 0.5), 'mm'), (b + 'attn_v.bias', normal((D,), 0.1), 'f32'),
        (b + 'attn_out.weight', normal((D, D), 1 / D ** 0.5), 'mm'), (b + 'attn_out.bias', normal((D,), 0.1), 'f32'),
        (b + 'ln2.weight', 1 + normal((D,), 0.1), 'f32'), (b + 'ln2.bias', normal((D,), 0.1), 'f32'),
        (b + 'ffn_up.weight', normal((FF, D), 1 / D ** 0.5), 'mm'), (b + 'ffn_up.bias', normal((FF,), 0.1), 'f32'),
        (b + 'ffn_down.weight', normal((D, FF), 1 / FF ** 0.5), 'mm'), (b + 'ffn_down.bias', normal((D,), 0.1), 'f32'),
    ]


stored = {}  # name -> the values as the file holds them (float64), for the reference


def add(writer, name, array, dtype):
    if dtype == 'mm':
        dtype = mm_dtype
    if dtype == 'f32':
        writer.add_tensor(name, array)
        stored[name] = array.astype(np.float64)
    elif dtype == 'f16':
        writer.add_tensor(name, array.astype(np.float16))
        stored[name] = array.astype(np.float16).astype(np.float64)
    elif dtype == 'q8_0':
        q = gguf.GGMLQuantizationType.Q8_0
        packed = quants.quantize(array, q)
        writer.add_tensor(name, packed, raw_dtype=q)
        stored[name] = quants.dequantize(packed, q).reshape(array.shape).astype(np.float64)
    else:
        raise ValueError(dtype)


def reference_features(rgb):
    """SigLIP's post-LN features [N, D] in float64 from the published semantics (HF
    SiglipVisionModel; tanh GELU as llama.cpp's use_gelu), for `rgb` [S, S, 3] uint8."""
    g = S // P
    x = (rgb.astype(np.float64) / 255 - 0.5) / 0.5  # [S, S, 3]
    patches = x.reshape(g, P, g, P, 3).transpose(0, 2, 4, 1, 3).reshape(N, 3 * P * P)  # (ch, py, px)
    h = patches @ stored['v.patch_embd.weight'].reshape(D, -1).T + stored['v.patch_embd.bias'] + stored['v.position_embd.weight']

    def ln(v, w, b, eps=1e-6):
        mu = v.mean(-1, keepdims=True)
        var = ((v - mu) ** 2).mean(-1, keepdims=True)
        return (v - mu) / np.sqrt(var + eps) * w + b

    def gelu(v):
        return 0.5 * v * (1 + np.tanh(np.sqrt(2 / np.pi) * (v + 0.044715 * v ** 3)))

    hd = D // HV
    for l in range(LV):
        t = lambda n: stored[f'v.blk.{l}.{n}']  # noqa: E731
        a = ln(h, t('ln1.weight'), t('ln1.bias'))
        q = (a @ t('attn_q.weight').T + t('attn_q.bias')).reshape(N, HV, hd).transpose(1, 0, 2)
        k = (a @ t('attn_k.weight').T + t('attn_k.bias')).reshape(N, HV, hd).transpose(1, 0, 2)
        v = (a @ t('attn_v.weight').T + t('attn_v.bias')).reshape(N, HV, hd).transpose(1, 0, 2)
        sc = q @ k.transpose(0, 2, 1) / np.sqrt(hd)
        sc = np.exp(sc - sc.max(-1, keepdims=True))
        sc /= sc.sum(-1, keepdims=True)
        o = (sc @ v).transpose(1, 0, 2).reshape(N, D)
        h = h + o @ t('attn_out.weight').T + t('attn_out.bias')
        a = ln(h, t('ln2.weight'), t('ln2.bias'))
        h = h + gelu(a @ t('ffn_up.weight').T + t('ffn_up.bias')) @ t('ffn_down.weight').T + t('ffn_down.bias')
    return ln(h, stored['v.post_ln.weight'], stored['v.post_ln.bias'])


def gemma3_embeddings(f):
    """Gemma3MultiModalProjector: average pool MERGE×MERGE, Gemma RMS norm (the stored weight is 1 + w), input projection."""
    side = S // P // MERGE
    pooled = f.reshape(side, MERGE, side, MERGE, D).mean(axis=(1, 3)).reshape(side * side, D)
    pooled = pooled / np.sqrt((pooled ** 2).mean(-1, keepdims=True) + 1e-6) * stored['mm.soft_emb_norm.weight']
    return pooled @ stored['mm.input_projection.weight']


def idefics3_embeddings(f):
    """Idefics3Connector: HF's pixel_shuffle (token (ty, tx) = its MERGE×MERGE patches, row by row, concatenated), then the linear."""
    side = S // P // MERGE
    shuffled = f.reshape(side, MERGE, side, MERGE, D).transpose(0, 2, 1, 3, 4).reshape(side * side, MERGE * MERGE * D)
    return shuffled @ stored['mm.model.fc.weight'].T


def write_mmproj(file, projector, tensors, preproc_size=None):
    w = gguf.GGUFWriter(os.path.join(out, file), 'clip')
    if preproc_size is not None:
        w.add_vision_preproc_image_size(preproc_size)
    w.add_file_type(1)
    w.add_clip_has_vision_encoder(True)
    w.add_clip_projector_type(projector)
    w.add_vision_projection_dim(TEXT)
    w.add_vision_image_size(S)
    w.add_vision_patch_size(P)
    w.add_vision_embedding_length(D)
    w.add_vision_feed_forward_length(FF)
    w.add_vision_block_count(LV)
    w.add_vision_head_count(HV)
    w.add_vision_image_mean([0.5, 0.5, 0.5])
    w.add_vision_image_std([0.5, 0.5, 0.5])
    w.add_vision_attention_layernorm_eps(1e-6)
    w.add_vision_use_gelu(True)
    w.add_vision_projector_scale_factor(MERGE)
    for name, array, dtype in tensors:
        add(w, name, array, dtype)
    w.write_header_to_file()
    w.write_kv_data_to_file()
    w.write_tensors_to_file()
    w.close()


os.makedirs(out, exist_ok=True)
write_mmproj('gemma3-mmproj.gguf', gguf.VisionProjectorType.GEMMA3, mm)
# SmolVLM's projector over the same encoder: pixel shuffle by MERGE, one linear [TEXT, D·MERGE²].
encoder = [t for t in mm if not t[0].startswith('mm.')]
# (its own generator: the Gemma 3 pair's weights and image stay those of `rng` alone)
fc = (np.random.default_rng(30).standard_normal((TEXT, D * MERGE * MERGE)) / (D * MERGE * MERGE) ** 0.5).astype(np.float32)
# SmolVLM's preprocessor: the longest edge brought to 2·S, then cut into S×S tiles (clip.cpp's idefics3 preproc).
write_mmproj('idefics3-mmproj.gguf', gguf.VisionProjectorType.IDEFICS3, encoder + [('mm.model.fc.weight', fc, 'mm')], preproc_size=2 * S)

# A test image at the encoder's size (raw RGB and the same pixels as a binary PPM, which
# llama.cpp's stb_image reads) and its reference embeddings [N / MERGE², TEXT] float32.
image = rng.integers(0, 256, (S, S, 3), dtype=np.uint8)
image.tofile(os.path.join(out, 'image.rgb'))
with open(os.path.join(out, 'image.ppm'), 'wb') as f:
    f.write(b'P6\n%d %d\n255\n' % (S, S) + image.tobytes())
features = reference_features(image)
gemma3_embeddings(features).astype(np.float32).tofile(os.path.join(out, 'embeddings.f32'))
idefics3_embeddings(features).astype(np.float32).tofile(os.path.join(out, 'idefics3-embeddings.f32'))

# ---- the language model
d, heads, kv_heads, hd, ffn, layers, window = TEXT, 4, 2, 16, 128, 2, 24
specials = ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>', '<start_of_image>', '<end_of_image>']
tokens = list(specials) + [f'<0x{b:02X}>' for b in range(256)]
letters = [chr(c) for c in range(ord('a'), ord('z') + 1)]
tokens += letters + ['\u2581' + c for c in letters] + ['\u2581', '\n']
vocab = len(tokens)
types = [3] * len(specials) + [6] * 256 + [1] * (vocab - len(specials) - 256)
types[3] = 2  # <unk>
scores = [0.0] * len(specials) + [0.0] * 256 + [-float(i) for i in range(vocab - len(specials) - 256)]

# An untied head: tied, each generated token's own (√d-scaled) embedding would win the next step.
lm = [('token_embd.weight', normal((vocab, d), 1.0)), ('output_norm.weight', 1 + normal((d,), 0.1)), ('output.weight', normal((vocab, d), 4 / d ** 0.5))]
for l in range(layers):
    b = f'blk.{l}.'
    lm += [
        (b + 'attn_norm.weight', 1 + normal((d,), 0.1)),
        (b + 'attn_q.weight', normal((heads * hd, d), 1 / d ** 0.5)),
        (b + 'attn_k.weight', normal((kv_heads * hd, d), 1 / d ** 0.5)),
        (b + 'attn_v.weight', normal((kv_heads * hd, d), 1 / d ** 0.5)),
        (b + 'attn_q_norm.weight', 1 + normal((hd,), 0.1)),
        (b + 'attn_k_norm.weight', 1 + normal((hd,), 0.1)),
        (b + 'attn_output.weight', normal((d, heads * hd), 1 / (heads * hd) ** 0.5)),
        (b + 'post_attention_norm.weight', 1 + normal((d,), 0.1)),
        (b + 'ffn_norm.weight', 1 + normal((d,), 0.1)),
        (b + 'ffn_gate.weight', normal((ffn, d), 1 / d ** 0.5)),
        (b + 'ffn_up.weight', normal((ffn, d), 1 / d ** 0.5)),
        (b + 'ffn_down.weight', normal((d, ffn), 1 / ffn ** 0.5)),
        (b + 'post_ffw_norm.weight', 1 + normal((d,), 0.1)),
    ]

# Gemma 3's turn format (its released template, less the system-turn and content-list handling).
CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}{% set role = 'model' if message['role'] == 'assistant' else message['role'] %}"
    "{{ '<start_of_turn>' + role + '\n' + message['content'] | trim + '<end_of_turn>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<start_of_turn>model\n' }}{% endif %}"
)

w = gguf.GGUFWriter(os.path.join(out, 'gemma3-lm.gguf'), 'gemma3')
w.add_block_count(layers)
w.add_context_length(512)
w.add_embedding_length(d)
w.add_feed_forward_length(ffn)
w.add_head_count(heads)
w.add_head_count_kv(kv_heads)
w.add_key_length(hd)
w.add_value_length(hd)
w.add_rope_freq_base(1000000.0)
w.add_rope_freq_base_swa(10000.0)
w.add_layer_norm_rms_eps(1e-6)
w.add_sliding_window(window)
w.add_sliding_window_pattern(2)
w.add_tokenizer_model('llama')
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(2)
w.add_eos_token_id(1)
w.add_unk_token_id(3)
w.add_pad_token_id(0)
w.add_add_bos_token(False)  # the chat template writes <bos>: llama.cpp adds no second one
w.add_add_eos_token(False)
w.add_add_space_prefix(False)  # as Gemma's converted vocabularies
w.add_chat_template(CHAT_TEMPLATE)
for name, array in lm:
    w.add_tensor(name, array)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()


# ---- the SmolVLM-shaped language model for the Idefics3 mmproj (its own generator)
rng = np.random.default_rng(31)
tiles = rng.integers(0, 256, (2 * S, 2 * S, 3), dtype=np.uint8)
tiles.tofile(os.path.join(out, 'tiles.rgb'))
with open(os.path.join(out, 'tiles.ppm'), 'wb') as f:
    f.write(b'P6\n%d %d\n255\n' % (2 * S, 2 * S) + tiles.tobytes())

specials = ['<unk>', '<s>', '</s>', '<|im_start|>', '<end_of_utterance>', '<fake_token_around_image>', '<global-img>', '<image>']
specials += [f'<row_{r}_col_{c}>' for r in range(1, 7) for c in range(1, 7)]
tokens = list(specials) + [f'<0x{b:02X}>' for b in range(256)]
tokens += letters + ['\u2581' + c for c in letters] + ['\u2581', ':', '\n', '\n\n']
vocab = len(tokens)
types = [3] * len(specials) + [6] * 256 + [1] * (vocab - len(specials) - 256)
types[0] = 2  # <unk>
scores = [0.0] * len(specials) + [0.0] * 256 + [-float(i) for i in range(vocab - len(specials) - 256)]

lm = [('token_embd.weight', normal((vocab, d), 1.0)), ('output_norm.weight', 1 + normal((d,), 0.1)), ('output.weight', normal((vocab, d), 4 / d ** 0.5))]
for l in range(layers):
    b = f'blk.{l}.'
    lm += [
        (b + 'attn_norm.weight', 1 + normal((d,), 0.1)),
        (b + 'attn_q.weight', normal((heads * hd, d), 1 / d ** 0.5)),
        (b + 'attn_k.weight', normal((kv_heads * hd, d), 1 / d ** 0.5)),
        (b + 'attn_v.weight', normal((kv_heads * hd, d), 1 / d ** 0.5)),
        (b + 'attn_output.weight', normal((d, heads * hd), 1 / (heads * hd) ** 0.5)),
        (b + 'ffn_norm.weight', 1 + normal((d,), 0.1)),
        (b + 'ffn_gate.weight', normal((ffn, d), 1 / d ** 0.5)),
        (b + 'ffn_up.weight', normal((ffn, d), 1 / d ** 0.5)),
        (b + 'ffn_down.weight', normal((d, ffn), 1 / ffn ** 0.5)),
    ]

# SmolVLM's turn format (its released template, less the content-list handling).
CHAT_TEMPLATE = (
    "{% for message in messages %}{% set role = 'Assistant' if message['role'] == 'assistant' else 'User' %}"
    "{{ '<|im_start|>' + role + ':' + message['content'] + '<end_of_utterance>\n' }}{% endfor %}"
    "{% if add_generation_prompt %}{{ '<|im_start|>Assistant:' }}{% endif %}"
)

w = gguf.GGUFWriter(os.path.join(out, 'idefics3-lm.gguf'), 'llama')
w.add_block_count(layers)
w.add_context_length(1024)
w.add_embedding_length(d)
w.add_feed_forward_length(ffn)
w.add_head_count(heads)
w.add_head_count_kv(kv_heads)
w.add_rope_dimension_count(hd)
w.add_rope_freq_base(100000.0)
w.add_layer_norm_rms_eps(1e-5)
w.add_tokenizer_model('llama')
w.add_token_list(tokens)
w.add_token_scores(scores)
w.add_token_types(types)
w.add_bos_token_id(1)
w.add_eos_token_id(4)
w.add_unk_token_id(0)
w.add_add_bos_token(False)
w.add_add_eos_token(False)
w.add_add_space_prefix(False)
w.add_chat_template(CHAT_TEMPLATE)
for name, array in lm:
    w.add_tensor(name, array)
w.write_header_to_file()
w.write_kv_data_to_file()
w.write_tensors_to_file()
w.close()
