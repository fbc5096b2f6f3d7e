/**
 * GGUF v2/v3 (FORMATS.md §7; ggml-org/ggml docs/gguf.md): "GGUF", u32 version, u64 tensor count,
 * u64 metadata count, typed key/values, tensor infos (name, u32 n_dims, u64 dims innermost first,
 * u32 ggml type, u64 offset relative to the data section), padding to `general.alignment`
 * (default 32), data. Little-endian only (a byte-swapped version is a big-endian file: UNSUPPORTED).
 *
 * Every metadata type is decoded: u8..i64, f32, f64, bool, string, arrays (numeric arrays become
 * typed arrays, 64-bit ints BigInt64Array/BigUint64Array, nested arrays plain arrays); scalar 64-bit
 * integers are numbers when safe, else bigints. Counts and lengths are checked against the bytes
 * left before anything is allocated.
 *
 * Tensors of type F32, F16, BF16, Q8_0 (dtype 'ggml_q8_0') and the block types Q4_0, Q4_1,
 * Q5_0, Q5_1, Q2_K..Q6_K, IQ4_NL, IQ4_XS, MXFP4 (dtype 'ggml_' + the lower-case name) become views; each
 * tensor's byte size follows from its block size and bytes per block and is checked against the
 * file. Every other known ggml type is validated the same way, listed in metadata['gguf.tensors']
 * with supported: false and left out of `tensors`; it is an UNSUPPORTED error only when the
 * architecture needs that tensor.
 *
 * Architectures: the decoder variants of lib/architectures/decoder.ts — `llama` (q/k rows in
 * llama.cpp's permuted Meta order: ropePairing 'interleaved'; `rope_freqs.weight` becomes
 * ropeFreqFactors; with `llama.attention.sliding_window`, which our writer adds for Mistral, it reads
 * as `mistral`), `qwen2` ('half', q/k/v biases), `qwen3` ('half', QK-norm) and `gemma3` (below) —
 * with llama.cpp names mapped to the canonical decoder names; other architectures, and vocabulary-only files (no
 * tensors), read as 'unknown' with their own tensor names. `tokenizer.ggml.*` becomes TokenizerData kind 'gguf'.
 * metadata holds every key/value, plus 'gguf.version', 'gguf.alignment', 'gguf.types' (the value
 * type of each key) and 'gguf.tensors' (every tensor info, supported or not). Writer: gguf-writer.ts.
 */
import { DECODER_VARIANTS, canonicalDecoderName, decoderArchitectureOfGguf, decoderFusedParts, expertStackShape, decoderTensorShapes, normWeightOffsetOf, variantScalars, variantFields, type ConfigKeys, type DecoderArchitecture, type DecoderConfig, type DecoderPooling, RERANK_HEAD } from '../../architectures/decoder';
import { mapFile, type MappedSource } from '../../addon/mapping';
import { native } from '../../addon/native';
import { GGML_BLOCK_LAYOUT, rowBlockView, type DType, type GgmlBlockDType, type ModelWeights, type TensorView, type TokenizerData } from '../../addon/weights';
import type { ModelConfig } from '../../architectures/model-config';
import { architectureOf } from '../../architectures';
import { isBertGguf } from '../../architectures/bert';
import { clipConfig, isClipGguf } from '../../architectures/clip';
import { bertCanonicalName, bertConfigFromGguf } from './gguf-bert';
import { isUtf8 } from 'node:buffer';
import { ByteCursor, checkLayerCount, checkNoOverlap, checkRange, fail } from './bytes';
import { GGUF_MAGIC } from './magic';
import { readUgmKeys } from './gguf-ugm-keys';
import type { Probe, ReadOptions } from '../types';
import { runNow, runYielding, type Steps } from '../../base/steps';
import { deferVocabularyWork } from '../../tokenizers/deferred-vocabulary';

export { GGUF_MAGIC, detectGguf } from './magic';
export const GGUF_DEFAULT_ALIGNMENT = 32;
const MAX_DIMS = 4;
const MAX_NESTING = 8;

export enum GgufValueType {
  UINT8 = 0,
  INT8 = 1,
  UINT16 = 2,
  INT16 = 3,
  UINT32 = 4,
  INT32 = 5,
  FLOAT32 = 6,
  BOOL = 7,
  STRING = 8,
  ARRAY = 9,
  UINT64 = 10,
  INT64 = 11,
  FLOAT64 = 12,
}

/** Value type names as metadata['gguf.types'] records them. */
export const GGUF_TYPE_NAMES: Readonly<Record<number, string>> = {
  0: 'u8', 1: 'i8', 2: 'u16', 3: 'i16', 4: 'u32', 5: 'i32', 6: 'f32', 7: 'bool', 8: 'string', 9: 'array', 10: 'u64', 11: 'i64', 12: 'f64',
};

/** Smallest encoded size of one value of each type (arrays: type + count; strings: length). */
const MIN_VALUE_BYTES: Record<number, number> = { 0: 1, 1: 1, 2: 2, 3: 2, 4: 4, 5: 4, 6: 4, 7: 1, 8: 8, 9: 12, 10: 8, 11: 8, 12: 8 };

export interface GgmlType {
  name: string;
  /** Elements per block. */
  blockSize: number;
  /** Bytes per block. */
  typeSize: number;
  /** Our dtype, when weightmap can use the tensor. */
  dtype?: DType;
}

function block(name: string, dtype: GgmlBlockDType): GgmlType {
  return { name, blockSize: GGML_BLOCK_LAYOUT[dtype].values, typeSize: GGML_BLOCK_LAYOUT[dtype].bytes, dtype };
}

