/**
 * ggml block kernels (native/kernels/ggml_blocks.h, KernelTable.ggml). Budgets:
 *  - dequantizeBlocks of the 32-value types: bit-exact against the layouts written out below
 *    (every K-quant and the rest are checked bit for bit against llama.cpp's own files in
 *    test/formats/gguf-quants.test.ts).
 *  - quantizeAct: q and d bit-equal to quantizeQ8 with group 32, sums exact.
 *  - scalar ggmlMatmul vs dequantize-then-f64 with the same quantized activations (only f32
 *    rounding differs): |y - ref| <= (n/16 + 16)·2^-23·Σ_k |x̂_k|·B, B = the block's bound on
 *    |S|·(|q| + 128) + |M| (from its f16 fields and the type's largest scale, min and level; the
 *    128 covers levels shifted to unsigned, as kernels.h allows).
 *  - vs the unquantized activations (what 8-bit activations cost): additionally
 *    Σ_k |w_k|·d_x(k)/2 (each x̂ is within half a step of x).
 *  - every table vs the scalar one: the contract's (n/16 + 16)·2^-23·Σ|x̂|·B; threads bit-equal.
 */
import { ISAS, U, f32ToF16Bits, kernels, rng, thrown, uniform, worstRatio } from './reference';

interface TypeCase {
  values: number;
  bytes: number;
  /** Byte offsets of the f16 scale d and (types with minimums) of the f16 min. */
  d: number;
  /** d is one e8m0 byte (MXFP4: 2^(e - 128)), not an f16. */
  e8m0?: boolean;
  m?: number;
  /** Largest |sub-block scale| / |d|, |sub-block min| / |m|, |level|. */
  maxScale: number;
  maxMin: number;
  maxLevel: number;
}

const TYPES: Record<string, TypeCase> = {
  q4_0: { values: 32, bytes: 18, d: 0, maxScale: 1, maxMin: 0, maxLevel: 8 },
  q4_1: { values: 32, bytes: 20, d: 0, m: 2, maxScale: 1, maxMin: 1, maxLevel: 15 },
  q5_0: { values: 32, bytes: 22, d: 0, maxScale: 1, maxMin: 0, maxLevel: 16 },
  q5_1: { values: 32, bytes: 24, d: 0, m: 2, maxScale: 1, maxMin: 1, maxLevel: 31 },
  q8_0: { values: 32, bytes: 34, d: 0, maxScale: 1, maxMin: 0, maxLevel: 128 },
  iq4_nl: { values: 32, bytes: 18, d: 0, maxScale: 1, maxMin: 0, maxLevel: 127 },
  q2_k: { values: 256, bytes: 84, d: 80, m: 82, maxScale: 15, maxMin: 15, maxLevel: 3 },
  q3_k: { values: 256, bytes: 110, d: 108, maxScale: 32, maxMin: 0, maxLevel: 4 },
  q4_k: { values: 256, bytes: 144, d: 0, m: 2, maxScale: 63, maxMin: 63, maxLevel: 15 },
  q5_k: { values: 256, bytes: 176, d: 0, m: 2, maxScale: 63, maxMin: 63, maxLevel: 31 },
  q6_k: { values: 256, bytes: 210, d: 208, maxScale: 128, maxMin: 0, maxLevel: 32 },
  iq4_xs: { values: 256, bytes: 136, d: 0, maxScale: 32, maxMin: 0, maxLevel: 127 },
  mxfp4: { values: 32, bytes: 17, d: 0, e8m0: true, maxScale: 1, maxMin: 0, maxLevel: 12 },
};
const TYPE_NAMES = Object.keys(TYPES);

