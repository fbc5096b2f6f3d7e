/**
 * quantize_i8 and gemm_i8 (per-row int8 activations × per-channel int8 weights) of every table.
 * quantize_i8: exact, against the definition computed here (f32 operations via Math.fround).
 * gemm_i8 budgets:
 *  - scalar against the definition computed here: the int32 sum exactly (doubles hold it), then
 *    fma(f32(acc), f32(xs·ws), bias) rounded once: within one f32 ulp (the only slack is the
 *    double rounding of this reference's own fma emulation).
 *  - every SIMD table and thread count: bit-identical to scalar (the int32 is exact and the two
 *    roundings are fixed by the contract).
 */
import { ISAS, kernels, rng, thrown, uniform } from './reference';

const f = Math.fround;

function ulp(x: number): number {
  const a = Math.abs(f(x));
  if (a < 2 ** -126) return 2 ** -149;
  return 2 ** (Math.floor(Math.log2(a)) - 23);
}

function ints(n: number, rand: () => number, lo: number, hi: number): Int8Array {
  const a = new Int8Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + Math.floor(rand() * (hi - lo + 1));
  return a;
}

interface Case {
  m: number;
  n: number;
  k: number;
  wq: Int8Array;
  ws: Float32Array;
  xq: Int8Array;
  xs: Float32Array;
  bias: Float32Array | null;
}

function makeCase(seed: number, m: number, n: number, k: number, withBias: boolean): Case {
  const rand = rng(seed);
  return {
    m, n, k,
    wq: ints(n * k, rand, -128, 127),
    ws: uniform(n, rand, 0.0001, 0.05),
    xq: ints(m * k, rand, -127, 127),
    xs: uniform(m, rand, 0.0001, 0.05),
    bias: withBias ? uniform(n, rand, -2, 2) : null,
  };
}

function run(isa: string, c: Case, threads = 1): Float32Array {
  const y = new Float32Array(c.m * c.n);
  kernels.gemmI8(isa, c.wq, c.ws, c.xq, c.xs, c.bias, y, c.m, c.n, c.k, threads);
  return y;
}

function reference(c: Case): Float64Array {
  const y = new Float64Array(c.m * c.n);
  for (let i = 0; i < c.m; i++)
    for (let j = 0; j < c.n; j++) {
      let acc = 0;
      for (let d = 0; d < c.k; d++) acc += c.xq[i * c.k + d] * c.wq[j * c.k + d];
      y[i * c.n + j] = f(acc) * f(c.xs[i] * c.ws[j]) + (c.bias ? c.bias[j] : 0);
    }
  return y;
}

// m activation rows, n channels (odd, partial panels), k depth (odd, not multiples of 4)
const SHAPES: Array<[number, number, number]> = [
  [1, 1, 1],
  [1, 16, 4],
  [2, 17, 5],
  [7, 33, 130],
  [6, 64, 64],
  [13, 100, 383],
  [25, 49, 96],
  [18, 384, 384],
  [5, 200, 1536],
];

/** s = f32(amax / 127); q = round half away from zero of f32(x · f32(127 / amax)), clamped. */
function quantizeReference(x: Float32Array, m: number, k: number): { q: Int8Array; s: Float32Array } {
  const q = new Int8Array(m * k);
  const s = new Float32Array(m);
  for (let i = 0; i < m; i++) {
    let amax = 0;
    for (let c = 0; c < k; c++) if (!Number.isNaN(x[i * k + c])) amax = Math.max(amax, Math.abs(x[i * k + c]));
    s[i] = f(amax / 127);
    if (amax === 0) continue;
    const inv = f(127 / amax);
    for (let c = 0; c < k; c++) {
      const v = f(x[i * k + c] * inv);
      if (Number.isNaN(v)) continue;
      const r = Math.sign(v) * Math.floor(Math.abs(v) + 0.5);
      q[i * k + c] = Math.max(-127, Math.min(127, r));
    }
  }
  return { q, s };
}

