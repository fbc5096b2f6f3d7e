/**
 * The one polynomial exp (native/kernels/exp_f32.h) against Math.exp in double: directly through
 * exp_sum (the row kernels' build for this CPU), and through every table's attention, whose
 * softmax is that exp. Budget: 2·2^-24 relative (1.72·2^-24 is its worst case over every float
 * of [-86.6, 88.7], with or without fma contraction).
 */
import { ISAS, U, kernels, rng, uniform } from './reference';

const f = Math.fround;
const EXP_BUDGET = 2 * U;
const ODD_SIZES = [1, 3, 7, 15, 17, 31, 33, 63, 127, 1023];

/** Largest |got - e^x| / e^x over x (got[i] against Math.exp(x[i])). */
function worstRelative(x: ArrayLike<number>, got: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < x.length; i++) {
    const want = Math.exp(x[i]);
    worst = Math.max(worst, Math.abs(got[i] - want) / want);
  }
  return worst;
}

describe('exp_sum', () => {
  test.each(ODD_SIZES)('n=%i: e^x within 2·2^-24 relative, and the sum of the results', (n) => {
    const x = uniform(n, rng(n + 7), -86.6, 88.7);
    const y = Float32Array.from(x);
    const sum = kernels.expSum(y, 1, 0);
    expect(worstRelative(x, y)).toBeLessThanOrEqual(EXP_BUDGET);
    // Σ in double of n floats in another order: within n·2^-53 relative of this one
    const mine = y.reduce((a, v) => a + v, 0);
    expect(Math.abs(sum - mine)).toBeLessThanOrEqual(n * 2 ** -53 * mine);
  });

  test('a dense grid of [-86.6, 88.7] (1,000,001 values): within 2·2^-24 relative', () => {
    const n = 1000001;
    const x = Float32Array.from({ length: n }, (_, i) => -86.6 + (175.3 * i) / (n - 1));
    const y = Float32Array.from(x);
    kernels.expSum(y, 1, 0);
    expect(worstRelative(x, y)).toBeLessThanOrEqual(EXP_BUDGET);
  });

  test('scale and shift: e^(x·scale - shift), the argument rounded once to f32', () => {
    const x = uniform(101, rng(3), -400, 400);
    const y = Float32Array.from(x);
    kernels.expSum(y, 0.125, 3); // x·0.125 is exact, so an fma gives the same argument
    expect(worstRelative(Array.from(x, (v) => f(v * 0.125 - 3)), y)).toBeLessThanOrEqual(EXP_BUDGET);
  });

  test('outside the range: below -86.6 and -inf give 0, above 88.7229 and +inf give +inf, NaN stays NaN', () => {
    const y = Float32Array.from([-Infinity, -1e30, -100, -86.7, 88.723, 100, Infinity, NaN, 0, -0]);
    kernels.expSum(y, 1, 0);
    expect(Array.from(y)).toEqual([0, 0, 0, 0, Infinity, Infinity, Infinity, NaN, 1, 1]);
  });
});

describe.each(ISAS)('attention %s: its softmax is the same exp', (isa) => {
  // q[t] = (1, 0, ...), k[j] = (x_j, 0, ...), v = the identity: out[t, j] = e^(x_j - max) / Σ, so
  // out[t, j] / out[t, 0] = e^(x_j) when x_0 = 0 = max (one more rounding: 2.5·2^-24 in all).
  test.each(ODD_SIZES.filter((n) => n <= 127))('T=%i: within 2.5·2^-24 relative', (T) => {
    const x = uniform(T, rng(T + 11), -80, 0);
    x[0] = 0;
    const q = new Float32Array(T * T);
    const k = new Float32Array(T * T);
    const v = new Float32Array(T * T);
    for (let j = 0; j < T; j++) {
      q[j * T] = 1;
      k[j * T] = x[j];
      v[j * T + j] = 1;
    }
    const out = new Float32Array(T * T);
    kernels.attention(isa, q, k, v, out, T, T, T, 1);
    for (let t = 0; t < T; t++) {
      const row = out.subarray(t * T, t * T + T);
      expect(worstRelative(x, Array.from(row, (p) => p / row[0]))).toBeLessThanOrEqual(2.5 * U);
    }
  });
});
