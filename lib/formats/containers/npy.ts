/**
 * NumPy `.npy` (FORMATS.md §4.2, §7): magic `\x93NUMPY`, u8 major, u8 minor, a header length
 * (u16 LE in v1.0, u32 LE in v2.0/3.0), a Python-literal dict header
 * `{'descr': '<f4', 'fortran_order': False, 'shape': (512, 64), }` padded with spaces and a final
 * newline, then the raw elements. The dict is parsed strictly (exactly those three keys, literal
 * values only). A Fortran-order array of rank 2 is exposed as a `transposed` view of the reversed
 * shape (its bytes are the C-order transpose); Fortran order of rank > 2 is rejected UNSUPPORTED
 * (no TensorView can express it). Rank 0 and 1 are the same in either order.
 * The writer emits v1.0 exactly as numpy.save does (64-byte aligned preamble, same spacing).
 */
import * as nodePath from 'node:path';
import { rangeError, UnsupportedError } from '../../base/errors';
import { mapFile, type MappedSource } from '../../addon/mapping';
import { DTYPE_BYTES, numel, type ModelWeights, type PlainDType, type TensorView } from '../../addon/weights';
import { fail } from './bytes';
import { NPY_MAGIC, detectNpy } from './magic';
import type { FloatDType } from '../quantization/dtype-convert';
import { canonicalShape, releasePages } from '../quantization/tensor-data';
import type { FormatModule, Probe, ReadOptions, WriteOptions } from '../types';
import type { WriteJob } from '../writing/write-job';
import { lazy } from '../../base/lazy';

/** The writer's modules, loaded by the first write: reading needs none of them. */
const writing = lazy(() => ({
  ...(require('../writing/output-files') as typeof import('../writing/output-files')),
  ...(require('../writing/write-job') as typeof import('../writing/write-job')),
}));

export { NPY_MAGIC } from './magic';
/** numpy refuses headers above 10,000 bytes unless told otherwise; we allow more, within reason. */
export const NPY_MAX_HEADER_BYTES = 1 << 20;
const ARRAY_ALIGN = 64;
const GROWTH_AXIS_MAX_DIGITS = 21;

/** numpy type characters (after the byte-order mark) -> our dtype. */
const DESCR_TYPES: Readonly<Record<string, PlainDType>> = {
  f2: 'f16', f4: 'f32', f8: 'f64',
  i1: 'i8', i2: 'i16', i4: 'i32', i8: 'i64',
  u1: 'u8', u2: 'u16', u4: 'u32', u8: 'u64',
  b1: 'bool',
};

export interface NpyHeader {
  major: number;
  minor: number;
  /** The descr string as written, e.g. '<f4'. */
  descr: string;
  dtype: PlainDType;
  fortranOrder: boolean;
  shape: number[];
  /** Offset of the first element (= length of the preamble). */
  dataOffset: number;
  /** numel × element size. */
  dataLength: number;
}

// ---------------------------------------------------------------------------------------------
// Header dict parsing: a tiny tokenizer for the Python literals numpy writes.

type Token =
  | { kind: 'punct'; value: '{' | '}' | '(' | ')' | ',' | ':' | '[' | ']'; at: number }
  | { kind: 'string'; value: string; at: number }
  | { kind: 'int'; value: number; at: number }
  | { kind: 'name'; value: string; at: number };

