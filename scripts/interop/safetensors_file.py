"""A safetensors file written by hand for the interop scripts (PyPI's safetensors is not installed):
u64 LE header length, the JSON header (padded to 8 bytes), then the tensors' bytes in order."""
import json

import numpy as np


def write_safetensors(path, named):
    """named: (name, safetensors dtype such as 'F32' / 'BF16' / 'U8', numpy array) in file order."""
    header, blobs, at = {'__metadata__': {'format': 'pt'}}, [], 0
    for name, dtype, array in named:
        data = np.ascontiguousarray(array).tobytes()
        header[name] = {'dtype': dtype, 'shape': list(array.shape), 'data_offsets': [at, at + len(data)]}
        blobs.append(data)
        at += len(data)
    text = json.dumps(header).encode()
    text += b' ' * (-len(text) % 8)
    with open(path, 'wb') as f:
        f.write(len(text).to_bytes(8, 'little'))
        f.write(text)
        for data in blobs:
            f.write(data)
