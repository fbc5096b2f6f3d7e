/**
 * Q8_0 kernels of every table. Budgets:
 *  - quantizeQ8: exact (q and s bit-equal to the definition computed here in double, which is
 *    exact for one f32 division rounded once).
 *  - int32 group dots: exact. With all scales 1 every partial sum is an integer below 2^24, so
 *    y must equal the integer dot computed here, whatever the summation order.
 *  - f32 sums with real scales: |y - y_exact| <= (groups + 6) · 2^-24 · Σ_g |w_s·x_s| · Σ_{i in g} |w_i·x_i|.
 *    A SIMD kernel may scale a group's int32 in lane-wise pieces (each piece bounded by its
 *    Σ|w·x|) and sums every piece through at most `groups` lane additions, a 16-lane reduction
 *    and two roundings of its own (the scale product and the multiply).
 *  - threaded results are bit-identical to one thread (each output's arithmetic is the same).
 */
import { ISAS, U, kernels, rng, thrown, uniform, worstRatio } from './reference';

const f = Math.fround;

/** q and s by the definition: s = max|x|/127 (f32), q = round half away from zero of f32(x/s). */
function quantizeReference(x: Float32Array, group: number): { q: Int8Array; s: Float32Array } {
  const q = new Int8Array(x.length);
  const s = new Float32Array(x.length / group);
  for (let g = 0; g < s.length; g++) {
    let amax = 0;
    for (let i = 0; i < group; i++) amax = Math.max(amax, Math.abs(x[g * group + i]));
    const scale = f(amax / 127);
    s[g] = scale;
    for (let i = 0; i < group; i++) {
      if (scale === 0) continue;
      const v = f(x[g * group + i] / scale);
      const r = Math.sign(v) * Math.floor(Math.abs(v) + 0.5);
      q[g * group + i] = Math.max(-127, Math.min(127, r));
    }
  }
  return { q, s };
}

interface Q8Case {
  wq: Int8Array;
  ws: Float32Array;
  xq: Int8Array;
  xs: Float32Array;
  m: number;
  rows: number;
  cols: number;
  group: number;
}

function randomInts(n: number, rand: () => number, lo: number, hi: number): Int8Array {
  const a = new Int8Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + Math.floor(rand() * (hi - lo + 1));
  return a;
}

function makeCase(rand: () => number, m: number, rows: number, cols: number, group: number, unitScales: boolean): Q8Case {
  const ng = cols / group;
  const scales = (n: number) => (unitScales ? new Float32Array(n).fill(1) : uniform(n, rand, 0.001, 0.05));
  return {
    wq: randomInts(rows * cols, rand, -128, 127),
    ws: scales(rows * ng),
    xq: randomInts(m * cols, rand, -127, 127),
    xs: scales(m * ng),
    m,
    rows,
    cols,
    group,
  };
}

/** Exact per-output value (double) and Σ_g |w_s·x_s|·Σ|w·x| for the budget. */
function q8Reference(c: Q8Case): { y: Float64Array; mag: Float64Array } {
  const ng = c.cols / c.group;
  const y = new Float64Array(c.m * c.rows);
  const mag = new Float64Array(c.m * c.rows);
  for (let i = 0; i < c.m; i++)
    for (let r = 0; r < c.rows; r++) {
      let sum = 0;
      let abs = 0;
      for (let g = 0; g < ng; g++) {
        let dot = 0;
        let absDot = 0;
        const wo = r * c.cols + g * c.group;
        const xo = i * c.cols + g * c.group;
        for (let e = 0; e < c.group; e++) {
          dot += c.wq[wo + e] * c.xq[xo + e];
          absDot += Math.abs(c.wq[wo + e] * c.xq[xo + e]);
        }
        const scale = c.ws[r * ng + g] * c.xs[i * ng + g];
        sum += scale * dot;
        abs += Math.abs(scale) * absDot;
      }
      y[i * c.rows + r] = sum;
      mag[i * c.rows + r] = abs;
    }
  return { y, mag };
}

