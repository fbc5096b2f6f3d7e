/**
 * Float element conversions shared by format readers and writers: IEEE binary16 and bfloat16 to
 * and from float32 (round to nearest, ties to even), bulk decoding of little-endian bytes to
 * Float32Array and encoding back. Typed arrays are host-endian; every platform Node runs on is
 * little-endian, like the formats.
 */
import { rangeError } from '../../base/errors';

/** The float element types writers can emit. */
export type FloatDType = 'f32' | 'f16' | 'bf16';

export const FLOAT_DTYPE_BYTES: Readonly<Record<FloatDType, number>> = { f32: 4, f16: 2, bf16: 2 };

const scratch = new ArrayBuffer(4);
const scratchF32 = new Float32Array(scratch);
const scratchU32 = new Uint32Array(scratch);

/** float32 bits of `x` (after rounding x to float32). */
export function f32Bits(x: number): number {
  scratchF32[0] = x;
  return scratchU32[0];
}

/** The float32 whose bits are `bits`. */
export function f32FromBits(bits: number): number {
  scratchU32[0] = bits >>> 0;
  return scratchF32[0];
}

let f16Table: Float32Array | undefined;

/** All 65,536 binary16 values as float32 (256 KiB, built on first use). */
export function halfTable(): Float32Array {
  if (f16Table) return f16Table;
  const t = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) t[h] = f16ToF32Slow(h);
  f16Table = t;
  return t;
}

function f16ToF32Slow(h: number): number {
  const sign = h & 0x8000 ? -1 : 1;
  const exp = (h >>> 10) & 0x1f;
  const mant = h & 0x3ff;
  if (exp === 0) return sign * mant * 2 ** -24;
  if (exp === 31) return mant ? NaN : sign * Infinity;
  return sign * (1 + mant / 1024) * 2 ** (exp - 15);
}

/** binary16 bits -> value (exact). */
export function f16ToF32(h: number): number {
  return halfTable()[h & 0xffff];
}

/** Value -> binary16 bits, rounding the float32 of `x` to nearest, ties to even. */
export function f32ToF16(x: number): number {
  const bits = f32Bits(x);
  const sign = (bits >>> 16) & 0x8000;
  const exp = (bits >>> 23) & 0xff;
  let mant = bits & 0x7fffff;
  if (exp === 0xff) return sign | 0x7c00 | (mant ? 0x200 | (mant >>> 13) : 0);
  const e = exp - 127 + 15;
  if (e >= 31) return sign | 0x7c00;
  if (e <= 0) {
    if (e < -10) return sign;
    // Subnormal half: shift the 24-bit significand (implicit 1 restored) down to 10 bits.
    mant |= 0x800000;
    const shift = 14 - e;
    let h = mant >>> shift;
    const rem = mant & ((1 << shift) - 1);
    const halfway = 1 << (shift - 1);
    if (rem > halfway || (rem === halfway && h & 1)) h++;
    return sign | h;
  }
  let h = (e << 10) | (mant >>> 13);
  const rem = mant & 0x1fff;
  // A carry out of the mantissa bumps the exponent, up to infinity: that is the right rounding.
  if (rem > 0x1000 || (rem === 0x1000 && h & 1)) h++;
  return sign | h;
}

/** bfloat16 bits -> value (exact). */
export function bf16ToF32(b: number): number {
  return f32FromBits((b & 0xffff) << 16);
}

/** Value -> bfloat16 bits, rounding the float32 of `x` to nearest, ties to even. */
export function f32ToBf16(x: number): number {
  const bits = f32Bits(x);
  if ((bits & 0x7f800000) === 0x7f800000 && bits & 0x7fffff) return ((bits >>> 16) | 0x40) & 0xffff;
  return ((bits + 0x7fff + ((bits >>> 16) & 1)) >>> 16) & 0xffff;
}

/**
 * Decodes `count` little-endian elements of `dtype` starting at `bytes[0]` into `out` (which must
 * hold `count`). Works at any byte alignment; aligned input takes the typed-array fast path.
 */
export function decodeFloats(bytes: Uint8Array, dtype: FloatDType | 'f64', count: number, out: Float32Array): Float32Array {
  const size = dtype === 'f64' ? 8 : FLOAT_DTYPE_BYTES[dtype];
  if (bytes.length < count * size) throw rangeError(`decodeFloats: ${bytes.length} bytes hold fewer than ${count} ${dtype}`);
  if (out.length < count) throw rangeError(`decodeFloats: output holds ${out.length} < ${count}`);
  const aligned = (bytes.byteOffset % size) === 0;
  switch (dtype) {
    case 'f32': {
      if (aligned) out.set(new Float32Array(bytes.buffer, bytes.byteOffset, count));
      else new Uint8Array(out.buffer, out.byteOffset, count * 4).set(bytes.subarray(0, count * 4));
      return out;
    }
    case 'f64': {
      const dv = new DataView(bytes.buffer, bytes.byteOffset, count * 8);
      for (let i = 0; i < count; i++) out[i] = dv.getFloat64(i * 8, true);
      return out;
    }
    case 'f16': {
      const t = halfTable();
      if (aligned) {
        const src = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
        for (let i = 0; i < count; i++) out[i] = t[src[i]];
      } else {
        for (let i = 0; i < count; i++) out[i] = t[bytes[2 * i] | (bytes[2 * i + 1] << 8)];
      }
      return out;
    }
    case 'bf16': {
      const bitsOut = new Uint32Array(out.buffer, out.byteOffset, count);
      if (aligned) {
        const src = new Uint16Array(bytes.buffer, bytes.byteOffset, count);
        for (let i = 0; i < count; i++) bitsOut[i] = src[i] << 16;
      } else {
        for (let i = 0; i < count; i++) bitsOut[i] = ((bytes[2 * i] | (bytes[2 * i + 1] << 8)) << 16) >>> 0;
      }
      return out;
    }
  }
}

/** Encodes float32 values as little-endian `dtype` bytes (a fresh buffer; f32 is a zero-copy view). */
export function encodeFloats(values: Float32Array, dtype: FloatDType): Uint8Array {
  switch (dtype) {
    case 'f32':
      return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
    case 'f16': {
      const out = new Uint16Array(values.length);
      for (let i = 0; i < values.length; i++) out[i] = f32ToF16(values[i]);
      return new Uint8Array(out.buffer);
    }
    case 'bf16': {
      const out = new Uint16Array(values.length);
      for (let i = 0; i < values.length; i++) out[i] = f32ToBf16(values[i]);
      return new Uint8Array(out.buffer);
    }
  }
}

/** Round half to even, as torch.round / numpy.round do. */
export function roundHalfEven(x: number): number {
  if (x > -2147483648 && x < 2147483647) {
    // Integer part by truncation (no Math call: this runs once per quantized weight).
    const t = x | 0;
    const frac = x - t;
    if (frac > 0.5) return t + 1;
    if (frac < -0.5) return t - 1;
    if (frac === 0.5) return t + (t & 1);
    if (frac === -0.5) return t - (t & 1);
    return t;
  }
  const r = Math.round(x); // half up
  return r - x === 0.5 && r % 2 !== 0 ? r - 1 : r;
}
