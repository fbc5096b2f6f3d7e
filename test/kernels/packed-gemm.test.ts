/**
 * sgemm_packed (f32 weights packed into panels once, bias fused) of every table against a double
 * reference. Budget: |y - y_exact| <= (k + 3) · 2^-24 · (Σ_p |x_ip · w_jp| + |bias_j|), any
 * summation order of the k products and the bias. Exact contract checks: a row's result is the
 * same bits alone (m = 1) as inside a batch, and on 1 or 2 threads.
 */
import { ISAS, U, kernels, rng, uniform } from './reference';

interface Case {
  m: number;
  n: number;
  k: number;
  x: Float32Array;
  w: Float32Array;
  bias: Float32Array | null;
}

function makeCase(seed: number, m: number, n: number, k: number, withBias: boolean): Case {
  const rand = rng(seed);
  return { m, n, k, x: uniform(m * k, rand), w: uniform(n * k, rand), bias: withBias ? uniform(n, rand, -4, 4) : null };
}

function run(isa: string, c: Case, threads = 1, x = c.x, m = c.m): Float32Array {
  const y = new Float32Array(m * c.n).fill(NaN); // every entry must be written
  kernels.sgemmPacked(isa, x, c.w, c.bias, y, m, c.n, c.k, threads);
  return y;
}

// m, n, k: single rows and odd batches, partial panels and vectors, several depth blocks of 128
const SHAPES: Array<[number, number, number]> = [
  [1, 1, 1],
  [1, 17, 33],
  [2, 16, 128],
  [5, 33, 129],
  [7, 100, 300],
  [13, 384, 384],
  [18, 64, 1536],
];

describe.each(ISAS)('sgemm_packed %s', (isa) => {
  test.each(SHAPES)('m=%i n=%i k=%i within the summation budget, with and without bias', (m, n, k) => {
    for (const withBias of [true, false]) {
      const c = makeCase(m * 131 + n * 7 + k, m, n, k, withBias);
      const y = run(isa, c);
      let worst = 0; // the largest error as a multiple of its budget
      for (let i = 0; i < m; i++)
        for (let j = 0; j < n; j++) {
          let exact = c.bias ? c.bias[j] : 0;
          let mag = c.bias ? Math.abs(c.bias[j]) : 0;
          for (let p = 0; p < k; p++) {
            const t = c.x[i * k + p] * c.w[j * k + p];
            exact += t;
            mag += Math.abs(t);
          }
          worst = Math.max(worst, Math.abs(y[i * n + j] - exact) / ((k + 3) * U * mag || Number.MIN_VALUE));
        }
      expect(worst).toBeLessThanOrEqual(1);
    }
  });

  test('a row gives the same bits alone, in a batch and on two threads', () => {
    const c = makeCase(99, 13, 200, 333, true);
    const batch = run(isa, c);
    expect(run(isa, c, 2)).toEqual(batch);
    for (const i of [0, 6, 12]) {
      const alone = run(isa, c, 1, c.x.subarray(i * c.k, (i + 1) * c.k), 1);
      expect(alone).toEqual(batch.subarray(i * c.n, (i + 1) * c.n));
    }
  });
});
