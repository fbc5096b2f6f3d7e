import * as path from 'node:path';
import { bf16ToF32, decodeFloats, encodeFloats, f16ToF32, f32ToBf16, f32ToF16, roundHalfEven } from '../../lib/formats/quantization/dtype-convert';
import { f32Chunks, readF32, transposedF32Chunks } from '../../lib/formats/quantization/tensor-data';
import { closeWeights } from '../../lib/addon/weights';
import { tempDir } from '../helpers/fixtures';
import { blobWeights, f32Bytes, transpose } from './synthetic';

describe('binary16', () => {
  test('known values and bit patterns', () => {
    const cases: [number, number][] = [
      [0, 0x0000], [-0, 0x8000], [1, 0x3c00], [-2, 0xc000], [0.5, 0x3800], [65504, 0x7bff],
      [2 ** -14, 0x0400], [2 ** -24, 0x0001], [Infinity, 0x7c00], [-Infinity, 0xfc00], [0.333251953125, 0x3555],
    ];
    for (const [value, bits] of cases) {
      expect([value, f32ToF16(value)]).toEqual([value, bits]);
      expect(Object.is(f16ToF32(bits), value)).toBe(true);
    }
    expect(Number.isNaN(f16ToF32(0x7e00))).toBe(true);
    const nan = f32ToF16(NaN);
    expect(nan & 0x7c00).toBe(0x7c00);
    expect(nan & 0x03ff).not.toBe(0);
  });

  test('rounding: nearest, ties to even, overflow to infinity, subnormals', () => {
    expect(f32ToF16(1 + 2 ** -11)).toBe(0x3c00); // tie -> even (down)
    expect(f32ToF16(1 + 3 * 2 ** -11)).toBe(0x3c02); // tie -> even (up)
    expect(f32ToF16(1 + 2 ** -11 + 2 ** -20)).toBe(0x3c01); // above the tie
    expect(f32ToF16(65519)).toBe(0x7bff);
    expect(f32ToF16(65520)).toBe(0x7c00); // rounds past the largest finite
    expect(f32ToF16(2 ** -25)).toBe(0x0000); // tie between 0 and the smallest subnormal
    expect(f32ToF16(3 * 2 ** -26)).toBe(0x0001);
    expect(f32ToF16(2 ** -26)).toBe(0x0000);
    expect(f32ToF16(-(2 ** -24) * 1.5)).toBe(0x8002); // tie -> even subnormal 2
    expect(f32ToF16(2 ** -14 - 2 ** -25)).toBe(0x0400); // largest subnormal + half ulp rounds up into the normals
  });

  test('every finite half survives f16 -> f32 -> f16', () => {
    for (let h = 0; h < 0x10000; h++) {
      if ((h & 0x7c00) === 0x7c00 && h & 0x3ff) continue; // NaN payloads
      if (f32ToF16(f16ToF32(h)) !== h) throw new Error(`0x${h.toString(16)} does not round-trip`);
    }
  });
});

describe('bfloat16', () => {
  test('values and rounding', () => {
    expect(f32ToBf16(1)).toBe(0x3f80);
    expect(bf16ToF32(0x3f80)).toBe(1);
    expect(bf16ToF32(0xc040)).toBe(-3);
    expect(f32ToBf16(1 + 2 ** -8)).toBe(0x3f80); // tie -> even
    expect(f32ToBf16(1 + 3 * 2 ** -8)).toBe(0x3f82);
    expect(Number.isNaN(bf16ToF32(f32ToBf16(NaN)))).toBe(true);
  });
});

describe('bulk conversion', () => {
  test('decodeFloats at every alignment equals the scalar conversions', () => {
    const values = new Float32Array([1.5, -2.25, 65504, 1e-7, 3.14159]);
    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      const enc = encodeFloats(values, dtype);
      for (const shift of [0, 1, 2, 3]) {
        const buf = new Uint8Array(enc.length + shift);
        buf.set(enc, shift);
        const out = decodeFloats(buf.subarray(shift), dtype, values.length, new Float32Array(values.length));
        const want = Array.from(values, (v) => (dtype === 'f32' ? Math.fround(v) : dtype === 'f16' ? f16ToF32(f32ToF16(v)) : bf16ToF32(f32ToBf16(v))));
        expect([dtype, shift, Array.from(out)]).toEqual([dtype, shift, want]);
      }
    }
  });

  test('roundHalfEven', () => {
    expect([0.5, 1.5, 2.5, -0.5, -1.5, -2.5, 2.4999, -3.5000001, 126.5, 3e9 + 0.5].map(roundHalfEven)).toEqual([0, 2, 2, 0, -2, -2, 2, -4, 126, 3e9]);
  });
});

describe('tensor-data', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(() => {
    tmp = tempDir('weightmap-tensordata-');
  });
  afterAll(() => tmp.cleanup());

  test('chunks, transposed chunks and q8_0 ranges across groups', () => {
    const rows = 7;
    const cols = 12;
    const m = new Float32Array(rows * cols).map((_, i) => i * 0.25 - 10);
    const q = new Int8Array(rows * cols).map((_, i) => (i * 37) % 255 - 127);
    const scales = new Float32Array((rows * cols) / 4).map((_, g) => 0.5 + g);
    const w = blobWeights(tmp.dir, path.basename('blob.bin'), 'safetensors', { architecture: 'unknown' }, [
      { name: 'm', dtype: 'f32', shape: [rows, cols], bytes: f32Bytes(m) },
      { name: 'h', dtype: 'f16', shape: [rows, cols], bytes: encodeFloats(m, 'f16') },
      { name: 'q', dtype: 'q8_0', shape: [rows, cols], bytes: new Uint8Array(q.buffer), scales: { bytes: f32Bytes(scales), groupSize: 4 } },
    ], { misalign: true });
    const [vm, vh, vq] = w.tensors;
    // Chunks share a buffer (valid until the next one), so copy each as it comes.
    const cat = (chunks: Iterable<Float32Array>) => {
      const all: number[] = [];
      for (const c of chunks) all.push(...c);
      return all;
    };
    expect(cat(f32Chunks(vm, 5))).toEqual(Array.from(m));
    expect(cat(transposedF32Chunks(vm, 10))).toEqual(Array.from(transpose(m, rows, cols)));
    expect(cat(transposedF32Chunks(vh, 3))).toEqual(Array.from(transpose(m, rows, cols)));
    const deq = Array.from(q, (v, i) => Math.fround(v * scales[Math.floor(i / 4)]));
    expect(Array.from(readF32(vq, 3, 10))).toEqual(deq.slice(3, 13));
    expect(cat(transposedF32Chunks(vq, 8))).toEqual(Array.from(transpose(new Float32Array(deq), rows, cols)));
    closeWeights(w);
  });
});
