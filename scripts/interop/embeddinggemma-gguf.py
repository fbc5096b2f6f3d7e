#!/usr/bin/env python3
"""An EmbeddingGemma GGUF as llama.cpp's converter writes it (conversion/gemma.py, EmbeddingGemma,
with --sentence-transformers-dense-modules), made with llama.cpp's own gguf-py from a gemma3 GGUF of
the same weights and the two Dense modules' safetensors:

    python3 scripts/interop/embeddinggemma-gguf.py LLAMA_CPP_SOURCE IN.gguf 2_DENSE.safetensors 3_DENSE.safetensors OUT.gguf

general.architecture 'gemma-embedding' (the gemma3.* keys under gemma-embedding.*), pooling_type 1
(MEAN), dense_2.weight and dense_3.weight with their *_feat_in / *_feat_out keys, and <eos> appended
(tokenizer.ggml.eos_token_id and add_eos_token, as EmbeddingGemma's tokenizer does).
"""
import json
import os
import struct
import sys

import numpy as np

source, src, dense2, dense3, out = sys.argv[1:6]
sys.path.insert(0, os.path.join(source, 'gguf-py'))
import gguf  # noqa: E402

ARCH = 'gemma-embedding'


def linear_weight(path):
    """linear.weight [out, in] of a sentence-transformers Dense module's F32 safetensors."""
    with open(path, 'rb') as f:
        n = struct.unpack('<Q', f.read(8))[0]
        header = json.loads(f.read(n))
        info = header['linear.weight']
        assert info['dtype'] == 'F32'
        start, end = info['data_offsets']
        f.seek(8 + n + start)
        return np.frombuffer(f.read(end - start), dtype=np.float32).reshape(info['shape']).copy()


reader = gguf.GGUFReader(src)
assert reader.fields['general.architecture'].contents() == 'gemma3'
writer = gguf.GGUFWriter(out, ARCH)
for field in reader.fields.values():
    if field.name == 'general.architecture' or field.name.startswith('GGUF.') or field.name in ('tokenizer.ggml.add_eos_token', 'tokenizer.ggml.eos_token_id'):
        continue
    name = ARCH + field.name[len('gemma3'):] if field.name.startswith('gemma3.') else field.name
    val_type = field.types[0]
    sub_type = field.types[-1] if val_type == gguf.GGUFValueType.ARRAY else None
    writer.add_key_value(name, field.contents(), val_type, sub_type=sub_type)
writer.add_pooling_type(gguf.PoolingType.MEAN)
writer.add_bool('tokenizer.ggml.add_eos_token', True)
writer.add_uint32('tokenizer.ggml.eos_token_id', reader.fields['tokenizer.ggml.tokens'].contents().index('<eos>'))
dense = [('dense_2', linear_weight(dense2)), ('dense_3', linear_weight(dense3))]
for prefix, w in dense:
    writer.add_dense_features_dims(prefix, w.shape[1], w.shape[0])
for t in reader.tensors:
    writer.add_tensor(t.name, np.array(t.data), raw_dtype=t.tensor_type)
for prefix, w in dense:
    writer.add_tensor(f'{prefix}.weight', w)
writer.write_header_to_file()
writer.write_kv_data_to_file()
writer.write_tensors_to_file()
writer.close()
