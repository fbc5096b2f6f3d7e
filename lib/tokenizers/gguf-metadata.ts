/**
 * Minimal GGUF (v2/v3) metadata reader for the tokenizer: the key/value section only, read from
 * the start of the file without mapping the tensor data. (A full GGUF reader belongs to
 * lib/formats; this one exists so that a vocabulary can be loaded on its own.)
 */
import * as fs from 'node:fs';
import { WeightFormatError } from '../errors';
import { ByteCursor, fail } from '../formats/bytes';
import type { TokenizerData } from '../weights';

const GGUF_MAGIC = 0x46554747; // "GGUF"
/** Arrays longer than this cannot be real metadata. */
const MAX_ARRAY = 1 << 26;

enum T {
  U8 = 0, I8, U16, I16, U32, I32, F32, BOOL, STRING, ARRAY, U64, I64, F64,
}

export type GgufValue = number | bigint | boolean | string | GgufValue[] | Float32Array | Int32Array;

function readString(cur: ByteCursor, what: string): string {
  const len = cur.u64(`the length of ${what}`);
  return cur.utf8(len, what);
}

function readScalar(cur: ByteCursor, type: number, what: string): GgufValue {
  switch (type) {
    case T.U8: return cur.u8(what);
    case T.I8: return (cur.u8(what) << 24) >> 24;
    case T.U16: return cur.u16(what);
    case T.I16: return (cur.u16(what) << 16) >> 16;
    case T.U32: return cur.u32(what);
    case T.I32: return cur.i32(what);
    case T.F32: return cur.f32(what);
    case T.BOOL: return cur.u8(what) !== 0;
    case T.STRING: return readString(cur, what);
    case T.U64: {
      cur.need(8, what);
      const v = cur.bytes.readBigUInt64LE(cur.offset);
      cur.offset += 8;
      return v <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    case T.I64: {
      const v = cur.i64(what);
      return v <= BigInt(Number.MAX_SAFE_INTEGER) && v >= -BigInt(Number.MAX_SAFE_INTEGER) ? Number(v) : v;
    }
    case T.F64: return cur.f64(what);
    default:
      return fail('BAD_DTYPE', `${what} has unknown value type ${type}`, { path: cur.path, offset: cur.offset - 4 });
  }
}

function readValue(cur: ByteCursor, type: number, what: string): GgufValue {
  if (type !== T.ARRAY) return readScalar(cur, type, what);
  const itemType = cur.u32(`the item type of ${what}`);
  const at = cur.offset;
  const count = cur.u64(`the length of ${what}`);
  if (count > MAX_ARRAY) fail('BAD_HEADER', `${what} is too long`, { path: cur.path, offset: at, expected: `<= ${MAX_ARRAY}`, found: count });
  if (itemType === T.F32) {
    cur.need(count * 4, what);
    const out = new Float32Array(count);
    for (let i = 0; i < count; i++) out[i] = cur.bytes.readFloatLE(cur.offset + i * 4);
    cur.offset += count * 4;
    return out;
  }
  if (itemType === T.I32) {
    cur.need(count * 4, what);
    const out = new Int32Array(count);
    for (let i = 0; i < count; i++) out[i] = cur.bytes.readInt32LE(cur.offset + i * 4);
    cur.offset += count * 4;
    return out;
  }
  const out: GgufValue[] = [];
  for (let i = 0; i < count; i++) out.push(readValue(cur, itemType, `${what}[${i}]`));
  return out;
}

/** Parses the header and every key/value pair of a GGUF image that holds at least the metadata. */
export function parseGgufMetadata(bytes: Buffer, path: string): Map<string, GgufValue> {
  const cur = new ByteCursor(bytes, path);
  const magic = cur.u32('the magic');
  if (magic !== GGUF_MAGIC) fail('BAD_MAGIC', 'not a GGUF file', { path, offset: 0, expected: 'GGUF', found: bytes.subarray(0, 4).toString('latin1') });
  const version = cur.u32('the version');
  if (version !== 2 && version !== 3) fail('BAD_VERSION', 'unsupported GGUF version', { path, offset: 4, expected: '2 or 3', found: version });
  cur.u64('the tensor count');
  const kvAt = cur.offset;
  const kvCount = cur.u64('the key/value count');
  if (kvCount > 1 << 20) fail('BAD_HEADER', 'implausible key/value count', { path, offset: kvAt, expected: '<= 2^20', found: kvCount });
  const kv = new Map<string, GgufValue>();
  for (let i = 0; i < kvCount; i++) {
    const key = readString(cur, `metadata key ${i}`);
    const type = cur.u32(`the type of ${key}`);
    kv.set(key, readValue(cur, type, key));
  }
  return kv;
}

/** Reads the metadata of a GGUF file, reading only as much of the file as the metadata spans. */
export function readGgufMetadata(path: string): Map<string, GgufValue> {
  const fd = fs.openSync(path, 'r');
  try {
    const size = fs.fstatSync(fd).size;
    let want = Math.min(size, 4 << 20);
    for (;;) {
      const buf = Buffer.alloc(want);
      const got = fs.readSync(fd, buf, 0, want, 0);
      try {
        return parseGgufMetadata(buf.subarray(0, got), path);
      } catch (e) {
        if (!(e instanceof WeightFormatError && e.code === 'TRUNCATED') || want >= size) throw e;
        want = Math.min(size, want * 4);
      }
    }
  } finally {
    fs.closeSync(fd);
  }
}

function num(kv: Map<string, GgufValue>, key: string): number | undefined {
  const v = kv.get(key);
  return typeof v === 'number' ? v : undefined;
}

function bool(kv: Map<string, GgufValue>, key: string): boolean | undefined {
  const v = kv.get(key);
  return typeof v === 'boolean' ? v : undefined;
}

/** The `tokenizer.ggml.*` vocabulary of GGUF metadata, or undefined when it has none. */
export function ggufTokenizerData(kv: Map<string, GgufValue>, path: string): TokenizerData | undefined {
  const model = kv.get('tokenizer.ggml.model');
  const tokens = kv.get('tokenizer.ggml.tokens');
  if (typeof model !== 'string' || tokens === undefined) return undefined;
  if (!Array.isArray(tokens) || tokens.some((t) => typeof t !== 'string')) {
    fail('BAD_HEADER', 'tokenizer.ggml.tokens is not an array of strings', { path });
  }
  const n = tokens.length;
  const scores = kv.get('tokenizer.ggml.scores');
  const types = kv.get('tokenizer.ggml.token_type');
  const merges = kv.get('tokenizer.ggml.merges');
  if (scores !== undefined && !(scores instanceof Float32Array && scores.length === n)) {
    fail('BAD_HEADER', 'tokenizer.ggml.scores must be one f32 per token', { path, expected: n, found: (scores as any)?.length });
  }
  if (types !== undefined && !(types instanceof Int32Array && types.length === n)) {
    fail('BAD_HEADER', 'tokenizer.ggml.token_type must be one i32 per token', { path, expected: n, found: (types as any)?.length });
  }
  if (merges !== undefined && !(Array.isArray(merges) && merges.every((m) => typeof m === 'string'))) {
    fail('BAD_HEADER', 'tokenizer.ggml.merges is not an array of strings', { path });
  }
  const pre = kv.get('tokenizer.ggml.pre');
  const data: TokenizerData = {
    kind: 'gguf',
    model,
    ...(typeof pre === 'string' ? { pre } : {}),
    tokens: tokens as string[],
    ...(scores ? { scores: scores as Float32Array } : {}),
    ...(types ? { tokenTypes: types as Int32Array } : {}),
    ...(merges ? { merges: merges as string[] } : {}),
  };
  const ids: [string, string][] = [
    ['bosId', 'tokenizer.ggml.bos_token_id'],
    ['eosId', 'tokenizer.ggml.eos_token_id'],
    ['unkId', 'tokenizer.ggml.unknown_token_id'],
    ['padId', 'tokenizer.ggml.padding_token_id'],
    ['sepId', 'tokenizer.ggml.seperator_token_id'],
    ['clsId', 'tokenizer.ggml.cls_token_id'],
    ['maskId', 'tokenizer.ggml.mask_token_id'],
  ];
  for (const [field, key] of ids) {
    const v = num(kv, key);
    // llama.cpp writes -1 (as u32 0xFFFFFFFF) for "none"
    if (v === undefined || v === 0xffffffff || v === -1) continue;
    if (!Number.isInteger(v) || v < 0 || v >= n) fail('CONFIG_MISMATCH', `${key} lies outside the vocabulary`, { path, expected: `< ${n}`, found: v });
    (data as any)[field] = v;
  }
  const flags: [string, string][] = [
    ['addBos', 'tokenizer.ggml.add_bos_token'],
    ['addEos', 'tokenizer.ggml.add_eos_token'],
    ['addSpacePrefix', 'tokenizer.ggml.add_space_prefix'],
  ];
  for (const [field, key] of flags) {
    const v = bool(kv, key);
    if (v !== undefined) (data as any)[field] = v;
  }
  return data;
}