/** ggml_type ids (ggml.h) with their block layout; removed ids (4, 5, 31-33, 36-38) are absent. */
export const GGML_TYPES: Readonly<Record<number, GgmlType>> = {
  0: { name: 'F32', blockSize: 1, typeSize: 4, dtype: 'f32' },
  1: { name: 'F16', blockSize: 1, typeSize: 2, dtype: 'f16' },
  2: block('Q4_0', 'ggml_q4_0'),
  3: block('Q4_1', 'ggml_q4_1'),
  6: block('Q5_0', 'ggml_q5_0'),
  7: block('Q5_1', 'ggml_q5_1'),
  8: { name: 'Q8_0', blockSize: 32, typeSize: 34, dtype: 'ggml_q8_0' },
  9: { name: 'Q8_1', blockSize: 32, typeSize: 36 },
  10: block('Q2_K', 'ggml_q2_k'),
  11: block('Q3_K', 'ggml_q3_k'),
  12: block('Q4_K', 'ggml_q4_k'),
  13: block('Q5_K', 'ggml_q5_k'),
  14: block('Q6_K', 'ggml_q6_k'),
  15: { name: 'Q8_K', blockSize: 256, typeSize: 292 },
  16: { name: 'IQ2_XXS', blockSize: 256, typeSize: 66 },
  17: { name: 'IQ2_XS', blockSize: 256, typeSize: 74 },
  18: { name: 'IQ3_XXS', blockSize: 256, typeSize: 98 },
  19: { name: 'IQ1_S', blockSize: 256, typeSize: 50 },
  20: block('IQ4_NL', 'ggml_iq4_nl'),
  21: { name: 'IQ3_S', blockSize: 256, typeSize: 110 },
  22: { name: 'IQ2_S', blockSize: 256, typeSize: 82 },
  23: block('IQ4_XS', 'ggml_iq4_xs'),
  24: { name: 'I8', blockSize: 1, typeSize: 1 },
  25: { name: 'I16', blockSize: 1, typeSize: 2 },
  26: { name: 'I32', blockSize: 1, typeSize: 4 },
  27: { name: 'I64', blockSize: 1, typeSize: 8 },
  28: { name: 'F64', blockSize: 1, typeSize: 8 },
  29: { name: 'IQ1_M', blockSize: 256, typeSize: 56 },
  30: { name: 'BF16', blockSize: 1, typeSize: 2, dtype: 'bf16' },
  34: { name: 'TQ1_0', blockSize: 256, typeSize: 54 },
  35: { name: 'TQ2_0', blockSize: 256, typeSize: 66 },
  39: block('MXFP4', 'ggml_mxfp4'),
};

/** The ggml_type id that stores a tensor of `dtype` as ggml blocks (ggml_q8_0, ggml_q4_k, ...), if any. */
export function ggmlBlockTypeId(dtype: DType): number | undefined {
  if (!dtype.startsWith('ggml_')) return undefined;
  const entry = Object.entries(GGML_TYPES).find(([, t]) => t.dtype === dtype);
  return entry ? Number(entry[0]) : undefined;
}

export interface GgufTensorInfo {
  /** The name in the file. */
  name: string;
  /** As stored: innermost (fastest-varying) first. */
  dims: number[];
  /** Our convention: outermost first (dims reversed). */
  shape: number[];
  ggmlType: number;
  typeName: string;
  /** Relative to the data section. */
  offset: number;
  /** Absolute. */
  byteOffset: number;
  byteLength: number;
  supported: boolean;
}

export interface GgufFile {
  version: number;
  metadata: Record<string, unknown>;
  /** The value type of every key (for strict lookups). */
  types: Record<string, GgufValueType>;
  /** The string arrays that metadata decodes on first read, by key. */
  lazy: Record<string, LazyStrings>;
  /** The same as names, arrays with their element type ('u32', 'string', 'array<f32>'), for writers. */
  typeNames: Record<string, string>;
  tensors: GgufTensorInfo[];
  alignment: number;
  dataOffset: number;
}

const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

function readString(cur: ByteCursor, what: string, code: 'BAD_NAME' | 'BAD_HEADER'): string {
  const at = cur.offset;
  const len = cur.u64(`the length of ${what}`);
  const view = cur.bytesView(len, what);
  try {
    return utf8.decode(view);
  } catch {
    return fail(code, `${what} is not valid UTF-8`, { path: cur.path, offset: at });
  }
}

/** A fresh, aligned copy of `n` little-endian elements as a typed array. */
function typedCopy<T>(cur: ByteCursor, n: number, size: number, make: (b: ArrayBuffer) => T, what: string): T {
  const view = cur.bytesView(n * size, what);
  const copy = new Uint8Array(n * size);
  copy.set(view);
  return make(copy.buffer);
}

/** String arrays this long (vocabularies, merges) are decoded on first use (LazyStrings). */
const LAZY_STRINGS = 4096;
/** Strings decoded between two checkpoints of LazyStrings.decodeSteps (well under a millisecond; see steps.ts). */
const DECODE_STEP = 2048;

/**
 * A long top-level array of strings: every length is bounds-checked now, the strings decoded when
 * first read. A 151k-token vocabulary takes ~100 ms to decode; loadModel hands the file to the
 * tokenizer worker, so this thread may never need it. The bytes are a view of the file, copied
 * (keepBytes) only when its mapping closes before they are decoded: Qwen3's vocabulary and merges
 * are 4.5 MB, ~4 ms to copy at every load. Invalid UTF-8 is found now when every string is shorter
 * than 128 bytes (then the length fields are ASCII and one check of the whole span decides), else
 * on first use.
 */
export class LazyStrings {
  private decoded: string[] | undefined;

  constructor(
    readonly length: number,
    private bytes: Buffer,
    private readonly base: number,
    private readonly what: string,
    private readonly path: string,
  ) {}

  strings(): string[] {
    return this.decoded ?? runNow(this.decodeSteps());
  }

  /** Copies the bytes out of the memory they view, unless the strings are decoded already. */
  keepBytes(): void {
    if (!this.decoded) this.bytes = Buffer.from(this.bytes);
  }

  /** strings() in slices (steps.ts), for the Promise APIs that need them all (conversions). */
  *decodeSteps(): Steps<string[]> {
    if (this.decoded) return this.decoded;
    const cur = new ByteCursor(this.bytes, this.path);
    const out = new Array<string>(this.length);
    for (let i = 0; i < this.length; i++) {
      if (i % DECODE_STEP === DECODE_STEP - 1) yield;
      const at = cur.offset;
      const len = cur.u64(`the length of ${this.what}[${i}]`);
      try {
        out[i] = utf8.decode(cur.bytesView(len, `${this.what}[${i}]`));
      } catch {
        fail('BAD_HEADER', `${this.what}[${i}] is not valid UTF-8`, { path: this.path, offset: this.base + at });
      }
    }
    return (this.decoded = out);
  }
}

/** A long top-level string array, every length checked now (in slices, steps.ts), decoded on first use. */
function* lazyStringsSteps(cur: ByteCursor, n: number, what: string, mapped: MappedSource | undefined): Steps<LazyStrings> {
  const b = cur.bytes;
  const start = cur.offset;
  const walk = { at: start, longest: 0 };
  for (let i = 0; i < n; i += LENGTH_STEP) {
    const fitting = skipStrings(b, cur.end, walk, Math.min(n - i, LENGTH_STEP));
    if (fitting < Math.min(n - i, LENGTH_STEP)) {
      cur.offset = walk.at;
      readString(cur, `${what}[${i + fitting}]`, 'BAD_HEADER'); // throws TRUNCATED / OUT_OF_BOUNDS
    }
    yield;
  }
  const at = walk.at;
  cur.offset = at;
  const lazy = new LazyStrings(n, b.subarray(start, at), start, what, cur.path);
  if (mapped) mapped.beforeClose(() => lazy.keepBytes());
  else lazy.keepBytes();
  if (walk.longest < 128 && !isUtf8(b.subarray(start, at))) lazy.strings(); // throws, naming the string
  return lazy;
}

