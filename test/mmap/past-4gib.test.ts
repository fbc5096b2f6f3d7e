/**
 * Files past 4 GiB (Qwen3-30B-A3B at Q4_K_M is 17 GiB): one JS buffer holds at most 4 GiB under
 * Node 20, so a mapping shows its head as `bytes` and reaches the rest through `range()`. A
 * sparse GGUF (written here from the spec: a header, one f32 tensor at the start of its data and
 * one 4.5 GiB further on, nothing stored between) reads, and both tensors' values come back.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mapFile, MAX_BUFFER_BYTES } from '../../lib/addon/mapping';
import { closeWeights } from '../../lib/addon/weights';
import { readWeights } from '../../lib/formats';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { tempDir } from '../helpers/fixtures';

const FAR = 4.5 * 2 ** 30;

function str(s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(b.length));
  return Buffer.concat([len, b]);
}

/** GGUF v3: general.architecture 'test', f32 tensors `near` (offset 0) and `far` (offset FAR), 8 values each. */
function writeSparseGguf(file: string, near: Float32Array, far: Float32Array): void {
  const head = Buffer.alloc(24);
  head.write('GGUF', 0, 'latin1');
  head.writeUInt32LE(3, 4);
  head.writeBigUInt64LE(2n, 8);
  head.writeBigUInt64LE(1n, 16);
  const type = Buffer.alloc(4);
  type.writeUInt32LE(8); // string
  const info = (name: string, offset: number) => {
    const b = Buffer.alloc(4 + 8 + 4 + 8);
    b.writeUInt32LE(1, 0);
    b.writeBigUInt64LE(8n, 4);
    b.writeUInt32LE(0, 12); // f32
    b.writeBigUInt64LE(BigInt(offset), 16);
    return Buffer.concat([str(name), b]);
  };
  const header = Buffer.concat([head, str('general.architecture'), type, str('test'), info('near', 0), info('far', FAR)]);
  const dataStart = Math.ceil(header.length / 32) * 32;
  const fd = fs.openSync(file, 'w');
  try {
    fs.writeSync(fd, Buffer.concat([header, Buffer.alloc(dataStart - header.length), Buffer.from(near.buffer)]));
    fs.writeSync(fd, Buffer.from(far.buffer), 0, far.byteLength, dataStart + FAR);
  } finally {
    fs.closeSync(fd);
  }
}

describe('mappings past 4 GiB', () => {
  const tmp = tempDir('weightmap-4gib-');
  const file = path.join(tmp.dir, 'sparse.gguf');
  const near = Float32Array.from({ length: 8 }, (_, i) => i + 0.5);
  const far = Float32Array.from({ length: 8 }, (_, i) => -3 * i - 0.25);
  beforeAll(() => writeSparseGguf(file, near, far));
  afterAll(() => tmp.cleanup());

  test('the head is the first 4 GiB; range() reaches the end; out-of-file ranges are RangeErrors', () => {
    const src = mapFile(file);
    try {
      const size = fs.statSync(file).size;
      expect(size).toBeGreaterThan(MAX_BUFFER_BYTES);
      expect([src.byteLength, src.bytes.length]).toEqual([size, MAX_BUFFER_BYTES]);
      const tail = src.range(size - 32, 32);
      expect(new Float32Array(tail.buffer.slice(tail.byteOffset, tail.byteOffset + 32))).toEqual(far);
      expect(src.range(16, 8)).toEqual(src.bytes.subarray(16, 24));
      expect(() => src.range(size - 4, 8)).toThrow(RangeError);
      expect(() => src.range(-1, 4)).toThrow(RangeError);
    } finally {
      src.close();
    }
  });

  test('a GGUF whose tensor lies past 4 GiB reads, and the tensor\'s values come back', async () => {
    const w = await readWeights(file);
    try {
      const byName = new Map(w.tensors.map((t) => [t.name, t]));
      expect(Array.from(readF32(byName.get('near')!, 0, 8))).toEqual(Array.from(near));
      expect(Array.from(readF32(byName.get('far')!, 0, 8))).toEqual(Array.from(far));
    } finally {
      closeWeights(w);
    }
  });
});