/** Random blocks: random bytes, then f16 scales of moderate size (d of either sign, min > 0; e8m0: 2^-10 .. 2^-3). */
function randomBlocks(t: TypeCase, blocks: number, rand: () => number): Uint8Array {
  const out = new Uint8Array(blocks * t.bytes);
  for (let i = 0; i < out.length; i++) out[i] = Math.floor(rand() * 256);
  const dv = new DataView(out.buffer);
  for (let b = 0; b < blocks; b++) {
    if (t.e8m0) {
      out[b * t.bytes + t.d] = 118 + Math.floor(rand() * 8);
      continue;
    }
    const d = (rand() < 0.5 ? -1 : 1) * (0.002 + 0.02 * rand());
    dv.setUint16(b * t.bytes + t.d, f32ToF16Bits(Math.fround(d)), true);
    if (t.m !== undefined) dv.setUint16(b * t.bytes + t.m, f32ToF16Bits(Math.fround(0.001 + 0.01 * rand())), true);
  }
  return out;
}

function f16At(bytes: Uint8Array, offset: number): number {
  const h = bytes[offset] | (bytes[offset + 1] << 8);
  const s = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  return e === 0 ? s * m * 2 ** -24 : s * (1 + m / 1024) * 2 ** (e - 15);
}

/** ggml's GGML_E8M0_TO_FP32_HALF, written out: 2^(e - 128). */
const e8m0Half = (e: number) => 2 ** (e - 128);

/** The block's d: its f16, or its e8m0 byte as a power of two. */
function scaleAt(t: TypeCase, bytes: Uint8Array, offset: number): number {
  return t.e8m0 ? e8m0Half(bytes[offset]) : f16At(bytes, offset);
}

/** Per value: the bound B on |S|·(|q| + 128) + |M| of its block. */
function levelBounds(type: string, w: Uint8Array): Float64Array {
  const t = TYPES[type];
  const blocks = w.length / t.bytes;
  const out = new Float64Array(blocks * t.values);
  for (let b = 0; b < blocks; b++) {
    const d = Math.abs(scaleAt(t, w, b * t.bytes + t.d));
    const m = t.m === undefined ? 0 : Math.abs(f16At(w, b * t.bytes + t.m));
    out.fill(d * t.maxScale * (t.maxLevel + 128) + m * t.maxMin, b * t.values, (b + 1) * t.values);
  }
  return out;
}

function dequantize(type: string, w: Uint8Array): Float32Array {
  const x = new Float32Array((w.length / TYPES[type].bytes) * TYPES[type].values);
  kernels.dequantizeBlocks(type, w, x);
  return x;
}

interface Act {
  x: Float32Array;
  q: Int8Array;
  d: Float32Array;
  sum: Int16Array;
}

function quantizeAct(isa: string, x: Float32Array): Act {
  const q = new Int8Array(x.length);
  const d = new Float32Array(x.length / 32);
  const sum = new Int16Array(x.length / 16);
  kernels.quantizeAct(isa, x, q, d, sum);
  return { x, q, d, sum };
}

function matmul(isa: string, type: string, w: Uint8Array, a: Act, m: number, rows: number, n: number, threads = 1): Float32Array {
  const y = new Float32Array(m * rows);
  kernels.ggmlMatmul(isa, type, w, a.q, a.d, a.sum, y, m, rows, n, threads);
  return y;
}

/**
 * Y = X·Wᵀ in f64 from the dequantized weights and the quantized activations (ref) and the
 * unquantized ones (exact), with the budgets of the header comment.
 */
