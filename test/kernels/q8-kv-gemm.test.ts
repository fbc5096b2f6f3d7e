/**
 * q8Gemm / q8GemmTrans (attention against a q8_0 KV cache) of every table: B's int8 values with
 * one f32 scale per `group` values of a row, each read as float(q) · s (one f32 rounding, what
 * widen_q8 writes). Two independent expectations:
 *  - the exact product of A and that widened B, within (k + 2) · 2^-24 · Σ|a · b| (gemm.test.ts's
 *    budget, any summation order);
 *  - the table's own f32 gemm on B widened here in JS, bit for bit, wherever the two must take the
 *    same arithmetic: q8GemmTrans always (a column of C is one key's dot, however the keys are
 *    split); q8Gemm where B is a single widened piece (k <= 128) and, on the AVX-512 tables that
 *    widen in registers, at a decode step's shapes (m <= 2 rows, n <= 128) for any k.
 */
import { ISAS, U, exactProduct, kernels, rng, thrown, uniform, worstRatio } from './reference';

interface Q8Case {
  a: Float32Array;
  bq: Int8Array;
  bs: Float32Array;
  wide: Float32Array; // B widened: fround(q · s)
  group: number;
  m: number;
  k: number;
  n: number;
}

/** B [rows, len] in q8_0 rows with a scale per `group` values; A [m, k]. */
function makeCase(rand: () => number, m: number, k: number, n: number, group: number, trans: boolean): Q8Case {
  const len = trans ? k : n; // values per row of B
  const count = k * n;
  const bq = new Int8Array(count);
  for (let i = 0; i < count; i++) bq[i] = Math.floor(rand() * 255) - 127;
  const bs = new Float32Array(count / group);
  for (let g = 0; g < bs.length; g++) bs[g] = Math.fround((0.25 + rand()) / 127);
  const wide = new Float32Array(count);
  for (let i = 0; i < count; i++) wide[i] = Math.fround(bq[i] * bs[Math.floor(i / group)]);
  expect(len % group).toBe(0);
  return { a: uniform(m * k, rand, -1, 1), bq, bs, wide, group, m, k, n };
}

function run(trans: boolean, isa: string, c: Q8Case): Float32Array {
  const out = new Float32Array(c.m * c.n).fill(NaN); // every entry must be written
  kernels[trans ? 'q8GemmTrans' : 'q8Gemm'](isa, c.a, c.bq, c.bs, c.group, out, c.m, c.k, c.n);
  return out;
}

function runF32(trans: boolean, isa: string, c: Q8Case): Float32Array {
  const out = new Float32Array(c.m * c.n);
  kernels[trans ? 'sgemmTrans' : 'sgemm'](isa, c.a, c.wide, out, c.m, c.k, c.n);
  return out;
}

function withinBudget(trans: boolean, isa: string, c: Q8Case): number {
  const { y, mag } = exactProduct(c.a, c.wide, c.m, c.k, c.n, trans);
  return worstRatio(run(trans, isa, c), y, mag.map((v) => (c.k + 2) * U * v));
}

// [m, k, n, group]. Trans: k = head_dim (the keys' rows), n = positions; 64 and 128 with group 32
// are the AVX-512 tables' in-register shapes (m <= 4), the others go through widened pieces.
const TRANS_SHAPES: Array<[number, number, number, number]> = [
  [1, 128, 515, 32],
  [2, 128, 301, 32],
  [2, 64, 530, 32],
  [3, 128, 77, 32],
  [4, 64, 17, 32],
  [4, 128, 1, 32],
  [5, 128, 260, 32], // more query rows than the in-register kernels take
  [2, 96, 131, 32], // a head_dim they do not take
  [1, 80, 33, 80], // a scale per row (head_dim not a multiple of 32)
  [2, 128, 0, 32],
];
// Not trans: k = positions, n = head_dim (the values' rows).
const SHAPES: Array<[number, number, number, number]> = [
  [1, 515, 128, 32],
  [2, 301, 128, 32],
  [2, 530, 64, 32],
  [3, 77, 128, 32],
  [4, 260, 64, 32],
  [4, 1, 128, 32],
  [2, 129, 96, 32],
  [5, 200, 128, 32],
  [1, 33, 80, 80],
  [2, 0, 128, 32], // no positions: C is zero
];

const rand = rng(77);
const transCases = TRANS_SHAPES.map(([m, k, n, g]) => makeCase(rand, m, k, n, g, true));
const cases = SHAPES.map(([m, k, n, g]) => makeCase(rand, m, k, n, g, false));

describe.each(ISAS)('q8_0 KV gemms (%s)', (isa) => {
  test.each([true, false])('trans = %s is within (k + 2)·2^-24·Σ|a·b| of the exact product of the widened B', (trans) => {
    for (const c of trans ? transCases : cases) {
      const ratio = withinBudget(trans, isa, c);
      if (!(ratio <= 1)) throw new Error(`m=${c.m} k=${c.k} n=${c.n} group=${c.group}: error ${ratio} × budget`);
    }
  });

  test('q8GemmTrans equals sgemmTrans of the widened B bit for bit', () => {
    for (const c of transCases) expect(Array.from(run(true, isa, c))).toEqual(Array.from(runF32(true, isa, c)));
  });

  test('q8Gemm equals sgemm of the widened B bit for bit where they share the arithmetic', () => {
    const inRegisters = isa.startsWith('avx512');
    const same = cases.filter((c) => c.k <= 128 || (inRegisters && c.m <= 2 && c.n <= 128));
    expect(same.length).toBeGreaterThanOrEqual(4);
    for (const c of same) expect(Array.from(run(false, isa, c))).toEqual(Array.from(runF32(false, isa, c)));
  });
});

test('q8Gemm checks its arguments against the shapes', () => {
  const a = new Float32Array(2 * 64);
  const bq = new Int8Array(64 * 64);
  const bs = new Float32Array(64 * 2);
  expect(() => kernels.q8Gemm('scalar', a, bq, bs, 32, new Float32Array(2 * 64), 2, 64, 64)).not.toThrow();
  expect(thrown(() => kernels.q8Gemm('scalar', a, bq, bs, 32, new Float32Array(2 * 63), 2, 64, 64)).name).toBe('RangeError');
  expect(thrown(() => kernels.q8Gemm('scalar', a, bq, new Float32Array(64), 32, new Float32Array(2 * 64), 2, 64, 64)).name).toBe('RangeError');
  expect(thrown(() => kernels.q8GemmTrans('scalar', a, bq, bs, 48, new Float32Array(2 * 64), 2, 64, 64)).name).toBe('RangeError');
  expect(thrown(() => kernels.q8Gemm('scalar', a, new Uint8Array(64 * 64) as unknown as Int8Array, bs, 32, new Float32Array(2 * 64), 2, 64, 64)).name).toBe('TypeError');
});
