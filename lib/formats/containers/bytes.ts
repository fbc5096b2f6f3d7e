/**
 * Bounded little-endian reading for format readers. Every read is checked against the end of
 * the buffer (or a section of it) and fails with a WeightFormatError that names the file, the
 * byte offset and what was being read, so no reader ever indexes past what it validated.
 */
import { WeightFormatError, type WeightFormatErrorCode } from '../../base/errors';

export function fail(
  code: WeightFormatErrorCode,
  message: string,
  details: { path?: string; offset?: number; expected?: unknown; found?: unknown } = {},
): never {
  throw new WeightFormatError(code, message, details);
}

/** Throws OUT_OF_BOUNDS unless [offset, offset+length) lies within [0, limit). */
export function checkRange(path: string, offset: number, length: number, limit: number, what: string): void {
  if (!Number.isSafeInteger(offset) || !Number.isSafeInteger(length) || offset < 0 || length < 0 || offset + length > limit) {
    fail('OUT_OF_BOUNDS', `${what} lies outside the file`, {
      path,
      offset: Number.isSafeInteger(offset) ? offset : undefined,
      expected: `end <= ${limit}`,
      found: `offset ${offset} + length ${length}`,
    });
  }
}

/** Throws OVERLAP if any two of the ranges share a byte (empty ranges never overlap). */
export function checkNoOverlap(
  path: string,
  ranges: readonly { name: string; byteOffset: number; byteLength: number }[],
): void {
  const sorted = ranges.filter((r) => r.byteLength > 0).sort((a, b) => a.byteOffset - b.byteOffset);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1];
    const cur = sorted[i];
    if (cur.byteOffset < prev.byteOffset + prev.byteLength) {
      fail('OVERLAP', `tensors '${prev.name}' and '${cur.name}' overlap`, {
        path,
        offset: cur.byteOffset,
        expected: `offset >= ${prev.byteOffset + prev.byteLength}`,
        found: cur.byteOffset,
      });
    }
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

export class ByteCursor {
  /** Absolute offset of the next read. */
  offset: number;

  /**
   * @param bytes the whole file (offsets stay absolute)
   * @param path  for error messages
   * @param offset where reading starts
   * @param end   reads must stay below this (a section's end); defaults to the file's end
   */
  constructor(
    readonly bytes: Buffer,
    readonly path: string,
    offset = 0,
    readonly end = bytes.length,
  ) {
    this.offset = offset;
  }

  get remaining(): number {
    return this.end - this.offset;
  }

  /** Throws TRUNCATED unless `n` more bytes are available. */
  need(n: number, what: string): void {
    if (!Number.isSafeInteger(n) || n < 0 || n > this.end - this.offset) {
      fail('TRUNCATED', `the file ends inside ${what}`, {
        path: this.path,
        offset: this.offset,
        expected: `${n} bytes`,
        found: `${Math.max(0, this.end - this.offset)} bytes`,
      });
    }
  }

  u8(what: string): number {
    this.need(1, what);
    return this.bytes.readUInt8(this.offset++);
  }

  u16(what: string): number {
    this.need(2, what);
    const v = this.bytes.readUInt16LE(this.offset);
    this.offset += 2;
    return v;
  }

  u32(what: string): number {
    this.need(4, what);
    const v = this.bytes.readUInt32LE(this.offset);
    this.offset += 4;
    return v;
  }

  i32(what: string): number {
    this.need(4, what);
    const v = this.bytes.readInt32LE(this.offset);
    this.offset += 4;
    return v;
  }

  f32(what: string): number {
    this.need(4, what);
    const v = this.bytes.readFloatLE(this.offset);
    this.offset += 4;
    return v;
  }

  f64(what: string): number {
    this.need(8, what);
    const v = this.bytes.readDoubleLE(this.offset);
    this.offset += 8;
    return v;
  }

  /** A u64 as a number; values past 2^53 cannot be a size or offset in a real file. */
  u64(what: string): number {
    this.need(8, what);
    const at = this.offset;
    const v = this.bytes.readBigUInt64LE(at);
    this.offset += 8;
    if (v > BigInt(Number.MAX_SAFE_INTEGER)) {
      fail('OUT_OF_BOUNDS', `${what} is too large`, { path: this.path, offset: at, expected: '< 2^53', found: v });
    }
    return Number(v);
  }

  i64(what: string): bigint {
    this.need(8, what);
    const v = this.bytes.readBigInt64LE(this.offset);
    this.offset += 8;
    return v;
  }

  /** A zero-copy view of the next `n` bytes. */
  bytesView(n: number, what: string): Buffer {
    this.need(n, what);
    const view = this.bytes.subarray(this.offset, this.offset + n);
    this.offset += n;
    return view;
  }

  /** `n` bytes of strict UTF-8; BAD_NAME if they are not valid UTF-8. */
  utf8(n: number, what: string): string {
    const at = this.offset;
    const view = this.bytesView(n, what);
    try {
      return utf8.decode(view);
    } catch {
      return fail('BAD_NAME', `${what} is not valid UTF-8`, { path: this.path, offset: at });
    }
  }

  skip(n: number, what: string): void {
    this.need(n, what);
    this.offset += n;
  }
}

/**
 * The size of a model whose footprint is linear in its layer count, computed from the sizes at
 * 0 and 1 layers: readers compare it with the file before anything is built per layer, so a
 * header claiming 2^31 layers costs two tiny evaluations, not 2^31 tensor specs.
 */
export function sizeForLayers(layers: number, sizeAt: (layers: number) => number): number {
  const base = sizeAt(0);
  return base + layers * (sizeAt(1) - base);
}

/**
 * Throws CONFIG_MISMATCH unless `layers` <= `tensors`: in formats that store every layer's
 * weights as tensors of their own, each layer has at least one, so a larger count is a lie the
 * tensors present refute, checked before anything is built per layer.
 */
export function checkLayerCount(key: string, layers: number, tensors: number, details: { path?: string; offset?: number } = {}): void {
  if (layers > tensors) {
    fail('CONFIG_MISMATCH', `${key} claims more layers than the file has tensors`, { ...details, expected: `<= ${tensors}`, found: layers });
  }
}