function reference(type: string, w: Uint8Array, a: Act, m: number, rows: number, n: number) {
  const wf = dequantize(type, w);
  const bound = levelBounds(type, w);
  const ref = new Float64Array(m * rows);
  const exact = new Float64Array(m * rows);
  const fpBudget = new Float64Array(m * rows);
  const actBudget = new Float64Array(m * rows);
  for (let i = 0; i < m; i++)
    for (let r = 0; r < rows; r++) {
      let s = 0, e = 0, mag = 0, act = 0;
      for (let k = 0; k < n; k++) {
        const xd = a.d[i * (n / 32) + (k >> 5)];
        const xh = a.q[i * n + k] * xd;
        const wk = wf[r * n + k];
        s += wk * xh;
        e += wk * a.x[i * n + k];
        mag += Math.abs(xh) * bound[r * n + k];
        act += (Math.abs(wk) * xd) / 2;
      }
      ref[i * rows + r] = s;
      exact[i * rows + r] = e;
      fpBudget[i * rows + r] = (n / 16 + 16) * 2 * U * mag;
      actBudget[i * rows + r] = fpBudget[i * rows + r] + act;
    }
  return { ref, exact, fpBudget, actBudget };
}

// [n (values per row), rows, activation rows] per block size: odd row and batch counts, one
// block, and (32-value types) rows of whole 256-value groups plus a partial one; batches of more
// than one tile of activation rows (4 or 8) with a remainder, and (n = 2560, m = 113) more than
// one L2 block of prepared activation rows (kGgmlPrepBlockBytes in ggml_tiles.h: 104 or 108 rows).
// From m = 16 on, avx512vnni takes the GEMM of ggml_gemm_tiles.h (panels of 32 rows, tiles of 4
// activation rows): m = 16, 17, 65 with one partial panel, several panels plus a partial one, and
// (32-value types) a partial last group.
const SHAPES: Record<number, Array<[number, number, number]>> = {
  32: [[32, 1, 1], [96, 3, 2], [224, 7, 5], [1024, 17, 3], [800, 5, 9], [2560, 1, 113], [800, 33, 17], [96, 16, 16], [544, 39, 65]],
  256: [[256, 1, 1], [768, 3, 2], [512, 7, 5], [1280, 17, 3], [512, 5, 9], [2560, 1, 113], [768, 33, 17], [256, 16, 16], [512, 39, 65]],
};

describe('dequantizeBlocks: the 32-value layouts written out', () => {
  const rand = rng(11);
  const nib = (b: Uint8Array, j: number) => (j < 16 ? b[j] & 15 : b[j - 16] >> 4);
  const grid = [-127, -104, -83, -65, -49, -35, -22, -10, 1, 13, 25, 38, 53, 69, 89, 113];
  // the e2m1 values 0, 0.5, 1, 1.5, 2, 3, 4, 6 (sign in bit 3), doubled as ggml stores them; -0 is 0
  const e2m1x2 = (v: number) => (v & 8 ? -1 : 1) * [0, 1, 2, 3, 4, 6, 8, 12][v & 7] + 0;
  // value j of one block, in f32 (Math.fround per operation, as ggml rounds)
  const f = Math.fround;
  const refs: Record<string, (blk: Uint8Array, j: number) => number> = {
    q4_0: (b, j) => f(f16At(b, 0) * (nib(b.subarray(2), j) - 8)),
    q4_1: (b, j) => f(f(f16At(b, 0) * nib(b.subarray(4), j)) + f16At(b, 2)),
    q5_0: (b, j) => f(f16At(b, 0) * ((nib(b.subarray(6), j) | (((b[2 + (j >> 3)] >> (j & 7)) & 1) << 4)) - 16)),
    q5_1: (b, j) => f(f(f16At(b, 0) * (nib(b.subarray(8), j) | (((b[4 + (j >> 3)] >> (j & 7)) & 1) << 4))) + f16At(b, 2)),
    q8_0: (b, j) => f(f16At(b, 0) * ((b[2 + j] << 24) >> 24)),
    iq4_nl: (b, j) => f(f16At(b, 0) * grid[nib(b.subarray(2), j)]),
    mxfp4: (b, j) => f(e8m0Half(b[0]) * e2m1x2(nib(b.subarray(1), j))),
  };
  test.each(Object.keys(refs))('%s', (type) => {
    const t = TYPES[type];
    const w = randomBlocks(t, 9, rand);
    const got = dequantize(type, w);
    const want = new Float32Array(got.length);
    for (let b = 0; b < 9; b++) for (let j = 0; j < 32; j++) want[b * 32 + j] = refs[type](w.subarray(b * t.bytes, (b + 1) * t.bytes), j);
    expect(Array.from(got)).toEqual(Array.from(want));
  });

  test('mxfp4 at every e8m0 exponent (the subnormal 2^-128, 2^-127 and 2^127 included)', () => {
    const w = new Uint8Array(256 * 17);
    for (let b = 0; b < 256; b++) {
      w[b * 17] = b;
      for (let j = 1; j < 17; j++) w[b * 17 + j] = (b * 7 + j * 29) & 255;
    }
    const got = dequantize('mxfp4', w);
    for (let b = 0; b < 256; b++)
      for (let j = 0; j < 32; j++) expect(got[b * 32 + j]).toBe(f(e8m0Half(b) * e2m1x2(nib(w.subarray(b * 17 + 1), j))));
  });

  test('a partial block or an unknown type is refused', () => {
    expect(thrown(() => kernels.dequantizeBlocks('q4_k', new Uint8Array(100), new Float32Array(256))).name).toBe('RangeError');
    expect(thrown(() => kernels.dequantizeBlocks('q4_z', new Uint8Array(18), new Float32Array(32))).name).toBe('TypeError');
  });
});