function tokenize(text: string, path: string, base: number, allowLongSuffix: boolean): Token[] {
  const tokens: Token[] = [];
  const bad = (at: number, what: string): never =>
    fail('BAD_HEADER', `the .npy header dict is malformed: ${what}`, { path, offset: base + at, found: JSON.stringify(text.slice(at, at + 24)) });
  let i = 0;
  while (i < text.length) {
    const c = text[i];
    if (c === ' ' || c === '\t' || c === '\n' || c === '\r') {
      i++;
    } else if ('{}(),:[]'.includes(c)) {
      tokens.push({ kind: 'punct', value: c as '{', at: i });
      i++;
    } else if (c === "'" || c === '"') {
      const end = text.indexOf(c, i + 1);
      if (end < 0) bad(i, 'unterminated string');
      const value = text.slice(i + 1, end);
      // Escapes never occur in the keys and descrs numpy writes; refusing them keeps parsing literal.
      if (value.includes('\\') || value.includes('\n')) bad(i, 'escape or newline inside a string');
      tokens.push({ kind: 'string', value, at: i });
      i = end + 1;
    } else if (c >= '0' && c <= '9') {
      let j = i;
      while (j < text.length && text[j] >= '0' && text[j] <= '9') j++;
      const digits = text.slice(i, j);
      if (digits.length > 1 && digits[0] === '0') bad(i, 'integer with a leading zero');
      // Python 2 numpy wrote shapes like (3L, 4L).
      if (allowLongSuffix && text[j] === 'L') j++;
      const value = Number(digits);
      if (!Number.isSafeInteger(value)) bad(i, 'integer too large');
      tokens.push({ kind: 'int', value, at: i });
      i = j;
    } else if (/[A-Za-z_]/.test(c)) {
      let j = i;
      while (j < text.length && /[A-Za-z0-9_]/.test(text[j])) j++;
      tokens.push({ kind: 'name', value: text.slice(i, j), at: i });
      i = j;
    } else {
      bad(i, `unexpected character ${JSON.stringify(c)}`);
    }
  }
  return tokens;
}

type Literal = string | number | boolean | Literal[] | { tuple: Literal[] } | null;

/** Parses `{ 'key': literal, ... }` over the tokens; returns the entries in order. */
function parseDict(tokens: Token[], path: string, base: number, textLength: number): [string, Literal][] {
  let p = 0;
  const at = () => base + (p < tokens.length ? tokens[p].at : textLength);
  const bad = (what: string): never => fail('BAD_HEADER', `the .npy header dict is malformed: ${what}`, { path, offset: at() });
  const isPunct = (v: string) => p < tokens.length && tokens[p].kind === 'punct' && tokens[p].value === v;
  const expectPunct = (v: string) => {
    if (!isPunct(v)) bad(`expected '${v}'`);
    p++;
  };
  const value = (depth: number): Literal => {
    if (depth > 4) bad('nesting too deep');
    const t = tokens[p];
    if (!t) return bad('unexpected end');
    if (t.kind === 'string' || t.kind === 'int') {
      p++;
      return t.value;
    }
    if (t.kind === 'name') {
      p++;
      if (t.value === 'True') return true;
      if (t.value === 'False') return false;
      if (t.value === 'None') return null;
      return bad(`unknown name ${t.value}`);
    }
    if (t.value === '(' || t.value === '[') {
      const close = t.value === '(' ? ')' : ']';
      p++;
      const items: Literal[] = [];
      let sawComma = false;
      while (!isPunct(close)) {
        items.push(value(depth + 1));
        sawComma = false;
        if (isPunct(',')) {
          p++;
          sawComma = true;
        } else if (!isPunct(close)) {
          bad(`expected ',' or '${close}'`);
        }
      }
      p++;
      // Python: (5) is the integer 5, (5,) a tuple; numpy always writes the comma.
      if (t.value === '(' && items.length === 1 && !sawComma) return items[0];
      return t.value === '(' ? { tuple: items } : items;
    }
    return bad(`unexpected '${t.value}'`);
  };
  expectPunct('{');
  const entries: [string, Literal][] = [];
  while (!isPunct('}')) {
    const key = tokens[p];
    if (!key || key.kind !== 'string') bad('expected a string key');
    p++;
    expectPunct(':');
    entries.push([key.value as string, value(0)]);
    if (isPunct(',')) p++;
    else if (!isPunct('}')) bad("expected ',' or '}'");
  }
  p++;
  if (p !== tokens.length) bad('text after the closing brace');
  return entries;
}