describe.each(ISAS)('quantize_i8 %s', (isa) => {
  test.each([
    [1, 1],
    [3, 15],
    [4, 16],
    [5, 384],
    [2, 1537],
  ])('m=%i k=%i: the definition exactly, padding zero', (m, k) => {
    const rand = rng(m * 31 + k);
    const x = uniform(m * k, rand, -3, 3);
    x[0] = 0.5; // ties and specials in the first row
    if (k > 4) x.set([f(2.5 / 127) * 0, NaN, -Infinity, 1e-40], 1);
    if (m > 2) x.fill(0, 2 * k, 3 * k); // an all-zero row
    const ldq = k + 5;
    const q = new Int8Array(m * ldq).fill(99);
    const s = new Float32Array(m);
    kernels.quantizeI8(isa, x, m, k, ldq, q, s);
    const want = quantizeReference(x, m, k);
    expect(Array.from(s)).toEqual(Array.from(want.s));
    for (let i = 0; i < m; i++) {
      expect(Array.from(q.subarray(i * ldq, i * ldq + k))).toEqual(Array.from(want.q.subarray(i * k, (i + 1) * k)));
      expect(Array.from(q.subarray(i * ldq + k, (i + 1) * ldq))).toEqual([0, 0, 0, 0, 0]);
    }
  });

  test('round half away from zero at exact ties (amax 127: the scale is 1)', () => {
    const x = Float32Array.from([127, 2.5, -2.5, 0.5, -0.5, 126.5, -1.5, 0.49999997]);
    const q = new Int8Array(8);
    const s = new Float32Array(1);
    kernels.quantizeI8(isa, x, 1, 8, 8, q, s);
    expect(s[0]).toBe(1);
    expect(Array.from(q)).toEqual([127, 3, -3, 1, -1, 127, -2, 0]);
  });
});

describe('gemm_i8 scalar reference', () => {
  test.each(SHAPES)('m=%i n=%i k=%i within one ulp of the definition', (m, n, k) => {
    for (const withBias of [true, false]) {
      const c = makeCase(m * 1000 + n + k, m, n, k, withBias);
      const y = run('scalar', c);
      const want = reference(c);
      for (let i = 0; i < y.length; i++) expect(Math.abs(y[i] - want[i])).toBeLessThanOrEqual(ulp(want[i]));
    }
  });

  test('the extreme int32 sums stay exact (k = 4099, every product -128·127)', () => {
    const m = 3, n = 18, k = 4099;
    const c: Case = {
      m, n, k,
      wq: new Int8Array(n * k).fill(-128),
      ws: new Float32Array(n).fill(1),
      xq: new Int8Array(m * k).fill(127),
      xs: new Float32Array(m).fill(1),
      bias: null,
    };
    for (const isa of ISAS) expect(Array.from(new Set(run(isa, c)))).toEqual([f(-128 * 127 * k)]);
  });
});

describe.each(ISAS.filter((isa) => isa !== 'scalar'))('gemm_i8 %s', (isa) => {
  test.each(SHAPES)('m=%i n=%i k=%i bit-identical to scalar on 1 and 2 threads', (m, n, k) => {
    for (const withBias of [true, false]) {
      const c = makeCase(m * 7 + n * 3 + k, m, n, k, withBias);
      const want = run('scalar', c);
      expect(run(isa, c)).toEqual(want);
      expect(run(isa, c, 2)).toEqual(want);
    }
  });
});

test('gemmI8 rejects activations of -128 and wrong lengths', () => {
  const c = makeCase(1, 2, 3, 4, true);
  c.xq[5] = -128;
  expect(thrown(() => run('scalar', c))).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/-127, 127/) });
  const short = () => kernels.gemmI8('scalar', c.wq, c.ws, c.xq.subarray(1), c.xs, null, new Float32Array(6), 2, 3, 4);
  expect(thrown(short)).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/xq has 7 elements/) });
});