describe.each(ISAS)('ggml dot products (%s)', (isa) => {
  test('quantizeAct = quantizeQ8 (group 32) plus exact sums per 16', () => {
    const rand = rng(12);
    const x = uniform(32 * 7, rand, -3, 3);
    x.fill(0, 32, 64);
    const a = quantizeAct(isa, x);
    const q = new Int8Array(x.length);
    const s = new Float32Array(x.length / 32);
    kernels.quantizeQ8('scalar', x, 32, q, s);
    expect(Array.from(a.q)).toEqual(Array.from(q));
    expect(Array.from(a.d)).toEqual(Array.from(s));
    for (let i = 0; i < a.sum.length; i++) expect(a.sum[i]).toBe(q.subarray(16 * i, 16 * i + 16).reduce((p, v) => p + v, 0));
  });

  test.each(TYPE_NAMES)('%s against dequantize-then-f64 math and the scalar table', (type) => {
    const t = TYPES[type];
    const rand = rng(100 + TYPE_NAMES.indexOf(type));
    for (const [n, rows, m] of SHAPES[t.values]) {
      const w = randomBlocks(t, (rows * n) / t.values, rand);
      const a = quantizeAct(isa, uniform(m * n, rand, -2, 2));
      const y = matmul(isa, type, w, a, m, rows, n);
      const { ref, exact, fpBudget, actBudget } = reference(type, w, a, m, rows, n);
      expect(worstRatio(y, ref, fpBudget)).toBeLessThanOrEqual(1);
      expect(worstRatio(y, exact, actBudget)).toBeLessThanOrEqual(1);
      if (isa !== 'scalar') expect(worstRatio(y, matmul('scalar', type, w, a, m, rows, n), fpBudget)).toBeLessThanOrEqual(1);
      // threaded (rows split) and one activation row at a time (decode's matvec): the same bits
      expect(Array.from(matmul(isa, type, w, a, m, rows, n, 2))).toEqual(Array.from(y));
      expect(Array.from(matmul(isa, type, w, a, m, rows, n, 3))).toEqual(Array.from(y));
      for (let i = 0; i < m; i++) {
        const row: Act = {
          x: a.x.subarray(i * n, (i + 1) * n),
          q: a.q.subarray(i * n, (i + 1) * n),
          d: a.d.subarray((i * n) / 32, ((i + 1) * n) / 32),
          sum: a.sum.subarray((i * n) / 16, ((i + 1) * n) / 16),
        };
        expect(Array.from(matmul(isa, type, w, row, 1, rows, n))).toEqual(Array.from(y.subarray(i * rows, (i + 1) * rows)));
      }
    }
  });

  // Every activation at ±127 and every weight byte but the f16 factors at 0x00, 0x80 or 0xff:
  // the largest integer products the SIMD dots meet (where 16-bit pair sums would saturate first);
  // m = 17 for the GEMM of m >= 16.
  const EXTREME = TYPE_NAMES.flatMap((type) => [5, 17].map((m) => [type, m] as [string, number]));
  test.each(EXTREME)('%s at the extreme levels and activations, m = %i', (type, m) => {
    const t = TYPES[type];
    const rand = rng(200 + TYPE_NAMES.indexOf(type));
    const [n, rows] = [t.values * 4, 3];
    const w = randomBlocks(t, (rows * n) / t.values, rand);
    const dv = new DataView(w.buffer);
    const f16Fields = t.e8m0 ? [] : t.m === undefined ? [t.d] : [t.d, t.m];
    for (let b = 0; b < w.length / t.bytes; b++) {
      const keep = f16Fields.map((o) => dv.getUint16(b * t.bytes + o, true));
      for (let j = 0; j < t.bytes; j++) w[b * t.bytes + j] = [0x00, 0x80, 0xff][Math.floor(rand() * 3)];
      f16Fields.forEach((o, i) => dv.setUint16(b * t.bytes + o, keep[i], true));
      if (t.e8m0) w[b * t.bytes + t.d] = 118 + Math.floor(rand() * 8);
    }
    const a = quantizeAct(isa, new Float32Array(m * n).map(() => (rand() < 0.5 ? -1 : 1)));
    expect(Array.from(a.q).every((q) => Math.abs(q) === 127)).toBe(true);
    const y = matmul(isa, type, w, a, m, rows, n);
    const { ref, fpBudget } = reference(type, w, a, m, rows, n);
    expect(worstRatio(y, ref, fpBudget)).toBeLessThanOrEqual(1);
    if (isa !== 'scalar') expect(worstRatio(y, matmul('scalar', type, w, a, m, rows, n), fpBudget)).toBeLessThanOrEqual(1);
    // the first activation row alone (decode's matvec, its own code on avx512vnni): the same bits
    const first = { x: a.x.subarray(0, n), q: a.q.subarray(0, n), d: a.d.subarray(0, n / 32), sum: a.sum.subarray(0, n / 16) };
    expect(Array.from(matmul(isa, type, w, first, 1, rows, n))).toEqual(Array.from(y.subarray(0, rows)));
  });

  // Decode's matvec (m = 1) reads rows in pairs from the two halves of each thread's range (an
  // odd count's last row alone): odd row counts, split over 1..3 threads, a partial last group.
  test.each(TYPE_NAMES)('%s matvec (m = 1): odd row counts and thread splits, the bits of m > 1', (type) => {
    const t = TYPES[type];
    const rand = rng(300 + TYPE_NAMES.indexOf(type));
    const n = t.values === 32 ? 800 : 768;
    for (const rows of [2, 5, 37]) {
      const w = randomBlocks(t, (rows * n) / t.values, rand);
      const a = quantizeAct(isa, uniform(2 * n, rand, -2, 2));
      const y2 = matmul(isa, type, w, a, 2, rows, n);
      const second = { x: a.x.subarray(n), q: a.q.subarray(n), d: a.d.subarray(n / 32), sum: a.sum.subarray(n / 16) };
      const y = matmul(isa, type, w, second, 1, rows, n);
      const { ref, fpBudget } = reference(type, w, second, 1, rows, n);
      expect(worstRatio(y, ref, fpBudget)).toBeLessThanOrEqual(1);
      expect(Array.from(y)).toEqual(Array.from(y2.subarray(rows)));
      for (const threads of [2, 3]) expect(Array.from(matmul(isa, type, w, second, 1, rows, n, threads))).toEqual(Array.from(y));
    }
  });
});