function parseDescr(descr: string, path: string, offset: number): PlainDType {
  const order = descr[0];
  const dtype = DESCR_TYPES[descr.slice(1)];
  if (!dtype || !'<>|='.includes(order)) {
    return fail(descr.startsWith('<V') || descr.startsWith('|V') ? 'UNSUPPORTED' : 'BAD_DTYPE', `unknown .npy descr '${descr}'`, {
      path,
      offset,
      expected: "'<f4', '<f2', '<f8', '<i1'..'<i8', '|u1'..'<u8', '|b1'",
      found: descr,
    });
  }
  const size = DTYPE_BYTES[dtype];
  if (size > 1) {
    if (order === '>') fail('UNSUPPORTED', `big-endian .npy data ('${descr}')`, { path, offset, expected: 'little-endian', found: descr });
    // numpy resolves '=' to an explicit order when saving; '|' means "not applicable" (1-byte types).
    if (order !== '<') fail('BAD_DTYPE', `byte order '${order}' is not valid for ${dtype}`, { path, offset, expected: `<${descr.slice(1)}`, found: descr });
  }
  return dtype;
}

/**
 * Parses and validates the preamble and header of a .npy held in `bytes` (the whole file):
 * magic, version, header length inside the file, the dict, and data length = numel × size with
 * nothing after it.
 */
export function parseNpyHeader(bytes: Buffer, path: string): NpyHeader {
  if (bytes.length < 8 || !bytes.subarray(0, 6).equals(NPY_MAGIC)) {
    fail(bytes.length < 6 && NPY_MAGIC.subarray(0, bytes.length).equals(bytes) ? 'TRUNCATED' : 'BAD_MAGIC', 'not a .npy file', {
      path,
      offset: 0,
      expected: '93 4e 55 4d 50 59 ("\\x93NUMPY") + version',
      found: bytes.subarray(0, 8).toString('hex'),
    });
  }
  const major = bytes[6];
  const minor = bytes[7];
  if (!((major === 1 || major === 2 || major === 3) && minor === 0)) {
    fail('BAD_VERSION', 'unsupported .npy version', { path, offset: 6, expected: '1.0, 2.0 or 3.0', found: `${major}.${minor}` });
  }
  const lengthBytes = major === 1 ? 2 : 4;
  if (bytes.length < 8 + lengthBytes) fail('TRUNCATED', 'the file ends inside the .npy header length', { path, offset: 8, expected: `${lengthBytes} bytes`, found: `${bytes.length - 8} bytes` });
  const headerLength = major === 1 ? bytes.readUInt16LE(8) : bytes.readUInt32LE(8);
  const headerStart = 8 + lengthBytes;
  if (headerLength > NPY_MAX_HEADER_BYTES) {
    fail('BAD_HEADER', 'the .npy header length is absurd', { path, offset: 8, expected: `<= ${NPY_MAX_HEADER_BYTES}`, found: headerLength });
  }
  if (headerStart + headerLength > bytes.length) {
    fail('TRUNCATED', 'the file ends inside the .npy header', { path, offset: headerStart, expected: `${headerLength} bytes`, found: `${bytes.length - headerStart} bytes` });
  }
  const raw = bytes.subarray(headerStart, headerStart + headerLength);
  let text: string;
  if (major === 3) {
    try {
      text = new TextDecoder('utf-8', { fatal: true }).decode(raw);
    } catch {
      return fail('BAD_HEADER', 'the .npy v3.0 header is not valid UTF-8', { path, offset: headerStart });
    }
  } else {
    text = raw.toString('latin1');
  }
  if (!text.endsWith('\n')) {
    fail('BAD_HEADER', 'the .npy header does not end with a newline', { path, offset: headerStart + headerLength - 1, expected: '\\n', found: JSON.stringify(text.slice(-1)) });
  }
  const entries = parseDict(tokenize(text, path, headerStart, major < 3), path, headerStart, text.length);
  const keys = entries.map(([k]) => k);
  const wanted = ['descr', 'fortran_order', 'shape'];
  if (keys.length !== 3 || !wanted.every((k) => keys.includes(k))) {
    fail('BAD_HEADER', 'the .npy header must hold exactly descr, fortran_order and shape', { path, offset: headerStart, expected: wanted, found: keys });
  }
  const dict = new Map(entries);
  const descr = dict.get('descr');
  if (typeof descr !== 'string') {
    // A list descr is a structured dtype: valid numpy, not a tensor we can use.
    return fail(Array.isArray(descr) ? 'UNSUPPORTED' : 'BAD_HEADER', "the .npy 'descr' is not a simple type string", { path, offset: headerStart, found: descr });
  }
  const dtype = parseDescr(descr, path, headerStart);
  const fortranOrder = dict.get('fortran_order');
  if (typeof fortranOrder !== 'boolean') fail('BAD_HEADER', "the .npy 'fortran_order' is not True or False", { path, offset: headerStart, found: fortranOrder });
  const shapeLit = dict.get('shape');
  if (shapeLit === null || typeof shapeLit !== 'object' || !('tuple' in shapeLit) || !shapeLit.tuple.every((d) => typeof d === 'number')) {
    return fail('BAD_HEADER', "the .npy 'shape' is not a tuple of integers", { path, offset: headerStart, found: JSON.stringify(shapeLit) });
  }
  const shape = shapeLit.tuple as number[];
  if (shape.length > 32) fail('BAD_HEADER', 'the .npy array has more than 32 dimensions', { path, offset: headerStart, expected: '<= 32', found: shape.length });
  const size = DTYPE_BYTES[dtype];
  const count = numel(shape);
  const dataLength = count * size;
  if (!Number.isSafeInteger(dataLength)) fail('BAD_HEADER', 'the .npy shape is absurdly large', { path, offset: headerStart, found: shape });
  const dataOffset = headerStart + headerLength;
  const have = bytes.length - dataOffset;
  if (have < dataLength) {
    fail('TRUNCATED', 'the file ends inside the .npy data', { path, offset: dataOffset, expected: `${dataLength} bytes (${shape.join('x') || 'scalar'} ${dtype})`, found: `${have} bytes` });
  }
  if (have > dataLength) {
    fail('TRAILING_DATA', 'bytes follow the .npy data', { path, offset: dataOffset + dataLength, expected: 0, found: have - dataLength });
  }
  if (fortranOrder && shape.length > 2) {
    fail('UNSUPPORTED', `Fortran-order .npy arrays of rank ${shape.length} (rank 2 is read as a transposed view)`, { path, offset: headerStart, expected: 'rank <= 2 or C order', found: shape });
  }
  return { major, minor, descr, dtype, fortranOrder, shape, dataOffset, dataLength };
}

