/**
 * f16 <-> f32 and bf16 -> f32 conversions of every table, exact to the bit, against references
 * written from the IEEE binary16 definition (test/kernels/reference.ts).
 */
import { ISAS, bitsF32, f16ToF32Bits, f32Bits, f32ToF16Bits, kernels, rng, thrown } from './reference';

function widen(isa: string, h: Uint16Array): Uint32Array {
  const y = new Float32Array(h.length);
  kernels.f16ToF32(isa, h, y);
  return new Uint32Array(y.buffer);
}

function narrow(isa: string, x: Float32Array): Uint16Array {
  const h = new Uint16Array(x.length);
  kernels.f32ToF16(isa, x, h);
  return h;
}

/** The first index where a and b differ, or -1. */
function firstDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return i;
  return a.length === b.length ? -1 : a.length;
}

// The interesting f32 inputs for narrowing: around every binary16 value (its exact f32, the
// midpoint to the next one, one f32 ulp either side of that midpoint), the overflow edge,
// the subnormal range, zeros, infinities and NaNs with payloads.
function narrowingCases(): Float32Array {
  const out: number[] = [];
  const f = new Float32Array(1);
  const next = (x: number, dir: number) => bitsF32(f32Bits(x) + dir);
  for (let h = 0; h < 0x7c00; h++) {
    const lo = f16ToF32Value(h);
    const hi = h + 1 < 0x7c00 ? f16ToF32Value(h + 1) : 65536;
    f[0] = (lo + hi) / 2; // exact in f32: 12 significant bits
    const mid = f[0];
    for (const v of [lo, mid, next(mid, -1), next(mid, 1)]) out.push(v, -v);
  }
  out.push(65504, 65519.99609375, 65520, 65536, 1e10, Infinity, -Infinity, 0, -0);
  out.push(2 ** -25, 2 ** -25 * 1.0000001, 2 ** -26, 2 ** -24 * 1.5, 2 ** -24 * 2.5, 1e-30, -1e-30);
  for (const bits of [0x7f800001, 0x7fc00000, 0xff812345, 0x7fa00000, 0x7fffffff, 0xffc00001]) out.push(bitsF32(bits));
  return Float32Array.from(out);
}

function f16ToF32Value(h: number): number {
  return bitsF32(f16ToF32Bits(h));
}

// Computed once, shared by every table.
let narrowing: { cases: Float32Array; want: Uint16Array } | undefined;
function narrowingWant(): { cases: Float32Array; want: Uint16Array } {
  if (!narrowing) {
    const cases = narrowingCases();
    narrowing = { cases, want: Uint16Array.from(cases, (x) => f32ToF16Bits(x)) };
  }
  return narrowing;
}

describe.each(ISAS)('conversions (%s)', (isa) => {
  test('f16 -> f32 widens all 65536 patterns exactly (NaNs quiet, payload kept)', () => {
    const all = new Uint16Array(65536);
    for (let i = 0; i < 65536; i++) all[i] = i;
    const want = Uint32Array.from(all, (h) => f16ToF32Bits(h));
    expect(firstDiff(widen(isa, all), want)).toBe(-1);
    // odd lengths and offsets exercise the vector tails
    for (const n of [1, 3, 7, 31, 33, 127]) {
      const part = all.subarray(1000, 1000 + n);
      expect(firstDiff(widen(isa, part), want.subarray(1000, 1000 + n))).toBe(-1);
    }
  });

  test('f32 -> f16 rounds to nearest even, overflows to Inf, keeps subnormals and NaNs', () => {
    const { cases, want } = narrowingWant();
    const got = narrow(isa, cases);
    const i = firstDiff(got, want);
    expect(i === -1 ? -1 : `${cases[i]} (0x${f32Bits(cases[i]).toString(16)}) -> 0x${got[i].toString(16)}`).toBe(-1);
    // spot checks of the rounding rule itself
    expect(Array.from(narrow(isa, Float32Array.from([1 + 2 ** -11, 1 + 3 * 2 ** -11, 65504, 65520, 2 ** -25, 3 * 2 ** -25]))))
      .toEqual([0x3c00, 0x3c02, 0x7bff, 0x7c00, 0x0000, 0x0002]);
  });

  test('f32 -> f16 on random bit patterns of every odd length', () => {
    const rand = rng(7);
    for (const n of [1, 3, 7, 31, 33, 127, 1023, 20000]) {
      const bits = new Uint32Array(n);
      for (let i = 0; i < n; i++) bits[i] = Math.floor(rand() * 2 ** 32);
      const x = new Float32Array(bits.buffer);
      const want = Uint16Array.from(x, (v) => f32ToF16Bits(v));
      expect(firstDiff(narrow(isa, x), want)).toBe(-1);
    }
  });

  test('f16 -> f32 -> f16 is the identity on every non-NaN pattern', () => {
    const all = new Uint16Array(65536);
    for (let i = 0; i < 65536; i++) all[i] = i;
    const y = new Float32Array(65536);
    kernels.f16ToF32(isa, all, y);
    const back = narrow(isa, y);
    for (let h = 0; h < 65536; h++) {
      if ((h & 0x7c00) === 0x7c00 && h & 0x3ff) {
        expect((back[h] & 0x7e00) === 0x7e00 && (back[h] & 0x8000) === (h & 0x8000)).toBe(true); // still a (quiet) NaN
      } else if (back[h] !== h) {
        throw new Error(`0x${h.toString(16)} came back as 0x${back[h].toString(16)}`);
      }
    }
  });

  test('bf16 -> f32 is the 16-bit shift', () => {
    const rand = rng(11);
    for (const n of [1, 3, 7, 31, 33, 127, 1023]) {
      const x = new Uint16Array(n);
      for (let i = 0; i < n; i++) x[i] = Math.floor(rand() * 65536);
      const y = new Float32Array(n);
      kernels.bf16ToF32(isa, x, y);
      const got = new Uint32Array(y.buffer);
      expect(firstDiff(got, Uint32Array.from(x, (h) => (h << 16) >>> 0))).toBe(-1);
    }
  });
});

test('conversions reject mismatched lengths and types before touching memory', () => {
  expect(thrown(() => kernels.f16ToF32('scalar', new Uint16Array(4), new Float32Array(3)))).toMatchObject({
    name: 'RangeError',
    code: 'ERR_OUT_OF_RANGE',
  });
  expect(thrown(() => kernels.f32ToF16('scalar', new Float32Array(4), new Uint16Array(5))).name).toBe('RangeError');
  expect(thrown(() => kernels.f16ToF32('scalar', new Int16Array(4) as unknown as Uint16Array, new Float32Array(4)))).toMatchObject({
    name: 'TypeError',
    code: 'ERR_INVALID_ARG_TYPE',
  });
  expect(thrown(() => kernels.f16ToF32('no-such-isa', new Uint16Array(1), new Float32Array(1))).code).toBe('ERR_WEIGHTMAP_ISA');
});