function runMatmul(isa: string, c: Q8Case, threads = 1): Float32Array {
  const y = new Float32Array(c.m * c.rows);
  kernels.matmulQ8(isa, c.wq, c.ws, c.xq, c.xs, y, c.m, c.rows, c.cols, c.group, threads);
  return y;
}

function runMatvec(isa: string, c: Q8Case, threads = 1): Float32Array {
  const y = new Float32Array(c.rows);
  const ng = c.cols / c.group;
  kernels.matvecQ8(isa, c.wq, c.ws, c.xq.subarray(0, c.cols), c.xs.subarray(0, ng), y, c.rows, c.cols, c.group, threads);
  return y;
}

// group, columns (multiples of group), rows, activation rows
const SHAPES: Array<[number, number, number, number]> = [
  [32, 32, 1, 1],
  [32, 96, 3, 2],
  [32, 1024, 7, 3],
  [32, 288, 17, 3], // odd multiples of 32: AVX-512 pairs of groups, then one lone group
  [32, 800, 5, 9],
  [64, 64, 31, 5],
  [64, 192, 33, 7],
  [64, 17 * 64, 3, 4],
  [128, 384, 127, 2],
  [96, 288, 7, 3],
  [256, 512, 5, 6],
  [16, 48, 33, 3],
  [8, 40, 7, 2],
  [4, 12, 3, 5],
  [6, 18, 7, 3],
  [1, 7, 3, 2],
];

describe('quantizeQ8 closed forms (scalar)', () => {
  test('round half away from zero with scale 1, all-zero group, negative maximum', () => {
    const x = new Float32Array(64);
    x.set([127, 2.5, -2.5, 0.5, -0.5, 1.5, -1.5, f(0.49999997), 126.5, -126.5, 3.5, -3.5, 4.5, 0.49, -0, 100.25]);
    // second group: all zeros (negative zero too)
    x[40] = -0;
    const q = new Int8Array(64);
    const s = new Float32Array(2);
    kernels.quantizeQ8('scalar', x, 32, q, s);
    expect(s[0]).toBe(1);
    expect(Array.from(q.subarray(0, 16))).toEqual([127, 3, -3, 1, -1, 2, -2, 0, 127, -127, 4, -4, 5, 0, 0, 100]);
    expect(s[1]).toBe(0);
    expect(Array.from(q.subarray(32))).toEqual(new Array(32).fill(0));

    const y = new Float32Array(32);
    y.set([-4, 1, 2, -2]);
    const qy = new Int8Array(32);
    const sy = new Float32Array(1);
    kernels.quantizeQ8('scalar', y, 32, qy, sy);
    expect(sy[0]).toBe(f(4 / 127));
    expect(Array.from(qy.subarray(0, 4))).toEqual([-127, quantizeReference(y, 32).q[1], 64, -64]);
  });
});

