/** CRC-32 (IEEE, zlib's) and FNV-1a 32-bit, as EMBD uses them (FORMATS.md §3.2, §3.5). */
import type { MappedFile } from './binding';
import { lazy } from '../base/lazy';
import { native } from './native';

// Loaded on the first crc32() (node:zlib costs a fresh process ~1.3 ms of require).
const zlibCrc32 = lazy(() => (require('node:zlib') as { crc32?: (data: Uint8Array, value?: number) => number }).crc32);

let table: Uint32Array | undefined;
function crcTable(): Uint32Array {
  if (table) return table;
  table = new Uint32Array(256);
  for (let n = 0; n < 256; n++) {
    let c = n;
    for (let k = 0; k < 8; k++) c = c & 1 ? 0xedb88320 ^ (c >>> 1) : c >>> 1;
    table[n] = c >>> 0;
  }
  return table;
}

/** CRC-32 of `data`, continuing from `previous` (the CRC of the bytes before it). */
export function crc32(data: Uint8Array, previous = 0): number {
  const zlibCrc = zlibCrc32();
  if (zlibCrc) return zlibCrc(data, previous) >>> 0;
  const t = crcTable();
  let c = (previous ^ 0xffffffff) >>> 0;
  for (let i = 0; i < data.length; i++) c = t[(c ^ data[i]) & 0xff] ^ (c >>> 8);
  return (c ^ 0xffffffff) >>> 0;
}

/** Which CRC-32 code the native addon runs (tests and benchmarks pick one; 'auto' is the fastest). */
export interface NativeCrc32Options {
  impl?: 'auto' | 'table' | 'pclmul';
  /** Threads for one call (pieces of >= 1 MiB each); default: physical cores, at most 4. */
  threads?: number;
  /** The MappedFile `bytes` lies in: its pages then stay mapped until the CRC is done, even if it is closed. */
  file?: MappedFile;
}

/**
 * crc32(bytes, previous) computed by the native addon on libuv's thread pool (PCLMULQDQ folding
 * where the CPU has it): the event loop keeps turning while a large buffer is checksummed. Views
 * of a mapped file must pass it as `options.file`.
 */
export function crc32Native(bytes: Uint8Array, previous = 0, options?: NativeCrc32Options): Promise<number> {
  return native().crc32(bytes, previous >>> 0, options);
}

// Polynomials over GF(2) in CRC-32's reflected order (bit 31 is x^0), reduced modulo its generator.
const CRC_POLY = 0xedb88320;

function multiplyModPoly(a: number, b: number): number {
  let product = 0;
  for (let bit = 0x80000000; bit !== 0; bit >>>= 1) {
    if (a & bit) product ^= b;
    b = b & 1 ? (b >>> 1) ^ CRC_POLY : b >>> 1;
  }
  return product >>> 0;
}

/**
 * The CRC-32 of A followed by B from crc32(A), crc32(B) and B's length: crc(A)·x^(8·|B|) + crc(B)
 * modulo the generator (the initial and final inversions cancel), so that two ranges can be
 * checksummed separately, or one range feed two checksums, and be joined without a second pass.
 */
export function crc32Combine(crcA: number, crcB: number, lengthB: number): number {
  let power = 0x80000000; // x^0
  let square = 0x00800000; // x^8: one byte
  for (let n = lengthB; n > 0; n = Math.floor(n / 2)) {
    if (n % 2) power = multiplyModPoly(power, square);
    square = multiplyModPoly(square, square);
  }
  return (multiplyModPoly(crcA >>> 0, power) ^ crcB) >>> 0;
}

/** FNV-1a 32-bit over the UTF-8 bytes of `text`. */
export function fnv1a32(text: string): number {
  let h = 0x811c9dc5;
  for (const byte of Buffer.from(text, 'utf8')) {
    h ^= byte;
    h = Math.imul(h, 0x01000193) >>> 0;
  }
  return h >>> 0;
}
