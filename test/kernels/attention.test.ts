/**
 * attention (one head, every query sees every key) of every table against a float64 reference.
 * Budget: |out - exact| <= 4e-6 for q, k, v in [-2, 2] (scores up to 4·hd·scale; the f32 dot
 * products, the polynomial exp and the f32 value sums each stay within a few 2^-24 relative).
 */
import { ISAS, kernels, rng, uniform } from './reference';

/** float64 softmax(scale·q·kᵀ)·v over columns [0, hd) of [T, ld] rows. */
function reference(q: Float32Array, k: Float32Array, v: Float32Array, T: number, hd: number, ld: number, scale: number) {
  const out = new Float64Array(T * hd);
  const s = new Float64Array(T);
  for (let t = 0; t < T; t++) {
    let mx = -Infinity;
    for (let j = 0; j < T; j++) {
      let dot = 0;
      for (let d = 0; d < hd; d++) dot += q[t * ld + d] * k[j * ld + d];
      s[j] = dot * scale;
      mx = Math.max(mx, s[j]);
    }
    let sum = 0;
    for (let j = 0; j < T; j++) sum += (s[j] = Math.exp(s[j] - mx));
    for (let j = 0; j < T; j++)
      for (let d = 0; d < hd; d++) out[t * hd + d] += (s[j] / sum) * v[j * ld + d];
  }
  return out;
}

// T positions, head dim hd, row stride ld (partial score tiles, partial dim vectors, strided heads)
const SHAPES: Array<[number, number, number]> = [
  [1, 1, 1],
  [2, 7, 9],
  [5, 16, 16],
  [17, 32, 35],
  [33, 40, 48],
  [130, 32, 384],
];

describe.each(ISAS)('attention %s', (isa) => {
  test.each(SHAPES)('T=%i hd=%i ld=%i: within 4e-6 of float64, other columns untouched', (T, hd, ld) => {
    const rand = rng(T * 100 + hd);
    const [q, k, v] = [0, 1, 2].map(() => uniform(T * ld, rand, -2, 2));
    const out = new Float32Array(T * ld).fill(123);
    const scale = 1 / Math.sqrt(hd);
    kernels.attention(isa, q, k, v, out, T, hd, ld, scale);
    const want = reference(q, k, v, T, hd, ld, scale);
    let worst = 0;
    for (let t = 0; t < T; t++)
      for (let d = 0; d < ld; d++) {
        if (d < hd) worst = Math.max(worst, Math.abs(out[t * ld + d] - want[t * hd + d]));
        else expect(out[t * ld + d]).toBe(123);
      }
    expect(worst).toBeLessThanOrEqual(4e-6);
  });

  test('one key: out = v; equal keys: out = the mean of the values', () => {
    const v = Float32Array.from([0.5, -3, 8]);
    const out = new Float32Array(3);
    kernels.attention(isa, Float32Array.from([1, 2, 3]), Float32Array.from([4, 5, 6]), v, out, 1, 3, 3, 0.5);
    expect(Array.from(out)).toEqual(Array.from(v));
    const T = 5;
    const keys = new Float32Array(T * 2).fill(0.25);
    const values = Float32Array.from({ length: T * 2 }, (_, i) => i);
    const o = new Float32Array(T * 2);
    kernels.attention(isa, uniform(T * 2, rng(3)), keys, values, o, T, 2, 2, 1);
    for (let t = 0; t < T; t++) {
      expect(Math.abs(o[t * 2] - 4)).toBeLessThan(4e-6);
      expect(Math.abs(o[t * 2 + 1] - 5)).toBeLessThan(4e-6);
    }
  });
});