describe.each(ISAS)('Q8_0 (%s)', (isa) => {
  test('quantizeQ8 equals the definition bit for bit', () => {
    const rand = rng(1);
    for (const group of [1, 4, 6, 8, 16, 32, 64, 96, 128]) {
      for (const groups of [1, 3, 7]) {
        const x = uniform(group * groups, rand, -3, 3);
        if (groups > 1) x.fill(0, 0, group); // an all-zero group
        const want = quantizeReference(x, group);
        const q = new Int8Array(x.length);
        const s = new Float32Array(groups);
        kernels.quantizeQ8(isa, x, group, q, s);
        expect(Array.from(s)).toEqual(Array.from(want.s));
        expect(Array.from(q)).toEqual(Array.from(want.q));
      }
    }
  });

  test('int32 group dots are exact (unit scales, extremes included)', () => {
    const rand = rng(2);
    for (const [group, cols, rows, m] of SHAPES) {
      const c = makeCase(rand, m, rows, cols, group, true);
      // worst magnitudes: w = -128 and x = ±127 on the first row/activation
      c.wq.fill(-128, 0, cols);
      for (let e = 0; e < cols; e++) c.xq[e] = e % 3 === 0 ? 127 : -127;
      const { y } = q8Reference(c);
      expect(Array.from(runMatmul(isa, c))).toEqual(Array.from(y));
      expect(Array.from(runMatvec(isa, c))).toEqual(Array.from(y.subarray(0, rows)));
    }
    // the largest exact case: one 1024-element group of -128 · -127
    const big: Q8Case = { ...makeCase(rand, 2, 3, 1024, 1024, true) };
    big.wq.fill(-128);
    big.xq.fill(-127);
    expect(Array.from(runMatvec(isa, big))).toEqual([16646144, 16646144, 16646144]);
    expect(Array.from(runMatmul(isa, big))).toEqual(new Array(6).fill(16646144));
  });

  test('f32 sums with real scales stay within (groups + 6)·2^-24·Σ|s|·Σ|w·x|', () => {
    const rand = rng(3);
    for (const [group, cols, rows, m] of SHAPES) {
      const c = makeCase(rand, m, rows, cols, group, false);
      const { y, mag } = q8Reference(c);
      const budget = mag.map((a) => (cols / group + 6) * U * a);
      expect(worstRatio(runMatmul(isa, c), y, budget)).toBeLessThanOrEqual(1);
      expect(worstRatio(runMatvec(isa, c), y.subarray(0, rows), budget.subarray(0, rows))).toBeLessThanOrEqual(1);
    }
  });

  test('threaded results equal one thread exactly', () => {
    const rand = rng(4);
    for (const [m, rows, cols, group] of [
      [1, 515, 512, 64],
      [9, 261, 256, 32],
      [5, 150, 384, 128],
    ]) {
      const c = makeCase(rand, m, rows, cols, group, false);
      const one = runMatmul(isa, c, 1);
      for (const threads of [2, 3]) expect(Array.from(runMatmul(isa, c, threads))).toEqual(Array.from(one));
      const v1 = runMatvec(isa, c, 1);
      expect(Array.from(runMatvec(isa, c, 2))).toEqual(Array.from(v1));
    }
  });
});

test('Q8_0 entry points validate shapes and activations before touching memory', () => {
  const ok = () => ({ wq: new Int8Array(64), ws: new Float32Array(2), xq: new Int8Array(32), xs: new Float32Array(1), y: new Float32Array(2) });
  const a = ok();
  expect(() => kernels.matvecQ8('scalar', a.wq, a.ws, a.xq, a.xs, a.y, 2, 32, 32)).not.toThrow();
  expect(thrown(() => kernels.matvecQ8('scalar', a.wq, a.ws, a.xq, a.xs, new Float32Array(3), 2, 32, 32)).name).toBe('RangeError');
  expect(thrown(() => kernels.matvecQ8('scalar', a.wq, a.ws, a.xq, a.xs, a.y, 2, 32, 24)).message).toMatch(/multiple of group/);
  expect(thrown(() => kernels.matvecQ8('scalar', a.wq, new Float32Array(1), a.xq, a.xs, a.y, 2, 32, 32)).name).toBe('RangeError');
  a.xq[5] = -128;
  expect(thrown(() => kernels.matvecQ8('scalar', a.wq, a.ws, a.xq, a.xs, a.y, 2, 32, 32)).message).toMatch(/\[-127, 127\]/);
  expect(thrown(() => kernels.matmulQ8('scalar', a.wq, a.ws, a.xq, a.xs, a.y, 0, 2, 32, 32)).name).toBe('RangeError');
  expect(thrown(() => kernels.quantizeQ8('scalar', new Float32Array(33), 32, new Int8Array(33), new Float32Array(1))).name).toBe(
    'RangeError',
  );
  expect(thrown(() => kernels.matvecQ8('scalar', a.wq, a.ws, a.xq, a.xs, a.y, 2, 32, 32, 0)).name).toBe('RangeError');
});