/** String lengths checked between two checkpoints of lazyStringsSteps (well under a millisecond; see steps.ts). */
const LENGTH_STEP = 1 << 15;

/**
 * Steps `walk.at` over up to `count` strings (u64 length, little-endian, then the bytes) that fit
 * before `end`, keeping the longest length; returns how many fitted. In C++ (native skipRecords):
 * a 151k-string vocabulary and its merges walked in JS took ~10 ms of a fresh process's first
 * load, interpreted until V8 compiled the loop.
 */
function skipStrings(b: Uint8Array, end: number, walk: { at: number; longest: number }, count: number): number {
  const [at, walked, longest] = native().skipRecords(b, end, walk.at, count, 'u64-length');
  walk.at = at;
  walk.longest = Math.max(walk.longest, longest);
  return walked;
}

/** An array's element type and length, checked against what the file can hold. */
function readArrayHead(cur: ByteCursor, what: string, depth: number): { elemType: number; n: number } {
  const at = cur.offset;
  if (depth >= MAX_NESTING) fail('BAD_HEADER', `${what} nests arrays too deeply`, { path: cur.path, offset: at, expected: `<= ${MAX_NESTING}`, found: depth + 1 });
  const elemType = cur.u32(`the element type of ${what}`);
  if (MIN_VALUE_BYTES[elemType] === undefined) fail('BAD_HEADER', `${what} has an unknown element type`, { path: cur.path, offset: at, expected: '0..12', found: elemType });
  const countAt = cur.offset;
  const n = cur.u64(`the length of ${what}`);
  if (n * MIN_VALUE_BYTES[elemType] > cur.remaining) {
    fail('TRUNCATED', `${what} claims more elements than the file holds`, { path: cur.path, offset: countAt, expected: `<= ${Math.floor(cur.remaining / MIN_VALUE_BYTES[elemType])}`, found: n });
  }
  return { elemType, n };
}

/** A key's value; a long array of strings (a vocabulary, its merges) as LazyStrings, checked in slices. */
function* readKeyValueSteps(cur: ByteCursor, type: number, what: string, mapped: MappedSource | undefined): Steps<unknown> {
  if (type === GgufValueType.ARRAY) {
    const start = cur.offset;
    const { elemType, n } = readArrayHead(cur, what, 0);
    if (elemType === GgufValueType.STRING && n >= LAZY_STRINGS) return yield* lazyStringsSteps(cur, n, what, mapped);
    cur.offset = start;
  }
  return readValue(cur, type, what, 0);
}