/**
 * A TensorView over a mapped .npy file. `shape` is the stored (C-order) shape: for a rank-2
 * Fortran-order array that is the reversed logical shape, with `transposed: true`.
 */
export function npyTensorView(source: MappedSource, name: string): TensorView {
  const h = parseNpyHeader(source.bytes, source.path);
  const fortran2d = h.fortranOrder && h.shape.length === 2;
  return {
    name,
    dtype: h.dtype,
    shape: fortran2d ? [h.shape[1], h.shape[0]] : [...h.shape],
    source,
    byteOffset: h.dataOffset,
    byteLength: h.dataLength,
    ...(fortran2d ? { transposed: true } : {}),
  };
}

/** Maps a .npy file and returns its view; closes the mapping if it does not validate. */
export function mapNpy(path: string, name: string): TensorView {
  const source = mapFile(path);
  try {
    return npyTensorView(source, name);
  } catch (error) {
    source.close();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Writing (v1.0, as numpy.save formats it).

export type NpyWritableDType = 'f32' | 'f16';

function pythonTupleRepr(shape: readonly number[]): string {
  if (shape.length === 1) return `(${shape[0]},)`;
  return `(${shape.join(', ')})`;
}

/** The v1.0 preamble numpy.save writes for a C-order array of `dtype` and `shape`. */
export function encodeNpyHeader(dtype: NpyWritableDType, shape: readonly number[]): Buffer {
  for (const d of shape) if (!Number.isSafeInteger(d) || d < 0) throw rangeError(`invalid .npy dimension ${d}`);
  const descr = dtype === 'f32' ? '<f4' : '<f2';
  let dict = `{'descr': '${descr}', 'fortran_order': False, 'shape': ${pythonTupleRepr(shape)}, }`;
  if (shape.length > 0) dict += ' '.repeat(GROWTH_AXIS_MAX_DIGITS - String(shape[0]).length);
  const hlen = dict.length + 1;
  const padlen = ARRAY_ALIGN - ((NPY_MAGIC.length + 2 + 2 + hlen) % ARRAY_ALIGN);
  const total = hlen + padlen;
  if (total > 0xffff) throw rangeError('a .npy v1.0 header cannot hold this shape');
  const out = Buffer.alloc(10 + total, 0x20);
  NPY_MAGIC.copy(out, 0);
  out[6] = 1;
  out[7] = 0;
  out.writeUInt16LE(total, 8);
  out.write(dict, 10, 'latin1');
  out[out.length - 1] = 0x0a;
  return out;
}

/** Size of the .npy file encodeNpyHeader + data would make. */
export function npyFileSize(dtype: NpyWritableDType, shape: readonly number[]): number {
  return encodeNpyHeader(dtype, shape).length + numel(shape) * (dtype === 'f32' ? 4 : 2);
}

/**
 * Writes one tensor as a C-order .npy v1.0 of `dtype` (any float-readable source: converted,
 * dequantized, un-transposed as needed). `rows`, when given, replaces the element stream (a
 * writer that reorders rows supplies its own chunks of the canonical tensor).
 */
export async function writeNpyFile(
  path: string,
  view: TensorView,
  dtype: NpyWritableDType,
  options: WriteOptions = {},
  rows?: Iterable<Float32Array>,
): Promise<void> {
  const { runWriteJob } = writing();
  const shape = canonicalShape(view);
  const header = encodeNpyHeader(dtype, shape);
  await runWriteJob(path, header.length + numel(shape) * (dtype === 'f32' ? 4 : 2), options, async (job: WriteJob) => {
    await job.write(header, view.name);
    if (rows) await job.writeFloats(rows, dtype as FloatDType, view.name);
    else await job.writeTensor(view, dtype as FloatDType, false);
    releasePages(view);
  });
}

// ---------------------------------------------------------------------------------------------
// The format module: a lone .npy is one tensor of an 'unknown' model.

function tensorNameOf(path: string): string {
  const base = nodePath.basename(path);
  return base.toLowerCase().endsWith('.npy') ? base.slice(0, -4) : base;
}

async function read(path: string, _options: ReadOptions = {}): Promise<ModelWeights> {
  const view = mapNpy(path, tensorNameOf(path));
  const header = parseNpyHeader(view.source.bytes, path);
  return {
    format: 'npy',
    path,
    architecture: 'unknown',
    config: { architecture: 'unknown' },
    tensors: [view],
    metadata: { npyVersion: `${header.major}.${header.minor}`, descr: header.descr, fortranOrder: header.fortranOrder },
    sources: [view.source],
  };
}

async function write(weights: ModelWeights, path: string, options: WriteOptions = {}): Promise<void> {
  const { writeOutputs } = writing();
  if (weights.tensors.length !== 1) {
    throw new UnsupportedError(`a .npy file holds one tensor; these weights have ${weights.tensors.length} (write them as sepweight or safetensors)`);
  }
  const view = weights.tensors[0];
  const dtype: NpyWritableDType = options.dtype ?? (view.dtype === 'f16' ? 'f16' : 'f32');
  await writeOutputs(weights, options, (out) => writeNpyFile(out.file(path), view, dtype, options));
}


export const npyFormat: FormatModule = {
  name: 'npy',
  title: 'NumPy .npy',
  holdsVocabulary: false,
  detect: detectNpy,
  read,
  write,
};
