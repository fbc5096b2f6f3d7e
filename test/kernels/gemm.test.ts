/**
 * f16/f32 gemms, dot and axpy of every table against double-precision references.
 * Budget: |c - c_exact| <= (k + 2) · 2^-24 · Σ_p |a_ip · b_pj| — any summation order (lanes,
 * tiles, k-blocks, fused or separate multiply-add) of k products stays within this bound, and
 * the f16 weights are widened exactly. Threaded results must equal one thread bit for bit.
 */
import { ISAS, U, exactProduct, kernels, randomF16, rng, thrown, uniform, worstRatio } from './reference';

type GemmName = 'hgemm' | 'hgemmTrans' | 'sgemm' | 'sgemmTrans';

interface GemmCase {
  a: Float32Array;
  bh: Uint16Array; // f16 bits
  bf: Float32Array; // the same values as f32 (exact)
  bv: Float64Array;
  m: number;
  k: number;
  n: number;
}

function makeCase(rand: () => number, m: number, k: number, n: number): GemmCase {
  const { bits, values } = randomF16(k * n, rand, 2);
  return { a: uniform(m * k, rand, -1, 1), bh: bits, bf: Float32Array.from(values), bv: values, m, k, n };
}

function run(name: GemmName, isa: string, c: GemmCase, threads = 1): Float32Array {
  const out = new Float32Array(c.m * c.n).fill(NaN); // every entry must be written
  if (name === 'hgemm' || name === 'hgemmTrans') kernels[name](isa, c.a, c.bh, out, c.m, c.k, c.n, threads);
  else kernels[name](isa, c.a, c.bf, out, c.m, c.k, c.n, threads);
  return out;
}

// m, k, n: odd sizes, k and n off the 8/16-lane widths, the decode shape (m = 1), k = 0.
const SHAPES: Array<[number, number, number]> = [
  [1, 1, 1],
  [1, 33, 17],
  [1, 1023, 127],
  [1, 127, 33],
  [3, 31, 33],
  [7, 127, 65],
  [13, 100, 129],
  [6, 33, 32],
  [7, 1023, 7],
  [31, 7, 31],
  [33, 3, 1],
  [2, 257, 3],
  [4, 0, 5],
  [4, 37, 50], // hgemm/sgemm with 2-4 rows: B streamed once for every row (DecodeRows)
  [2, 130, 161],
  [2, 128, 515], // a decode step's attention (2 query heads per KV head): AVX-512 TransRows (16 keys at a time, a partial last 16) and OuterRows
  [4, 515, 64], // OuterRows with 4 rows and a long k (positions)
  [13, 600, 77], // several row tiles over three k-blocks of hgemm, the last strip partial
  [513, 300, 35], // hgemm_trans through the packed panels (m >= 512), two k-blocks
];

const NAMES: GemmName[] = ['hgemm', 'hgemmTrans', 'sgemm', 'sgemmTrans'];

// Shared by every table.
const rand = rng(21);
const cases = SHAPES.map(([m, k, n]) => makeCase(rand, m, k, n));
const threadedCases = [
  [1, 256, 515],
  [5, 100, 333],
  [16, 64, 200],
  [2, 128, 301],
  [1, 1100, 67], // TransRows' long keys (four chains)
].map(([m, k, n]) => makeCase(rand, m, k, n));

describe.each(ISAS)('gemms (%s)', (isa) => {
  test.each(NAMES)('%s is within (k + 2)·2^-24·Σ|a·b| of the exact product', (name) => {
    const trans = name.endsWith('Trans');
    for (const c of cases) {
      const { y, mag } = exactProduct(c.a, c.bv, c.m, c.k, c.n, trans);
      const budget = mag.map((v) => (c.k + 2) * U * v);
      const got = run(name, isa, c);
      const ratio = worstRatio(got, y, budget);
      if (!(ratio <= 1)) throw new Error(`${name} m=${c.m} k=${c.k} n=${c.n}: error ${ratio} × budget`);
    }
  });

  test.each(NAMES)('%s threaded equals one thread exactly', (name) => {
    for (const c of threadedCases) {
      const one = run(name, isa, c, 1);
      for (const threads of [2, 3]) expect(Array.from(run(name, isa, c, threads))).toEqual(Array.from(one));
    }
  });

  // AVX-512 TransRows for head_dim 64 and 128 at 1-2 rows holds A in registers: the same FMAs in
  // the same order as the general loop, which k + 1 (a zero last column of A and B) takes.
  test.each(['hgemmTrans', 'sgemmTrans'] as const)('%s at k = 64, 128 equals the general loop bit for bit', (name) => {
    for (const [m, k, n] of [[1, 128, 515], [2, 128, 301], [1, 64, 33], [2, 64, 530]]) {
      const c = makeCase(rand, m, k, n);
      const pad = (x: Float32Array | Uint16Array, rows: number) => {
        const out = new (x.constructor as typeof Float32Array | typeof Uint16Array)(rows * (k + 1));
        for (let r = 0; r < rows; r++) out.set(x.subarray(r * k, (r + 1) * k), r * (k + 1));
        return out;
      };
      const wide: GemmCase = { ...c, a: pad(c.a, m) as Float32Array, bh: pad(c.bh, n) as Uint16Array, bf: pad(c.bf, n) as Float32Array, k: k + 1 };
      expect(Array.from(run(name, isa, c))).toEqual(Array.from(run(name, isa, wide)));
      for (const threads of [2, 3]) expect(Array.from(run(name, isa, c, threads))).toEqual(Array.from(run(name, isa, wide)));
    }
  });

  test('dot and axpy', () => {
    for (const n of [0, 1, 3, 7, 31, 33, 127, 1023]) {
      const a = uniform(n, rand);
      const b = uniform(n, rand);
      let exact = 0;
      let mag = 0;
      for (let i = 0; i < n; i++) {
        exact += a[i] * b[i];
        mag += Math.abs(a[i] * b[i]);
      }
      expect(Math.abs(kernels.dotF32(isa, a, b) - exact)).toBeLessThanOrEqual((n + 2) * U * mag);
      const y = uniform(n, rand);
      const y0 = Float64Array.from(y);
      kernels.axpyF32(isa, 0.75, a, y);
      for (let i = 0; i < n; i++) expect(Math.abs(y[i] - (y0[i] + 0.75 * a[i]))).toBeLessThanOrEqual(2 * U * (Math.abs(y0[i]) + Math.abs(0.75 * a[i])));
    }
  });
});

test('gemms validate shapes', () => {
  const a = new Float32Array(6);
  const b = new Uint16Array(12);
  expect(() => kernels.hgemm('scalar', a, b, new Float32Array(8), 2, 3, 4)).not.toThrow();
  expect(thrown(() => kernels.hgemm('scalar', a, b, new Float32Array(7), 2, 3, 4)).name).toBe('RangeError');
  expect(thrown(() => kernels.hgemmTrans('scalar', a, new Uint16Array(11), new Float32Array(8), 2, 3, 4)).name).toBe('RangeError');
  expect(thrown(() => kernels.sgemm('scalar', a, b as unknown as Float32Array, new Float32Array(8), 2, 3, 4)).name).toBe('TypeError');
  expect(thrown(() => kernels.hgemm('scalar', a, b, new Float32Array(8), 2, 3.5, 4)).name).toBe('RangeError');
  expect(thrown(() => kernels.hgemm('scalar', a, b, new Float32Array(8), 2, 3, 4, 0)).name).toBe('RangeError');
});
