/**
 * Test-side readers and writers for the conversion tests, written from the format descriptions
 * (FORMATS.md §1.2, §2.2, §7) and independent of lib/formats: they build HF-style inputs the way
 * other tools would, and take fixture files apart to say what a conversion must produce.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

export interface RawTensor {
  name: string;
  dtype: 'F32' | 'F16' | 'BF16' | 'I64';
  shape: number[];
  data: Uint8Array;
}

const ELEMENT_BYTES = { F32: 4, F16: 2, BF16: 2, I64: 8 } as const;

/** A .safetensors file as the reference implementation lays it out: u64 header length, JSON padded with spaces, data in the order given. */
export function writeSafetensors(file: string, tensors: RawTensor[], metadata?: Record<string, string>): void {
  const header: Record<string, unknown> = metadata ? { __metadata__: metadata } : {};
  let offset = 0;
  for (const t of tensors) {
    const bytes = t.shape.reduce((a, b) => a * b, 1) * ELEMENT_BYTES[t.dtype];
    if (bytes !== t.data.length) throw new Error(`test helper: ${t.name} has ${t.data.length} bytes, shape says ${bytes}`);
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const length = Buffer.alloc(8);
  length.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, Buffer.concat([length, Buffer.from(json), ...tensors.map((t) => Buffer.from(t.data))]));
}

export function writeJson(file: string, value: unknown): void {
  fs.mkdirSync(path.dirname(file), { recursive: true });
  fs.writeFileSync(file, JSON.stringify(value, null, 2));
}

/** Row-major [rows, cols] of `elementBytes`-byte elements -> [cols, rows]. */
export function transpose(data: Uint8Array, rows: number, cols: number, elementBytes: number): Uint8Array {
  const out = new Uint8Array(data.length);
  for (let r = 0; r < rows; r++) {
    for (let c = 0; c < cols; c++) {
      const from = (r * cols + c) * elementBytes;
      out.set(data.subarray(from, from + elementBytes), (c * rows + r) * elementBytes);
    }
  }
  return out;
}

export interface TllmRecord {
  /** Stored dimensions: [rows, cols] for matrices, [n] for vectors. */
  dims: number[];
  data: Uint8Array;
}

/** The records of a TLLM file (§1.2): 36-byte header, then `u64 rows, u64 cols, f32…` / `u64 n, f32…`. */
export function tllmRecords(bytes: Buffer, layers: number): TllmRecord[] {
  const kinds = ['m', 'm', ...Array.from({ length: layers }, () => 'mmmmmvmvvvvv'.split('')).flat(), 'm'];
  const out: TllmRecord[] = [];
  let at = 36;
  for (const kind of kinds) {
    const dims = kind === 'm' ? [Number(bytes.readBigUInt64LE(at)), Number(bytes.readBigUInt64LE(at + 8))] : [Number(bytes.readBigUInt64LE(at))];
    at += 8 * dims.length;
    const n = dims.reduce((a, b) => a * b, 1) * 4;
    out.push({ dims, data: bytes.subarray(at, at + n) });
    at += n;
  }
  if (at !== bytes.length) throw new Error('test helper: TLLM records do not end at the end of the file');
  return out;
}

export interface MoonRecord {
  name: string;
  shape: number[];
  data: Uint8Array;
}

/** The records of a MOON v2 file (§2.2): 8-byte header, then `u32 name_len, u32 rank, u32 numel, name, u64 shape[], f16…` to EOF. */
export function moonRecords(bytes: Buffer): MoonRecord[] {
  const out: MoonRecord[] = [];
  let at = 8;
  while (at < bytes.length) {
    const nameLength = bytes.readUInt32LE(at);
    const rank = bytes.readUInt32LE(at + 4);
    const numel = bytes.readUInt32LE(at + 8);
    at += 12;
    const name = bytes.subarray(at, at + nameLength).toString('utf8');
    at += nameLength;
    const shape = Array.from({ length: rank }, (_, i) => Number(bytes.readBigUInt64LE(at + 8 * i)));
    at += 8 * rank;
    out.push({ name, shape, data: bytes.subarray(at, at + 2 * numel) });
    at += 2 * numel;
  }
  return out;
}

export interface EmbdTensor {
  name: string;
  dtype: number;
  shape: number[];
  data: Uint8Array;
}

/**
 * The tensors of an EMBD file (§3.5): 32-byte descriptors at `indexOffset` (u32 hash, u8 dtype,
 * u8 ndim, u16 name_length, u32 shape[4], u64 data_offset relative to `dataOffset`), then the names.
 */
export function embdTensors(bytes: Buffer, indexOffset: number, count: number, dataOffset: number): EmbdTensor[] {
  let names = indexOffset + 32 * count;
  return Array.from({ length: count }, (_, i) => {
    const d = indexOffset + 32 * i;
    const ndim = bytes[d + 5];
    const nameLength = bytes.readUInt16LE(d + 6);
    const shape = Array.from({ length: ndim }, (_, k) => bytes.readUInt32LE(d + 8 + 4 * k));
    const at = dataOffset + Number(bytes.readBigUInt64LE(d + 24));
    const name = bytes.subarray(names, names + nameLength).toString('utf8');
    names += nameLength;
    const size = shape.reduce((a, b) => a * b, 1) * [4, 2, 2, 4, 2, 1, 4, 2, 1][bytes[d + 4]];
    return { name, dtype: bytes[d + 4], shape, data: bytes.subarray(at, at + size) };
  });
}

/** Every file under `dir`, by path relative to it, sorted. */
export function listFiles(dir: string, base = dir): string[] {
  return fs
    .readdirSync(dir, { withFileTypes: true })
    .flatMap((e) => (e.isDirectory() ? listFiles(path.join(dir, e.name), base) : [path.relative(base, path.join(dir, e.name))]))
    .sort();
}

/** Whether two files hold the same bytes (with the first differing offset for the failure message). */
export function sameBytes(a: string, b: string): { file: string; firstDifference: number } {
  const x = fs.readFileSync(a);
  const y = fs.readFileSync(b);
  let i = 0;
  const n = Math.min(x.length, y.length);
  while (i < n && x[i] === y[i]) i++;
  return { file: path.basename(b), firstDifference: i === n && x.length === y.length ? -1 : i };
}