function readValue(cur: ByteCursor, type: number, what: string, depth: number): unknown {
  const at = cur.offset;
  switch (type) {
    case GgufValueType.UINT8: return cur.u8(what);
    case GgufValueType.INT8: { const v = cur.u8(what); return v > 127 ? v - 256 : v; }
    case GgufValueType.UINT16: return cur.u16(what);
    case GgufValueType.INT16: { const v = cur.u16(what); return v > 32767 ? v - 65536 : v; }
    case GgufValueType.UINT32: return cur.u32(what);
    case GgufValueType.INT32: return cur.i32(what);
    case GgufValueType.FLOAT32: return cur.f32(what);
    case GgufValueType.FLOAT64: return cur.f64(what);
    case GgufValueType.BOOL: {
      const v = cur.u8(what);
      if (v > 1) fail('BAD_HEADER', `${what} is a bool that is neither 0 nor 1`, { path: cur.path, offset: at, expected: '0 | 1', found: v });
      return v === 1;
    }
    case GgufValueType.UINT64: {
      cur.need(8, what);
      const v = cur.bytes.readBigUInt64LE(cur.offset);
      cur.offset += 8;
      return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    case GgufValueType.INT64: {
      const v = cur.i64(what);
      return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= BigInt(Number.MIN_SAFE_INTEGER) ? Number(v) : v;
    }
    case GgufValueType.STRING: return readString(cur, what, 'BAD_HEADER');
    case GgufValueType.ARRAY: {
      const { elemType, n } = readArrayHead(cur, what, depth);
      switch (elemType) {
        case GgufValueType.UINT8: return typedCopy(cur, n, 1, (b) => new Uint8Array(b), what);
        case GgufValueType.INT8: return typedCopy(cur, n, 1, (b) => new Int8Array(b), what);
        case GgufValueType.UINT16: return typedCopy(cur, n, 2, (b) => new Uint16Array(b), what);
        case GgufValueType.INT16: return typedCopy(cur, n, 2, (b) => new Int16Array(b), what);
        case GgufValueType.UINT32: return typedCopy(cur, n, 4, (b) => new Uint32Array(b), what);
        case GgufValueType.INT32: return typedCopy(cur, n, 4, (b) => new Int32Array(b), what);
        case GgufValueType.FLOAT32: return typedCopy(cur, n, 4, (b) => new Float32Array(b), what);
        case GgufValueType.UINT64: return typedCopy(cur, n, 8, (b) => new BigUint64Array(b), what);
        case GgufValueType.INT64: return typedCopy(cur, n, 8, (b) => new BigInt64Array(b), what);
        case GgufValueType.FLOAT64: return typedCopy(cur, n, 8, (b) => new Float64Array(b), what);
        default: {
          const out: unknown[] = new Array(n);
          for (let i = 0; i < n; i++) out[i] = readValue(cur, elemType, `${what}[${i}]`, depth + 1);
          return out;
        }
      }
    }
    default:
      return fail('BAD_HEADER', `${what} has an unknown value type`, { path: cur.path, offset: at, expected: '0..12', found: type });
  }
}

/**
 * Parses and validates the header, metadata and tensor infos of a GGUF file held in `bytes`.
 * `mapped`: the mapping `bytes` views, if any; the long string arrays (LazyStrings) view it until
 * it closes. Without it they are copied now.
 */
export function parseGguf(bytes: Buffer, path: string, mapped?: MappedSource): GgufFile {
  return runNow(parseGgufSteps(bytes, path, mapped));
}

/** parseGguf in slices (steps.ts). */
export function* parseGgufSteps(bytes: Buffer, path: string, mapped?: MappedSource): Steps<GgufFile> {
  const cur = new ByteCursor(bytes, path);
  if (bytes.length < 4 || bytes.readUInt32LE(0) !== GGUF_MAGIC) {
    fail('BAD_MAGIC', 'not a GGUF file', { path, offset: 0, expected: '47 47 55 46 ("GGUF")', found: bytes.subarray(0, 4).toString('hex') });
  }
  cur.skip(4, 'the magic');
  const version = cur.u32('the version');
  if (version !== 2 && version !== 3) {
    const swapped = ((version & 0xff) << 24) | ((version >>> 8) & 0xff) << 16 | ((version >>> 16) & 0xff) << 8 | (version >>> 24);
    if (swapped === 2 || swapped === 3) fail('UNSUPPORTED', 'big-endian GGUF', { path, offset: 4, expected: 'little-endian', found: 'big-endian' });
    fail('BAD_VERSION', 'unsupported GGUF version', { path, offset: 4, expected: '2 or 3', found: version });
  }
  const countsAt = cur.offset;
  const nTensors = cur.u64('the tensor count');
  const nKv = cur.u64('the metadata count');
  // Each tensor info takes at least 8+4+4+8 bytes, each key/value at least 8+4+1.
  if (nTensors * 24 > cur.remaining || nKv * 13 > cur.remaining) {
    fail('TRUNCATED', 'the header counts more tensors or keys than the file can hold', { path, offset: countsAt, expected: `<= ${Math.floor(cur.remaining / 13)}`, found: `${nTensors} tensors, ${nKv} keys` });
  }

  const metadata: Record<string, unknown> = {};
  const types: Record<string, GgufValueType> = {};
  const typeNames: Record<string, string> = {};
  const lazy: Record<string, LazyStrings> = {};
  for (let i = 0; i < nKv; i++) {
    const at = cur.offset;
    const key = readString(cur, `metadata key ${i}`, 'BAD_NAME');
    if (key.length === 0) fail('BAD_NAME', 'empty metadata key', { path, offset: at });
    if (Object.prototype.hasOwnProperty.call(types, key)) fail('BAD_NAME', `duplicate metadata key '${key}'`, { path, offset: at });
    const type = cur.u32(`the type of '${key}'`);
    const elemType = type === GgufValueType.ARRAY && cur.remaining >= 4 ? bytes.readUInt32LE(cur.offset) : undefined;
    const value = yield* readKeyValueSteps(cur, type, `'${key}'`, mapped);
    typeNames[key] = elemType === undefined ? GGUF_TYPE_NAMES[type] : `array<${GGUF_TYPE_NAMES[elemType]}>`;
    if (value instanceof LazyStrings) {
      lazy[key] = value;
      Object.defineProperty(metadata, key, {
        get: () => value.strings(),
        set: (v) => Object.defineProperty(metadata, key, { value: v, enumerable: true, writable: true, configurable: true }),
        enumerable: true,
        configurable: true,
      });
    } else {
      Object.defineProperty(metadata, key, { value, enumerable: true, writable: true, configurable: true });
    }
    types[key] = type;
  }

  let alignment = GGUF_DEFAULT_ALIGNMENT;
  if ('general.alignment' in types) {
    const a = metadata['general.alignment'];
    if (types['general.alignment'] !== GgufValueType.UINT32 || typeof a !== 'number' || a === 0 || (a & (a - 1)) !== 0) {
      fail('BAD_HEADER', 'general.alignment must be a u32 power of two', { path, expected: 'u32 power of two', found: a });
    }
    alignment = a as number;
  }

  const infos: Omit<GgufTensorInfo, 'byteOffset'>[] = [];
  const names = new Set<string>();
  for (let i = 0; i < nTensors; i++) {
    const at = cur.offset;
    const name = readString(cur, `the name of tensor ${i}`, 'BAD_NAME');
    if (name.length === 0 || names.has(name)) fail('BAD_NAME', name.length === 0 ? 'empty tensor name' : `duplicate tensor name '${name}'`, { path, offset: at });
    names.add(name);
    const nDims = cur.u32(`the rank of '${name}'`);
    if (nDims > MAX_DIMS) fail('BAD_HEADER', `tensor '${name}' has too many dimensions`, { path, offset: cur.offset - 4, expected: `<= ${MAX_DIMS}`, found: nDims });
    const dims: number[] = [];
    for (let d = 0; d < nDims; d++) dims.push(cur.u64(`dimension ${d} of '${name}'`));
    const typeAt = cur.offset;
    const ggmlType = cur.u32(`the type of '${name}'`);
    const type = GGML_TYPES[ggmlType];
    if (!type) fail('BAD_DTYPE', `tensor '${name}' has an unknown ggml type`, { path, offset: typeAt, expected: Object.keys(GGML_TYPES).join(','), found: ggmlType });
    const offset = cur.u64(`the offset of '${name}'`);
    const elements = dims.reduce((a, b) => a * b, 1);
    if (!Number.isSafeInteger(elements)) fail('OUT_OF_BOUNDS', `tensor '${name}' is absurdly large`, { path, offset: at, found: dims });
    if ((dims[0] ?? 1) % type.blockSize !== 0) {
      fail('SHAPE_MISMATCH', `tensor '${name}' has a row length that is not a multiple of its ${type.name} block`, { path, offset: at, expected: `multiple of ${type.blockSize}`, found: dims[0] });
    }
    if (offset % alignment !== 0) fail('BAD_HEADER', `tensor '${name}' is not aligned`, { path, offset: at, expected: `multiple of ${alignment}`, found: offset });
    infos.push({
      name,
      dims,
      shape: [...dims].reverse(),
      ggmlType,
      typeName: type.name,
      offset,
      byteLength: (elements / type.blockSize) * type.typeSize,
      supported: type.dtype !== undefined,
    });
  }

  const dataOffset = Math.ceil(cur.offset / alignment) * alignment;
  const tensors: GgufTensorInfo[] = infos.map((t) => {
    const byteOffset = dataOffset + t.offset;
    checkRange(path, byteOffset, t.byteLength, mapped?.byteLength ?? bytes.length, `the data of tensor '${t.name}'`);
    return { ...t, byteOffset };
  });
  checkNoOverlap(path, tensors.map((t) => ({ name: t.name, byteOffset: t.byteOffset, byteLength: t.byteLength })));
  return { version, metadata, types, typeNames, lazy, tensors, alignment, dataOffset };
}

// ---------------------------------------------------------------------------------------------
// Architectures

export { canonicalDecoderName, ggufTensorName } from '../../architectures/decoder/gguf-names';

/** The float32 `x` as the shortest decimal that reads back to the same float32 (1e-5, not 9.99999974e-6). */
export function shortestF32(x: number): number {
  const f = Math.fround(x);
  for (let p = 1; p <= 9; p++) {
    const v = Number(f.toPrecision(p));
    if (Math.fround(v) === f) return v;
  }
  return f;
}

class Kv {
  constructor(
    readonly file: GgufFile,
    readonly path: string,
  ) {}

  private wrong(key: string, expected: string): never {
    return fail('BAD_HEADER', `metadata '${key}' has the wrong type`, { path: this.path, expected, found: this.file.metadata[key] });
  }

  has(key: string): boolean {
    return key in this.file.types;
  }

  /** An integer key ≥ min (any integer value type). */
  int(key: string, fallback?: number, min = 1): number {
    if (!this.has(key)) {
      if (fallback === undefined) return fail('CONFIG_MISMATCH', `metadata '${key}' is missing`, { path: this.path, expected: key, found: 'absent' });
      return fallback;
    }
    const v = this.file.metadata[key];
    if (Array.isArray(v) || ArrayBuffer.isView(v)) return fail('UNSUPPORTED', `per-layer values for '${key}'`, { path: this.path, found: 'an array' });
    if (typeof v !== 'number' || !Number.isInteger(v)) this.wrong(key, 'an integer');
    if ((v as number) < min || (v as number) > 0x7fffffff) fail('CONFIG_MISMATCH', `metadata '${key}' is out of range`, { path: this.path, expected: `${min}..2^31-1`, found: v });
    return v as number;
  }

  float(key: string, fallback: number): number {
    if (!this.has(key)) return fallback;
    const v = this.file.metadata[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.wrong(key, 'a number');
    if ((v as number) <= 0) fail('CONFIG_MISMATCH', `metadata '${key}' must be positive`, { path: this.path, expected: '> 0', found: v });
    return this.file.types[key] === GgufValueType.FLOAT32 ? shortestF32(v as number) : (v as number);
  }

  str(key: string): string | undefined {
    if (!this.has(key)) return undefined;
    const v = this.file.metadata[key];
    if (typeof v !== 'string') this.wrong(key, 'a string');
    return v as string;
  }

  /** A key's value as read (undefined when absent). */
  value(key: string): unknown {
    return this.has(key) ? this.file.metadata[key] : undefined;
  }

  bool(key: string): boolean | undefined {
    if (!this.has(key)) return undefined;
    const v = this.file.metadata[key];
    if (typeof v !== 'boolean') this.wrong(key, 'a bool');
    return v as boolean;
  }
}

/** Llama 3's RoPE factors from `rope_freqs.weight` (F32 [headDim / 2]), or undefined when absent. */
function ropeFreqFactors(bytes: Buffer, path: string, info: GgufTensorInfo | undefined, headDim: number): number[] | undefined {
  if (!info) return undefined;
  if (info.typeName !== 'F32' || info.shape.length !== 1 || info.shape[0] !== headDim / 2) {
    fail('SHAPE_MISMATCH', "'rope_freqs.weight' must be F32 with one factor per RoPE pair", { path, offset: info.byteOffset, expected: `F32 [${headDim / 2}]`, found: `${info.typeName} [${info.shape.join(', ')}]` });
  }
  const factors: number[] = [];
  for (let i = 0; i < headDim / 2; i++) {
    const f = bytes.readFloatLE(info.byteOffset + 4 * i);
    if (!(f > 0) || !Number.isFinite(f)) fail('CONFIG_MISMATCH', "'rope_freqs.weight' holds a factor that is not positive and finite", { path, offset: info.byteOffset + 4 * i, expected: '> 0', found: f });
    factors.push(f);
  }
  return factors;
}

/** A GGUF file's `<prefix>.` keys as a family's hooks read them (ConfigKeys). */
function prefixedKeys(kv: Kv, prefix: string): ConfigKeys {
  const key = (k: string) => `${prefix}.${k}`;
  return {
    path: kv.path,
    name: key,
    has: (k) => kv.has(key(k)),
    int: (k, fallback, min) => kv.int(key(k), fallback, min),
    num: (k, fallback) => kv.float(key(k), fallback),
    raw: (k) => kv.file.metadata[key(k)],
    nested: () => undefined,
    fail: (code, message, details = {}) => fail(code, message, { path: kv.path, ...details }),
  };
}

function decoderConfig(kv: Kv, bytes: Buffer, architecture: DecoderArchitecture, byName: Map<string, GgufTensorInfo>, tokenizer: TokenizerData | undefined): DecoderConfig {
  const path = kv.path;
  const variant = DECODER_VARIANTS[architecture];
  // The prefix of the hyperparameter keys.
  // The variant's, or its embedding models' (EmbeddingGemma's gemma-embedding: bidirectional).
  const embedding = variant.ggufEmbeddingArchitecture !== undefined && kv.str('general.architecture') === variant.ggufEmbeddingArchitecture;
  const arch = embedding ? variant.ggufEmbeddingArchitecture! : variant.ggufArchitecture;
  const hiddenSize = kv.int(`${arch}.embedding_length`);
  const numHeads = kv.int(`${arch}.attention.head_count`);
  const numKvHeads = kv.int(`${arch}.attention.head_count_kv`, numHeads);
  if (numHeads % numKvHeads !== 0) fail('CONFIG_MISMATCH', 'head_count is not a multiple of head_count_kv', { path, expected: `multiple of ${numKvHeads}`, found: numHeads });
  let headDim: number;
  if (kv.has(`${arch}.attention.key_length`)) headDim = kv.int(`${arch}.attention.key_length`);
  else {
    if (hiddenSize % numHeads !== 0) fail('CONFIG_MISMATCH', 'embedding_length is not a multiple of head_count', { path, expected: `multiple of ${numHeads}`, found: hiddenSize });
    headDim = hiddenSize / numHeads;
  }
  if (kv.has(`${arch}.attention.value_length`) && kv.int(`${arch}.attention.value_length`) !== headDim) {
    fail('UNSUPPORTED', 'value_length different from key_length', { path, expected: headDim, found: kv.int(`${arch}.attention.value_length`) });
  }
  const ropeDim = kv.int(`${arch}.rope.dimension_count`, headDim);
  if (ropeDim > headDim || ropeDim % 2 !== 0) fail('CONFIG_MISMATCH', 'rope.dimension_count must be even and at most the head dim', { path, expected: `even, <= ${headDim}`, found: ropeDim });
  if (headDim % 2 !== 0) fail('CONFIG_MISMATCH', 'the head dim must be even for RoPE', { path, expected: 'even', found: headDim });

  const embd = byName.get('token_embd.weight');
  if (!embd) fail('MISSING_TENSOR', "the model has no 'token_embd.weight'", { path });
  const vocabSize = embd.shape[0];
  if (kv.has(`${arch}.vocab_size`) && kv.int(`${arch}.vocab_size`) !== vocabSize) {
    fail('CONFIG_MISMATCH', 'vocab_size disagrees with token_embd.weight', { path, expected: vocabSize, found: kv.int(`${arch}.vocab_size`) });
  }
  const config: DecoderConfig = {
    architecture,
    hiddenSize,
    intermediateSize: kv.int(`${arch}.feed_forward_length`),
    numLayers: kv.int(`${arch}.block_count`),
    numHeads,
    numKvHeads,
    headDim,
    vocabSize,
    maxSeqLen: kv.int(`${arch}.context_length`),
    rmsNormEps: kv.float(`${arch}.attention.layer_norm_rms_epsilon`, variant.ggufDefaultEps),
    ropeTheta: kv.float(`${arch}.rope.freq_base`, 10000),
    ropePairing: variant.ggufRopePairing,
    tieWordEmbeddings: !byName.has('output.weight'),
    ...variantFields(architecture, hiddenSize),
  };
  // llama.cpp's converter stores norm weights that scale by (1 + w) as 1 + w (conversion/gemma.py,
  // Gemma3Model.norm_shift: 1.0 for every tensor whose name ends in "norm.weight").
  const normWeightOffset = normWeightOffsetOf(architecture, 'gguf');
  if (normWeightOffset !== undefined) config.normWeightOffset = normWeightOffset;
  variant.hooks?.fromGguf?.(prefixedKeys(kv, arch), config);
  const pooling = decoderPooling(kv, arch, byName.get(RERANK_HEAD), hiddenSize);
  if (pooling) config.pooling = pooling;
  if (embedding) config.bidirectional = true;
  // RoPE scaling: a family's hook reads the kinds it has (gpt-oss's YaRN); any other is refused.
  const scaling = kv.str(`${arch}.rope.scaling.type`);
  if (scaling !== undefined && scaling !== 'none' && config.ropeYarnFactor === undefined) fail('UNSUPPORTED', `rope scaling '${scaling}'`, { path, found: scaling });
  if (ropeDim !== headDim) config.ropeDim = ropeDim;
  for (const s of variantScalars(architecture)) if (kv.has(`${arch}.${s.gguf}`)) config[s.field] = kv.float(`${arch}.${s.gguf}`, 1);
  const factors = ropeFreqFactors(bytes, path, byName.get('rope_freqs.weight'), headDim);
  if (factors) config.ropeFreqFactors = factors;
  if (tokenizer?.kind === 'gguf') {
    if (tokenizer.bosId !== undefined) config.bosTokenId = tokenizer.bosId;
    const stops = ggufStopIds(kv, tokenizer);
    if (stops.length > 0) config.eosTokenIds = stops;
  }
  return config;
}

/** llama.cpp's pooling types (LLAMA_POOLING_TYPE_*) a decoder can have: NONE (a text model), MEAN, LAST, RANK. */
const DECODER_POOLING_TYPES: Record<number, DecoderPooling | undefined> = { 0: undefined, 1: 'mean', 3: 'last', 4: 'rank' };

/**
 * `<arch>.pooling_type` as DecoderConfig.pooling: a RANK model (Qwen3-Reranker as llama.cpp's
 * converter writes it) must hold its yes/no rows, `cls.output.weight` [2, hidden].
 */
function decoderPooling(kv: Kv, arch: string, head: GgufTensorInfo | undefined, hiddenSize: number): DecoderPooling | undefined {
  const key = `${arch}.pooling_type`;
  if (!kv.has(key)) return undefined;
  const type = kv.int(key, undefined, 0);
  if (!(type in DECODER_POOLING_TYPES)) fail('UNSUPPORTED', `pooling type ${type} for a decoder`, { path: kv.path, expected: '0 (none), 1 (mean), 3 (last) or 4 (rank)', found: type });
  const pooling = DECODER_POOLING_TYPES[type];
  if (pooling !== 'rank') return pooling;
  if (!head) fail('MISSING_TENSOR', `a rank-pooling ${arch} model needs ${RERANK_HEAD} (its "yes" and "no" rows)`, { path: kv.path, expected: RERANK_HEAD, found: 'absent' });
  if (head.shape.length !== 2 || head.shape[0] !== 2 || head.shape[1] !== hiddenSize) {
    fail('SHAPE_MISMATCH', `tensor '${RERANK_HEAD}' is not the two rows of a yes/no head`, { path: kv.path, offset: head.byteOffset, expected: [2, hiddenSize], found: head.shape });
  }
  return pooling;
}

/**
 * The ids that end generation as the file's keys name them: EOS, then end-of-turn and
 * end-of-message (llama.cpp's eot/eom; the GGUF writer keeps an HF config's further EOS ids there).
 */
function ggufStopIds(kv: Kv, tokenizer: Extract<TokenizerData, { kind: 'gguf' }>): number[] {
  const out = tokenizer.eosId === undefined ? [] : [tokenizer.eosId];
  for (const key of ['tokenizer.ggml.eot_token_id', 'tokenizer.ggml.eom_token_id']) {
    if (!kv.has(key)) continue;
    const raw = kv.file.metadata[key];
    if (typeof raw !== 'number' || !Number.isInteger(raw)) fail('BAD_HEADER', `'${key}' is not a token id`, { path: kv.path, found: raw });
    // As for the other ids: outside the vocabulary means none.
    if (raw >= 0 && raw < tokenizer.tokens.length && !out.includes(raw)) out.push(raw);
  }
  return out;
}

function tokenizerOf(kv: Kv): TokenizerData | undefined {
  const meta = kv.file.metadata;
  const path = kv.path;
  if (!kv.has('tokenizer.ggml.tokens')) return undefined;
  // The string arrays are read through `meta` when first used: a long one decodes then (LazyStrings).
  const lazy: LazyStrings[] = [];
  const strings = (key: string): { n: number; get: () => string[] } => {
    const l = kv.file.lazy[key];
    if (l !== undefined) {
      lazy.push(l);
      return { n: l.length, get: () => meta[key] as string[] };
    }
    const value = meta[key];
    if (!Array.isArray(value) || !value.every((t) => typeof t === 'string')) fail('BAD_HEADER', `'${key}' is not an array of strings`, { path });
    return { n: value.length, get: () => value as string[] };
  };
  const tokens = strings('tokenizer.ggml.tokens');
  const n = tokens.n;
  const out: Extract<TokenizerData, { kind: 'gguf' }> = {
    kind: 'gguf',
    model: kv.str('tokenizer.ggml.model') ?? 'llama',
    get tokens() {
      return tokens.get();
    },
  };
  const pre = kv.str('tokenizer.ggml.pre');
  if (pre !== undefined) out.pre = pre;
  if (kv.has('tokenizer.ggml.scores')) {
    const s = meta['tokenizer.ggml.scores'];
    if (!(s instanceof Float32Array) || s.length !== n) fail('BAD_HEADER', "'tokenizer.ggml.scores' is not an f32 array with one score per token", { path, expected: n, found: ArrayBuffer.isView(s) ? (s as Float32Array).length : typeof s });
    out.scores = s as Float32Array;
  }
  if (kv.has('tokenizer.ggml.token_type')) {
    const t = meta['tokenizer.ggml.token_type'];
    if (!(t instanceof Int32Array) || t.length !== n) fail('BAD_HEADER', "'tokenizer.ggml.token_type' is not an i32 array with one type per token", { path, expected: n, found: ArrayBuffer.isView(t) ? (t as Int32Array).length : typeof t });
    out.tokenTypes = t as Int32Array;
  }
  if (kv.has('tokenizer.ggml.merges')) {
    const merges = strings('tokenizer.ggml.merges');
    Object.defineProperty(out, 'merges', { get: merges.get, enumerable: true, configurable: true });
  }
  // Ids outside the vocabulary (llama.cpp writes 0xFFFFFFFF, some writers -1, for "none") mean absent.
  const ids: [keyof typeof out, string][] = [
    ['bosId', 'bos_token_id'], ['eosId', 'eos_token_id'], ['unkId', 'unknown_token_id'], ['padId', 'padding_token_id'],
    ['clsId', 'cls_token_id'], ['sepId', 'seperator_token_id'], ['maskId', 'mask_token_id'], // llama.cpp's spelling
  ];
  for (const [field, key] of ids) {
    if (!kv.has(`tokenizer.ggml.${key}`)) continue;
    const raw = meta[`tokenizer.ggml.${key}`];
    if (typeof raw !== 'number' || !Number.isInteger(raw)) fail('BAD_HEADER', `'tokenizer.ggml.${key}' is not a token id`, { path, found: raw });
    const v = raw >= 0 && raw < n ? raw : undefined;
    if (v !== undefined) (out as Record<string, unknown>)[field] = v;
  }
  const addBos = kv.bool('tokenizer.ggml.add_bos_token');
  if (addBos !== undefined) out.addBos = addBos;
  const addEos = kv.bool('tokenizer.ggml.add_eos_token');
  if (addEos !== undefined) out.addEos = addEos;
  // Gemma's SentencePiece vocabulary has none: a writer that dropped it would tokenize with a space in front.
  const addSpacePrefix = kv.bool('tokenizer.ggml.add_space_prefix');
  if (addSpacePrefix !== undefined) out.addSpacePrefix = addSpacePrefix;
  readUgmKeys(meta, path, out);
  deferVocabularyWork(out, function* () {
    for (const strings of lazy) yield* strings.decodeSteps();
  });
  return out;
}

function supportedTypeNames(): string {
  return Object.values(GGML_TYPES).filter((t) => t.dtype).map((t) => t.name).join(', ');
}

function viewOf(src: MappedSource, info: GgufTensorInfo, name: string): TensorView {
  return { name, dtype: GGML_TYPES[info.ggmlType].dtype!, shape: info.shape, source: src, byteOffset: info.byteOffset, byteLength: info.byteLength };
}

function build(src: MappedSource, file: GgufFile): Omit<ModelWeights, 'path' | 'sources'> {
  const path = src.path;
  const kv = new Kv(file, path);
  const arch = kv.str('general.architecture');
  const tokenizer = tokenizerOf(kv);
  const metadata: Record<string, unknown> = {
    'gguf.version': file.version,
    'gguf.alignment': file.alignment,
    'gguf.types': file.typeNames,
    'gguf.tensors': file.tensors.map(({ name, shape, typeName, ggmlType, offset, byteOffset, byteLength, supported }) => ({ name, shape, type: typeName, ggmlType, offset, byteOffset, byteLength, supported })),
  };
  // Copied as property descriptors: a spread would decode the long string arrays now.
  Object.defineProperties(metadata, Object.getOwnPropertyDescriptors(file.metadata));
  const common = { format: 'gguf' as const, metadata, ...(tokenizer ? { tokenizer } : {}) };

  const architecture = decoderArchitectureOfGguf(arch, typeof arch === 'string' ? prefixedKeys(kv, arch) : undefined);
  if (architecture && file.tensors.length > 0) {
    const byName = new Map(file.tensors.map((t) => [t.name, t]));
    const config = decoderConfig(kv, src.bytes, architecture, byName, tokenizer);
    const sandwich = config.sandwichNorms === true;
    const fused = DECODER_VARIANTS[config.architecture].fused;
    const partsOf = decoderFusedParts(config);
    checkLayerCount(`metadata '${arch}.block_count'`, config.numLayers, file.tensors.length, { path });
    // Each tensor as its canonical views: a fused one as views of its row blocks.
    const canonical = new Map<string, { t: GgufTensorInfo; view?: TensorView }>();
    const tensors: TensorView[] = [];
    for (const t of file.tensors) {
      const name = canonicalDecoderName(t.name, sandwich, fused);
      const layer = /^blk\.(\d+)\./.exec(t.name);
      if (name !== undefined && layer && Number(layer[1]) >= config.numLayers) {
        fail('CONFIG_MISMATCH', `tensor '${t.name}' belongs to a layer past block_count`, { path, offset: t.byteOffset, expected: `< ${config.numLayers}`, found: Number(layer[1]) });
      }
      const view = t.supported ? viewOf(src, t, name ?? t.name) : undefined;
      const parts = name === undefined ? undefined : partsOf(name);
      if (!parts) {
        if (name !== undefined) canonical.set(name, { t, view });
        if (view) tensors.push(view);
        continue;
      }
      const rows = parts.reduce((n, p) => n + p.rows, 0);
      // Stacked experts [numExperts, rows, cols], viewed as [numExperts · rows, cols].
      const stacked = expertStackShape(config, name!);
      if (stacked && (t.shape.length !== 3 || t.shape.some((v, i) => v !== stacked[i]))) fail('SHAPE_MISMATCH', `tensor '${t.name}' disagrees with the metadata`, { path, offset: t.byteOffset, expected: stacked, found: t.shape });
      if (!stacked && (t.shape.length !== 2 || t.shape[0] !== rows)) fail('SHAPE_MISMATCH', `tensor '${t.name}' disagrees with the metadata`, { path, offset: t.byteOffset, expected: `[${rows}, ...]`, found: t.shape });
      const whole = view && stacked ? { ...view, shape: [stacked[0] * stacked[1], stacked[2]] } : view;
      for (const p of parts) {
        const partView = whole && rowBlockView(whole, p.name, p.row0, p.rows);
        canonical.set(p.name, { t, view: partView });
        if (partView) tensors.push(partView);
      }
    }
    for (const spec of decoderTensorShapes(config)) {
      const found = canonical.get(spec.name);
      if (!found) fail('MISSING_TENSOR', `the ${arch} model has no tensor for '${spec.name}'`, { path, expected: spec.name, found: 'absent' });
      const { t, view } = found;
      const shape = view?.shape ?? t.shape;
      if (shape.length !== spec.shape.length || shape.some((v, i) => v !== spec.shape[i])) {
        fail('SHAPE_MISMATCH', `tensor '${t.name}' disagrees with the metadata`, { path, offset: t.byteOffset, expected: spec.shape, found: shape });
      }
      if (!view) fail('UNSUPPORTED', `tensor '${t.name}' has ggml type ${t.typeName}, which weightmap does not read`, { path, offset: t.byteOffset, expected: supportedTypeNames(), found: t.typeName });
    }
    return { ...common, architecture: config.architecture, config, tensors };
  }
  if (isBertGguf(arch) && file.tensors.length > 0) return { ...common, ...bertWeights(src, file, kv) };
  if (isClipGguf(arch)) return { ...common, ...clipWeights(src, file, kv) };
  const config: ModelConfig = { architecture: 'unknown' };
  return { ...common, architecture: 'unknown', config, tensors: file.tensors.filter((t) => t.supported).map((t) => viewOf(src, t, t.name)) };
}

/** A llama.cpp BERT (embedder or cross-encoder, gguf-bert.ts): its config and its tensors under their canonical names. */
function bertWeights(src: MappedSource, file: GgufFile, kv: Kv): Pick<ModelWeights, 'architecture' | 'config' | 'tensors'> {
  const path = src.path;
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  const arch = kv.str('general.architecture');
  const config = bertConfigFromGguf(kv, (name) => byName.get(name)?.shape, path, arch);
  checkLayerCount(`metadata '${arch}.block_count'`, config.numLayers, file.tensors.length, { path });
  const entry = architectureOf(config)!;
  const fused = entry.fusedParts?.(config);
  // Each canonical tensor: its file tensor, and its view (a fused attn_qkv's row blocks, in place).
  const canonical = new Map<string, { t: GgufTensorInfo; shape: number[] }>();
  const tensors: TensorView[] = [];
  for (const t of file.tensors) {
    const name = bertCanonicalName(t.name);
    const layer = /^blk\.(\d+)\./.exec(t.name);
    if (name !== undefined && layer && Number(layer[1]) >= config.numLayers) {
      fail('CONFIG_MISMATCH', `tensor '${t.name}' belongs to a layer past block_count`, { path, offset: t.byteOffset, expected: `< ${config.numLayers}`, found: Number(layer[1]) });
    }
    const parts = name === undefined ? undefined : fused?.(name);
    if (parts) {
      const rows = parts.reduce((n, p) => n + p.rows, 0);
      if (t.shape.length !== 2 || t.shape[0] !== rows) fail('SHAPE_MISMATCH', `tensor '${t.name}' disagrees with the metadata`, { path, offset: t.byteOffset, expected: `[${rows}, ${config.hiddenSize}]`, found: t.shape });
      if (!t.supported) fail('UNSUPPORTED', `tensor '${t.name}' has ggml type ${t.typeName}, which weightmap does not read`, { path, offset: t.byteOffset, expected: supportedTypeNames(), found: t.typeName });
      const whole = viewOf(src, t, name!);
      for (const p of parts) {
        const view = rowBlockView(whole, p.name, p.row0, p.rows);
        if (!view) fail('UNSUPPORTED', `tensor '${t.name}' cannot be split into its parts in place`, { path, offset: t.byteOffset, found: t.typeName });
        canonical.set(p.name, { t, shape: view.shape });
        tensors.push(view);
      }
      continue;
    }
    if (name !== undefined) canonical.set(name, { t, shape: t.shape });
    if (t.supported) tensors.push(viewOf(src, t, name ?? t.name));
  }
  for (const spec of entry.tensors(config)) {
    const found = canonical.get(spec.name);
    if (!found) {
      if (spec.optional) continue;
      fail('MISSING_TENSOR', `the BERT model has no tensor for '${spec.name}'`, { path, expected: spec.name, found: 'absent' });
    }
    const { t, shape } = found;
    if (shape.length !== spec.shape.length || shape.some((v, i) => v !== spec.shape[i])) {
      fail('SHAPE_MISMATCH', `tensor '${t.name}' disagrees with the metadata`, { path, offset: t.byteOffset, expected: spec.shape, found: shape });
    }
    if (!t.supported) fail('UNSUPPORTED', `tensor '${t.name}' has ggml type ${t.typeName}, which weightmap does not read`, { path, offset: t.byteOffset, expected: supportedTypeNames(), found: t.typeName });
  }
  return { architecture: config.architecture, config, tensors };
}

/**
 * An mmproj (lib/architectures/clip): its config from the `clip.*` keys and its tensors under
 * llama.cpp's names, every one the projector type needs present with its shape and a dtype read.
 */
function clipWeights(src: MappedSource, file: GgufFile, kv: Kv): Pick<ModelWeights, 'architecture' | 'config' | 'tensors'> {
  const path = src.path;
  const byName = new Map(file.tensors.map((t) => [t.name, t]));
  const keys = {
    path,
    has: (k: string) => kv.has(k),
    int: (k: string, fallback?: number, min?: number) => kv.int(k, fallback, min),
    float: (k: string, fallback: number) => kv.float(k, fallback),
    str: (k: string) => kv.str(k),
    bool: (k: string) => kv.bool(k),
    value: (k: string) => kv.value(k),
    fail: (code: 'CONFIG_MISMATCH' | 'UNSUPPORTED' | 'MISSING_TENSOR', message: string, details: { expected?: unknown; found?: unknown } = {}): never => fail(code, message, { path, ...details }),
  };
  const config = clipConfig(keys, byName.get('v.blk.0.ffn_down.weight')?.shape);
  checkLayerCount("metadata 'clip.vision.block_count'", config.numLayers, file.tensors.length, { path });
  for (const t of file.tensors) {
    const layer = /^v\.blk\.(\d+)\./.exec(t.name);
    if (layer && Number(layer[1]) >= config.numLayers) {
      fail('CONFIG_MISMATCH', `tensor '${t.name}' belongs to a layer past block_count`, { path, offset: t.byteOffset, expected: `< ${config.numLayers}`, found: Number(layer[1]) });
    }
  }
  for (const spec of architectureOf(config)!.tensors(config)) {
    const t = byName.get(spec.name);
    if (!t) fail('MISSING_TENSOR', `the mmproj has no tensor '${spec.name}'`, { path, expected: spec.name, found: 'absent' });
    if (t.shape.length !== spec.shape.length || t.shape.some((v, i) => v !== spec.shape[i])) {
      fail('SHAPE_MISMATCH', `tensor '${t.name}' disagrees with the metadata`, { path, offset: t.byteOffset, expected: spec.shape, found: t.shape });
    }
    if (!t.supported) fail('UNSUPPORTED', `tensor '${t.name}' has ggml type ${t.typeName}, which weightmap does not read`, { path, offset: t.byteOffset, expected: supportedTypeNames(), found: t.typeName });
  }
  return { architecture: config.architecture, config, tensors: file.tensors.filter((t) => t.supported).map((t) => viewOf(src, t, t.name)) };
}

/** Starts native prefaultGgufWeights over `src`; it only saves time, so nothing it does fails the read. */
function startPrefault(src: MappedSource): void {
  try {
    native().prefaultGgufWeights(src.file).catch(() => undefined);
  } catch {
    // an addon built before prefaultGgufWeights existed
  }
}

export async function readGguf(path: string, options: ReadOptions = {}): Promise<ModelWeights> {
  const src = mapFile(path);
  if (options.prefaultWeights) startPrefault(src);
  try {
    const file = await runYielding(parseGgufSteps(src.bytes, path, src));
    return { ...build(src, file), path, sources: [src] };
  } catch (error) {
    src.close();
    throw error;
  }
}

