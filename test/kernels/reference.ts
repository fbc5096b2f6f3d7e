/**
 * Independent references for the kernel tests: a seeded RNG, IEEE binary16 decoding/encoding
 * written from the format's definition (not from the native code), and double-precision dots.
 */
import * as path from 'node:path';
import { native, packageRoot } from '../../lib/addon/native';
import type { KernelsBinding } from '../../lib/addon/binding';

export const kernels: KernelsBinding = native().kernels;

/** Every table this CPU and build can run ("scalar" first). */
export const ISAS: string[] = kernels.availableIsas();

/** The .node file this test process loaded, for child processes, workers and disassembly. */
export function addonPath(): string {
  if (process.env.WEIGHTMAP_ADDON) return path.resolve(process.env.WEIGHTMAP_ADDON);
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return (require('node-gyp-build') as { path(dir: string): string }).path(packageRoot);
}

/** Unit roundoff of f32. */
export const U = 2 ** -24;

/** mulberry32: a small deterministic PRNG, uniform in [0, 1). */
export function rng(seed: number): () => number {
  let s = seed >>> 0;
  return () => {
    s = (s + 0x6d2b79f5) >>> 0;
    let t = s;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export function uniform(n: number, rand: () => number, lo = -1, hi = 1): Float32Array {
  const a = new Float32Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + (hi - lo) * rand();
  return a;
}

const f32 = new Float32Array(1);
const u32 = new Uint32Array(f32.buffer);

export function f32Bits(x: number): number {
  f32[0] = x;
  return u32[0];
}

export function bitsF32(bits: number): number {
  u32[0] = bits >>> 0;
  return f32[0];
}

/** The value of a binary16 bit pattern (NaN for every NaN). */
export function f16Value(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const e = (h >> 10) & 0x1f;
  const m = h & 0x3ff;
  if (e === 0x1f) return m ? NaN : sign * Infinity;
  if (e === 0) return sign * m * 2 ** -24;
  return sign * (1 + m / 1024) * 2 ** (e - 15);
}

/** The f32 bits a binary16 pattern widens to; a NaN becomes quiet with its payload kept. */
export function f16ToF32Bits(h: number): number {
  if ((h & 0x7c00) === 0x7c00 && h & 0x3ff) return (((h & 0x8000) << 16) | 0x7fc00000 | ((h & 0x3ff) << 13)) >>> 0;
  return f32Bits(f16Value(h));
}

/** floor(log2(a)) for a > 0, exact. */
function exponentOf(a: number): number {
  let e = Math.floor(Math.log2(a));
  if (2 ** e > a) e -= 1;
  if (2 ** (e + 1) <= a) e += 1;
  return e;
}

/** The binary16 bits nearest to the f32 `x` (ties to even); NaN -> quiet NaN, top payload bits kept. */
export function f32ToF16Bits(x: number): number {
  const bits = f32Bits(x);
  const sign = (bits >>> 16) & 0x8000;
  if (Number.isNaN(x)) return sign | 0x7e00 | ((bits >>> 13) & 0x3ff);
  const a = Math.abs(x);
  if (a >= 65520) return sign | 0x7c00; // halfway between 65504 and 2^16, and above: Inf
  // Spacing of binary16 values around a: 2^(e-10), with e >= -14 (subnormals share 2^-24).
  const e = a === 0 ? -14 : Math.max(-14, exponentOf(a));
  const ulp = 2 ** (e - 10);
  const q = a / ulp; // exact: a has at most 24 significant bits and ulp is a power of two
  let r = Math.floor(q);
  const frac = q - r;
  if (frac > 0.5 || (frac === 0.5 && r % 2 === 1)) r += 1;
  const v = r * ulp;
  if (v === 0) return sign;
  // encode v (a binary16 value by construction)
  const ve = exponentOf(v);
  if (v < 2 ** -14) return sign | Math.round(v / 2 ** -24);
  return sign | ((ve + 15) << 10) | Math.round((v / 2 ** ve - 1) * 1024);
}

/** Random finite f16 patterns of magnitude below 2^maxExp (a few subnormals among them). */
export function randomF16(n: number, rand: () => number, maxExp = 1): { bits: Uint16Array; values: Float64Array } {
  const bits = new Uint16Array(n);
  const values = new Float64Array(n);
  for (let i = 0; i < n; i++) {
    // biased exponent in [maxExp + 15 - 8, maxExp + 15), or 0 (subnormal) one time in 64
    const e = rand() < 1 / 64 ? 0 : maxExp + 7 + Math.floor(rand() * 8);
    const h = (rand() < 0.5 ? 0x8000 : 0) | (e << 10) | Math.floor(rand() * 1024);
    bits[i] = h;
    values[i] = f16Value(h);
  }
  return { bits, values };
}

/**
 * C = A [m, k] · B in double, and Σ_p |a_ip · b_pj| per output (the scale of a rounding budget);
 * B is [k, n], or [n, k] with `trans`.
 */
export function exactProduct(
  a: ArrayLike<number>,
  b: ArrayLike<number>,
  m: number,
  k: number,
  n: number,
  trans: boolean,
): { y: Float64Array; mag: Float64Array } {
  const y = new Float64Array(m * n);
  const mag = new Float64Array(m * n);
  for (let i = 0; i < m; i++)
    for (let j = 0; j < n; j++) {
      let s = 0;
      let abs = 0;
      for (let p = 0; p < k; p++) {
        const t = a[i * k + p] * b[trans ? j * k + p : p * n + j];
        s += t;
        abs += Math.abs(t);
      }
      y[i * n + j] = s;
      mag[i * n + j] = abs;
    }
  return { y, mag };
}

/** Largest |got - want| / budget over all entries, with budget[i] > 0 or exact equality required. */
export function worstRatio(got: ArrayLike<number>, want: ArrayLike<number>, budget: ArrayLike<number>): number {
  let worst = 0;
  for (let i = 0; i < got.length; i++) {
    const d = Math.abs(got[i] - want[i]);
    if (budget[i] === 0) {
      if (d !== 0) return Infinity;
      continue;
    }
    worst = Math.max(worst, d / budget[i]);
  }
  return worst;
}

/** The error `fn` throws (native errors come from another realm, so match on name and code). */
export function thrown(fn: () => unknown): { name: string; code?: string; message: string } {
  try {
    fn();
  } catch (e) {
    const err = e as { name: string; code?: string; message: string };
    return { name: err.name, code: err.code, message: err.message };
  }
  throw new Error('expected a throw');
}
