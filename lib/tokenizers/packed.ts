/**
 * A BPE tokenizer (byte-level, or over characters with byte fallback), a WordPiece, a Unigram or a UGM
 * one packed into one buffer: what the tokenizer worker sends to the main thread (shared memory, no copy) and
 * what the cache stores. Turning it back into a tokenizer is a handful of typed-array views, so no
 * 151k-entry (Qwen) or 262k-entry (Gemma 3) table is rebuilt on the JS thread, and no
 * tokenizer.json is parsed there (MiniLM's: 466 KB). A WordPiece or Unigram buffer holds an empty
 * merge table; a Unigram one its scores and its trie (unigram-model.ts), a UGM one (ugm.ts) its
 * token types too, the others those empty.
 *
 * Layout (little-endian):
 *   [0, 8)    magic "WMTOKPK1"
 *   [8, 12)   u32 H: bytes of the header JSON
 *   [12, 16)  u32 CRC-32 (zlib) of every byte from 16 to the end
 *   [16, 16+H) header JSON (PackedHeader), then zero padding to a multiple of 8
 *   arrays in ARRAYS order, each at a multiple of 8, with the lengths the header gives
 */
import { crc32 } from '../addon/checksums';
import { rangeError, WeightFormatError } from '../base/errors';
import type { AddedToken } from './added-tokens';
import { ByteFallbackBpeTokenizer } from './byte-fallback-bpe';
import { ByteLevelBpeTokenizer } from './byte-level-bpe';
import type { BpeModelOptions } from './bpe-model';
import type { BpeTextSpec } from './bpe-text';
import { PackedVocab, type BpeVocab, type PackedVocabArrays } from './bpe-vocab';
import { MergeTable, type MergeTableArrays } from './merge-table';
import { bertNormalizerFromJson } from './bert-basic';
import { normalizerFromJson } from './normalizers';
import { pieceDecoderFromJson } from './piece-decoder';
import type { SpecialWrapping } from './post-process';
import { native } from '../addon/native';
import { runNow, type Steps } from '../base/steps';
import type { SpecialTokenIds, Tokenizer } from './types';
import { WordPieceTokenizer } from './wordpiece';
import { UnigramTokenizer, unigramPreTokenizer } from './unigram';
import { UgmTokenizer } from './ugm';
import { precompiledFromBase64 } from './precompiled-charsmap';
import type { UnigramTrieArrays } from './unigram-model';

const MAGIC = 'WMTOKPK1';
const PREFIX = 16;

/** What each kind adds to the common fields: ByteLevelBpeConfig's and ByteFallbackBpeConfig's own options. */
type PackedKind =
  | { kind: 'byte-level-bpe'; model: BpeModelOptions; text: BpeTextSpec }
  | { kind: 'byte-fallback-bpe'; decoder: unknown; byteFallback: boolean; unkId: number | null; fuseUnk: boolean; text: BpeTextSpec }
  | { kind: 'wordpiece'; unkToken: string; prefix: string; maxChars: number; normalizer: unknown; cleanup: boolean }
  | { kind: 'unigram'; unkId: number | null; byteFallback: boolean; normalizer: unknown; preTokenizer: unknown; decoder: unknown }
  | { kind: 'ugm'; unkId: number; unkScore: number; charsmap: string | null; addSpacePrefix: boolean; removeExtraWhitespaces: boolean };

/** An added token as the header stores it: id, content, and its flags (ADDED_FLAGS) as bits. */
type PackedAddedToken = [id: number, content: string, flags: number];

/** The boolean fields of an AddedToken, bit 0 first (6k tokens as objects made Gemma 3's header 0.8 MB of JSON). */
const ADDED_FLAGS = ['special', 'singleWord', 'lstrip', 'rstrip', 'normalized'] as const;

function packAddedToken(t: AddedToken): PackedAddedToken {
  return [t.id, t.content, ADDED_FLAGS.reduce((bits, name, i) => bits | (t[name] ? 1 << i : 0), 0)];
}

function unpackAddedToken([id, content, flags]: PackedAddedToken): AddedToken {
  const t = { id, content } as AddedToken;
  ADDED_FLAGS.forEach((name, i) => (t[name] = (flags & (1 << i)) !== 0));
  return t;
}

type PackedHeader = PackedKind & {
  addedTokens: PackedAddedToken[];
  specialIds: SpecialTokenIds;
  wrapping: SpecialWrapping;
  truncation: number | null;
  mergeCount: number;
  /** Element counts of the arrays, by name. */
  lengths: Record<ArrayName, number>;
  /** What the packer says about where the tokenizer came from (the cache's key; not read here). */
  source: unknown;
};

const ARRAYS = [
  ['bytes', Uint8Array],
  ['offsets', Uint32Array],
  ['ids', Int32Array],
  ['byId', Int32Array],
  ['index', Int32Array],
  ['keys', Int32Array],
  ['ranks', Int32Array],
  ['merged', Int32Array],
  ['scores', Float64Array],
  ['trieFirst', Int32Array],
  ['trieTerm', Int32Array],
  ['edgeLabel', Uint16Array],
  ['edgeNext', Int32Array],
  ['types', Uint8Array],
] as const;
type ArrayName = (typeof ARRAYS)[number][0];
type UnigramArrays = UnigramTrieArrays & { scores: Float64Array; types: Uint8Array };
type Arrays = PackedVocabArrays & MergeTableArrays & UnigramArrays;

const NO_UNIGRAM: UnigramArrays = { scores: new Float64Array(0), trieFirst: new Int32Array(0), trieTerm: new Int32Array(0), edgeLabel: new Uint16Array(0), edgeNext: new Int32Array(0), types: new Uint8Array(0) };

const align8 = (n: number) => (n + 7) & ~7;

/** The kind and own options of a tokenizer that packs, or undefined. */
function packedKind(tokenizer: unknown): PackedKind | undefined {
  if (tokenizer instanceof ByteLevelBpeTokenizer) return { kind: 'byte-level-bpe', model: tokenizer.config.model ?? {}, text: tokenizer.config.text };
  if (tokenizer instanceof ByteFallbackBpeTokenizer) {
    const c = tokenizer.config;
    return { kind: 'byte-fallback-bpe', decoder: c.decoder ?? null, byteFallback: c.byteFallback, unkId: c.unkId ?? null, fuseUnk: c.fuseUnk, text: c.text };
  }
  if (tokenizer instanceof WordPieceTokenizer) {
    const c = tokenizer.config;
    return { kind: 'wordpiece', unkToken: c.unkToken, prefix: c.continuingSubwordPrefix ?? '##', maxChars: c.maxInputCharsPerWord ?? 100, normalizer: c.normalizer ?? null, cleanup: c.cleanup !== false };
  }
  if (tokenizer instanceof UnigramTokenizer) {
    const c = tokenizer.config;
    return { kind: 'unigram', unkId: c.unkId ?? null, byteFallback: c.byteFallback, normalizer: c.normalizer ?? null, preTokenizer: c.preTokenizer ?? null, decoder: c.decoder ?? null };
  }
  if (tokenizer instanceof UgmTokenizer) {
    const c = tokenizer.config;
    return { kind: 'ugm', unkId: c.unkId, unkScore: c.unkScore, charsmap: c.charsmap, addSpacePrefix: c.addSpacePrefix, removeExtraWhitespaces: c.removeExtraWhitespaces };
  }
  return undefined;
}

type Packable = ByteLevelBpeTokenizer | ByteFallbackBpeTokenizer | WordPieceTokenizer | UnigramTokenizer | UgmTokenizer;

/** The vocabulary and merges of a tokenizer that packs (WordPiece and Unigram have no merges: an empty table), and a Unigram's scores and trie. */
function packedTables(tokenizer: Packable): { vocab: BpeVocab; merges: MergeTable; unigram: UnigramArrays } {
  if (tokenizer instanceof WordPieceTokenizer) return { vocab: tokenizer.config.vocab, merges: new MergeTable(0), unigram: NO_UNIGRAM };
  if (tokenizer instanceof UnigramTokenizer) {
    const c = tokenizer.config;
    return { vocab: c.vocab, merges: new MergeTable(0), unigram: { scores: c.scores, ...c.trie, types: new Uint8Array(0) } };
  }
  if (tokenizer instanceof UgmTokenizer) {
    const c = tokenizer.config;
    return { vocab: c.vocab, merges: new MergeTable(0), unigram: { scores: c.scores, ...c.trie, types: c.types } };
  }
  return { vocab: tokenizer.config.vocab, merges: tokenizer.config.merges, unigram: NO_UNIGRAM };
}

/**
 * The tokenizer packed into a SharedArrayBuffer, or undefined when it is of a kind that does not
 * pack (the BPE kinds and WordPiece do; the others build in milliseconds) or holds a token with no
 * UTF-8 form.
 */
export function packTokenizer(tokenizer: unknown, source: unknown): SharedArrayBuffer | undefined {
  const kind = packedKind(tokenizer);
  if (!kind) return undefined;
  const c = (tokenizer as Packable).config;
  const tables = packedTables(tokenizer as Packable);
  const vocab = tables.vocab instanceof PackedVocab ? tables.vocab : PackedVocab.pack(tables.vocab.entries(), tables.vocab.size);
  if (!vocab) return undefined;
  const arrays: Arrays = { ...vocab.arrays, ...tables.merges.arrays(), ...tables.unigram };
  const header: PackedHeader = {
    ...kind,
    addedTokens: c.addedTokens.map(packAddedToken),
    specialIds: c.specialIds ?? {},
    wrapping: c.wrapping ?? { prefix: [], suffix: [] },
    truncation: c.truncation ?? null,
    mergeCount: tables.merges.size,
    lengths: Object.fromEntries(ARRAYS.map(([name]) => [name, arrays[name].length])) as Record<ArrayName, number>,
    source,
  };
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  let size = align8(PREFIX + json.length);
  const at: number[] = [];
  for (const [name] of ARRAYS) {
    at.push(size);
    size = align8(size + arrays[name].byteLength);
  }
  const sab = new SharedArrayBuffer(size);
  const out = Buffer.from(sab);
  out.write(MAGIC, 0, 'latin1');
  out.writeUInt32LE(json.length, 8);
  json.copy(out, PREFIX);
  ARRAYS.forEach(([name], i) => {
    const a = arrays[name];
    out.set(new Uint8Array(a.buffer, a.byteOffset, a.byteLength), at[i]);
  });
  out.writeUInt32LE(crc32(out.subarray(PREFIX)), 12);
  return sab;
}

/** The `source` a packed buffer records (undefined when the buffer is no packed tokenizer). */
export function packedSource(buffer: Uint8Array): unknown {
  try {
    return readHeader(buffer, 'packed tokenizer').source;
  } catch {
    return undefined;
  }
}

/**
 * Headers already parsed, by the memory they were read from: a cached load reads the source, the
 * checks and the tokenizer from one buffer, and Gemma 3's header takes milliseconds to parse.
 */
const parsedHeaders = new WeakMap<ArrayBufferLike, { byteOffset: number; byteLength: number; header: PackedHeader }>();

function readHeader(buffer: Uint8Array, where: string): PackedHeader {
  const parsed = parsedHeaders.get(buffer.buffer);
  if (parsed?.byteOffset === buffer.byteOffset && parsed.byteLength === buffer.byteLength) return parsed.header;
  const bytes = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  if (bytes.length < PREFIX || bytes.toString('latin1', 0, 8) !== MAGIC) {
    throw new WeightFormatError('BAD_MAGIC', 'not a packed tokenizer', { path: where, offset: 0, expected: MAGIC, found: bytes.toString('latin1', 0, Math.min(8, bytes.length)) });
  }
  const n = bytes.readUInt32LE(8);
  if (PREFIX + n > bytes.length) throw new WeightFormatError('TRUNCATED', 'the header runs past the end', { path: where, offset: 8, expected: `<= ${bytes.length - PREFIX}`, found: n });
  try {
    const header: PackedHeader = JSON.parse(bytes.toString('utf8', PREFIX, PREFIX + n));
    parsedHeaders.set(buffer.buffer, { byteOffset: buffer.byteOffset, byteLength: buffer.byteLength, header });
    return header;
  } catch (e) {
    throw new WeightFormatError('BAD_HEADER', `the header is not valid JSON: ${(e as Error).message}`, { path: where, offset: PREFIX });
  }
}

/** The bytes a packed buffer's CRC-32 covers (from byte 16 to the end). */
export function packedCrcRange(buffer: Uint8Array): Uint8Array {
  return buffer.subarray(PREFIX);
}

/** checkPackedSteps in one go, with zlib's CRC-32. */
export function checkPacked(buffer: Uint8Array, where: string): void {
  runNow(checkPackedSteps(buffer, where, crc32(packedCrcRange(buffer))));
}

/** Array elements checked between two checkpoints of checkPackedSteps (well under a millisecond once compiled, a few ms before; see steps.ts). */
const CHECK_STEP = 1 << 16;

/**
 * Checks a packed buffer read from a file: the checksum (`crc`, the CRC-32 of packedCrcRange,
 * computed by the caller), the header's shape, every array's extent, and every id, offset
 * and slot against what the arrays hold (so that no lookup can run past an array or probe
 * forever). Throws WeightFormatError. In slices (steps.ts).
 */
export function* checkPackedSteps(buffer: Uint8Array, where: string, crc: number): Steps<void> {
  const { header, arrays, bad } = checkPackedShape(buffer, where, crc);
  const { offsets, ids, byId, index, keys, ranks, merged } = arrays;
  const entries = ids.length;
  // Each loop is a plain function over a range, called once per checkpoint: V8 compiles a hot
  // loop in a plain function to machine code within the first call, never one in a generator.
  for (let from = 0; from < entries; from += CHECK_STEP) {
    checkEntries(offsets, ids, byId.length, from, Math.min(entries, from + CHECK_STEP), bad);
    yield;
  }
  for (let from = 0; from < byId.length; from += CHECK_STEP) {
    checkById(byId, ids, from, Math.min(byId.length, from + CHECK_STEP), bad);
    yield;
  }
  checkCapacity(index.length, entries, bad, 'vocabulary index');
  let filled = 0;
  for (let from = 0; from < index.length; from += CHECK_STEP) {
    filled += countIndexSlots(index, entries, from, Math.min(index.length, from + CHECK_STEP), bad);
    yield;
  }
  checkFilled(filled, entries, bad);
  checkMergeShape(header, arrays, bad);
  let used = 0;
  for (let from = 0; from < ranks.length; from += CHECK_STEP) {
    used += countMergeSlots(keys, ranks, merged, byId.length, from, Math.min(ranks.length, from + CHECK_STEP), bad);
    yield;
  }
  checkUsedAndUnknown(header, arrays, used, bad);
}

/**
 * checkPackedSteps with the element loops in C++ on libuv's thread pool (native
 * checkPackedTables): the same checks and errors, ~1 ms off the JS thread where the loops in JS
 * take ~10 ms of a fresh process's tokenizer load (151k tokens and 512k slots each of Qwen3's
 * index and merge table, interpreted until V8 compiles them). Where two elements fail, the one
 * named may differ from checkPackedSteps's (the capacities are checked before any element here).
 */
export async function checkPackedOffThread(buffer: Uint8Array, where: string, crc: number): Promise<void> {
  const { header, arrays, bad } = checkPackedShape(buffer, where, crc);
  checkCapacity(arrays.index.length, arrays.ids.length, bad, 'vocabulary index');
  checkMergeShape(header, arrays, bad);
  const { offsets, ids, byId, index, keys, ranks, merged } = arrays;
  const { problem, filled, used } = await native().checkPackedTables(offsets, ids, byId, index, keys, ranks, merged);
  if (problem !== null) bad(problem);
  checkFilled(filled, ids.length, bad);
  checkUsedAndUnknown(header, arrays, used, bad);
}

/** The checks of checkPackedSteps before its element loops: the checksum, the header's fields, the arrays' extents and the token offsets' ends. */
function checkPackedShape(buffer: Uint8Array, where: string, crc: number): { header: PackedHeader; arrays: Arrays; bad: Bad } {
  const bytes = Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength);
  const header = readHeader(bytes, where);
  const stored = bytes.readUInt32LE(12);
  if (crc !== stored) throw new WeightFormatError('CHECKSUM_MISMATCH', 'the packed tokenizer is damaged', { path: where, offset: 12, expected: stored, found: crc });
  const bad: Bad = (what, found) => {
    throw new WeightFormatError('BAD_HEADER', `packed tokenizer: ${what}`, { path: where, found });
  };
  const isId = (v: unknown) => Number.isInteger(v) && (v as number) >= 0 && (v as number) < 2 ** 31;
  if (header?.kind === 'byte-level-bpe') {
    const m = header.model;
    if (!m || typeof m !== 'object' || !(m.unkId === undefined || isId(m.unkId))) bad('bad model options');
  } else if (header?.kind === 'byte-fallback-bpe') {
    if (typeof header.byteFallback !== 'boolean' || typeof header.fuseUnk !== 'boolean' || !(header.unkId === null || isId(header.unkId))) bad('bad model options');
    try {
      pieceDecoderFromJson(header.decoder);
    } catch {
      bad('bad decoder');
    }
  } else if (header?.kind === 'unigram') {
    if (typeof header.byteFallback !== 'boolean' || !(header.unkId === null || isId(header.unkId))) bad('bad model options');
    try {
      normalizerFromJson(header.normalizer, bertNormalizerFromJson, where);
      unigramPreTokenizer(header.preTokenizer);
      if (header.decoder !== null) pieceDecoderFromJson(header.decoder);
    } catch {
      bad('bad normalizer, pre-tokenizer or decoder');
    }
  } else if (header?.kind === 'ugm') {
    const okFlags = typeof header.addSpacePrefix === 'boolean' && typeof header.removeExtraWhitespaces === 'boolean';
    if (!isId(header.unkId) || !Number.isFinite(header.unkScore) || !okFlags || !(header.charsmap === null || typeof header.charsmap === 'string')) bad('bad model options');
    try {
      if (header.charsmap !== null) precompiledFromBase64(header.charsmap, where);
    } catch {
      bad('bad charsmap');
    }
  } else if (header?.kind === 'wordpiece') {
    const okStrings = typeof header.unkToken === 'string' && typeof header.prefix === 'string';
    if (!okStrings || !isId(header.maxChars) || typeof header.cleanup !== 'boolean') bad('bad model options');
    try {
      normalizerFromJson(header.normalizer, bertNormalizerFromJson);
    } catch {
      bad('bad normalizer');
    }
  } else {
    bad('unknown kind', (header as { kind?: unknown } | undefined)?.kind);
  }
  const addedOk = (t: unknown) => Array.isArray(t) && t.length === 3 && isId(t[0]) && typeof t[1] === 'string' && isId(t[2]) && t[2] < 1 << ADDED_FLAGS.length;
  if (!Array.isArray(header.addedTokens) || !header.addedTokens.every(addedOk)) bad('bad added tokens');
  if (!header.wrapping || ![header.wrapping.prefix, header.wrapping.suffix].every((l) => Array.isArray(l) && l.every(isId))) bad('bad wrapping');
  if (!header.specialIds || !Object.values(header.specialIds).every(isId)) bad('bad special ids');
  if (!(header.truncation === null || isId(header.truncation))) bad('bad truncation', header.truncation);
  if (header.kind !== 'wordpiece' && header.kind !== 'unigram' && header.kind !== 'ugm') {
    const t = header.text;
    const okNormalizer = t?.normalizer === 'NFC' || t?.normalizer === 'none' || (typeof t?.normalizer === 'object' && 'json' in t.normalizer);
    const p = t?.preTokenizer as any;
    const okPre = typeof p === 'object' && p !== null && ('json' in p || (typeof p.pattern === 'string' && typeof p.prefixSpace === 'boolean'));
    if (!okNormalizer || !okPre) bad('bad text steps');
  }
  const arrays = viewArrays(bytes, header, where);
  const entries = arrays.ids.length;
  if (arrays.offsets.length !== entries + 1 || arrays.offsets[0] !== 0 || arrays.offsets[entries] !== arrays.bytes.length) bad('token offsets do not cover the token bytes');
  if (header.kind === 'unigram' || header.kind === 'ugm') checkUnigram(header.unkId, arrays, bad);
  else if (arrays.scores.length + arrays.trieTerm.length + arrays.trieFirst.length + arrays.edgeLabel.length + arrays.edgeNext.length > 0) bad('a BPE or WordPiece buffer holds Unigram arrays');
  if (header.kind === 'ugm') checkTypes(arrays.types, arrays.byId.length, bad);
  else if (arrays.types.length > 0) bad('only a UGM buffer holds token types');
  return { header, arrays, bad };
}

/**
 * A Unigram's scores (one finite score per id) and trie: edge ranges that start at 0, never
 * decrease and end at the edge count, edges that lead to a node other than the root, and piece
 * ids within the vocabulary; so that a lookup never leaves the arrays (it walks one edge per
 * character of the text, so it always ends).
 */
function checkUnigram(unkId: number | null, { byId, scores, trieFirst, trieTerm, edgeLabel, edgeNext }: Arrays, bad: Bad): void {
  const size = byId.length;
  if (size === 0 || scores.length !== size) bad('the scores do not match the vocabulary', scores.length);
  if (unkId !== null && unkId >= size) bad('the unknown id lies outside the vocabulary', unkId);
  for (let i = 0; i < size; i++) if (!Number.isFinite(scores[i])) bad(`score ${i} is not finite`);
  const nodes = trieTerm.length;
  const edges = edgeLabel.length;
  if (nodes === 0 || trieFirst.length !== nodes + 1 || edgeNext.length !== edges || trieFirst[0] !== 0 || trieFirst[nodes] !== edges) bad('the trie arrays differ in length');
  for (let n = 0; n < nodes; n++) {
    if (trieFirst[n + 1] < trieFirst[n]) bad(`trie node ${n}'s edges run backwards`);
    if (trieTerm[n] < -1 || trieTerm[n] >= size) bad(`trie node ${n} names piece ${trieTerm[n]}`);
  }
  for (let e = 0; e < edges; e++) if (!(edgeNext[e] >= 1 && edgeNext[e] < nodes)) bad(`trie edge ${e} leads to node ${edgeNext[e]}`);
}

/** One llama.cpp token type (1..6) per id. */
function checkTypes(types: Uint8Array, size: number, bad: Bad): void {
  if (types.length !== size) bad('the token types do not match the vocabulary', types.length);
  for (let i = 0; i < size; i++) if (!(types[i] >= 1 && types[i] <= 6)) bad(`token ${i} has type ${types[i]}`);
}

function checkFilled(filled: number, entries: number, bad: Bad): void {
  // Fewer when a string repeats: the index names its last entry only (PackedVocab.pack).
  if (filled > entries) bad(`the vocabulary index holds ${filled} entries, the vocabulary ${entries}`);
}

function checkMergeShape(header: PackedHeader, { keys, ranks, merged }: Arrays, bad: Bad): void {
  if (keys.length !== ranks.length * 2 || merged.length !== ranks.length) bad('merge arrays differ in length');
  checkCapacity(ranks.length, header.mergeCount, bad, 'merge table');
}

function checkUsedAndUnknown(header: PackedHeader, arrays: Arrays, used: number, bad: Bad): void {
  if (used !== header.mergeCount) bad(`the merge table holds ${used} merges, the header says ${header.mergeCount}`);
  if (header.kind === 'wordpiece' && new PackedVocab(arrays).get(header.unkToken) === undefined && !header.addedTokens.some((a) => a[1] === header.unkToken)) {
    bad('the unknown token is not in the vocabulary', header.unkToken);
  }
}

type Bad = (what: string, found?: unknown) => never;

function checkEntries(offsets: Uint32Array, ids: Int32Array, size: number, from: number, to: number, bad: Bad): void {
  for (let e = from; e < to; e++) {
    if (offsets[e + 1] < offsets[e]) bad(`token offsets decrease at entry ${e}`);
    if (!(ids[e] >= 0 && ids[e] < size)) bad(`entry ${e} has id ${ids[e]} outside [0, ${size})`);
  }
}

function checkById(byId: Int32Array, ids: Int32Array, from: number, to: number, bad: Bad): void {
  for (let id = from; id < to; id++) {
    const e = byId[id];
    if (e !== -1 && !(e >= 0 && e < ids.length && ids[e] === id)) bad(`id ${id} names entry ${e}, which is not its`);
  }
}

/** The filled slots of index[from, to). */
function countIndexSlots(index: Int32Array, entries: number, from: number, to: number, bad: Bad): number {
  let filled = 0;
  for (let slot = from; slot < to; slot++) {
    const e = index[slot];
    if (e === -1) continue;
    if (!(e >= 0 && e < entries)) bad(`vocabulary index slot ${slot} names entry ${e}`);
    filled++;
  }
  return filled;
}

/** The used slots of the merge table's [from, to). */
function countMergeSlots(keys: Int32Array, ranks: Int32Array, merged: Int32Array, size: number, from: number, to: number, bad: Bad): number {
  let used = 0;
  for (let slot = from; slot < to; slot++) {
    const a = keys[2 * slot];
    if (a === -1) continue;
    const b = keys[2 * slot + 1];
    if (!(a >= 0 && a < size && b >= 0 && b < size && ranks[slot] >= 0 && merged[slot] >= 0 && merged[slot] < size)) bad(`merge table slot ${slot} is invalid`);
    used++;
  }
  return used;
}

/** An open-addressing table: capacity a power of two, at most half of it in use (so every probe meets an empty slot). */
function checkCapacity(capacity: number, used: number, bad: (what: string, found?: unknown) => never, what: string): void {
  if (capacity < 16 || (capacity & (capacity - 1)) !== 0) bad(`${what} capacity is not a power of two`, capacity);
  if (used * 2 > capacity) bad(`${what} is more than half full`, used);
}

/** Views of the arrays (the buffer must start at a multiple of 8, as a SharedArrayBuffer or a whole file read does). */
function viewArrays(bytes: Buffer, header: PackedHeader, where: string): Arrays {
  if (bytes.byteOffset % 8 !== 0) throw rangeError('a packed tokenizer must start at a multiple of 8 bytes');
  let at = align8(PREFIX + bytes.readUInt32LE(8));
  const out: Record<string, Int32Array | Uint32Array | Uint8Array | Uint16Array | Float64Array> = {};
  for (const [name, Kind] of ARRAYS) {
    const n = header.lengths?.[name];
    if (!Number.isInteger(n) || n < 0 || at + n * Kind.BYTES_PER_ELEMENT > bytes.length) {
      throw new WeightFormatError('TRUNCATED', `packed tokenizer: array ${name} runs past the end`, { path: where, offset: at, expected: `<= ${bytes.length - at} bytes`, found: n });
    }
    out[name] = new Kind(bytes.buffer as ArrayBuffer, bytes.byteOffset + at, n);
    at = align8(at + n * Kind.BYTES_PER_ELEMENT);
  }
  return out as unknown as Arrays;
}

/** The tokenizer of a packed buffer (made by packTokenizer, or read from a file and checked by checkPacked). */
export function unpackTokenizer(buffer: Uint8Array | SharedArrayBuffer, where = 'packed tokenizer'): Tokenizer {
  const bytes = buffer instanceof Uint8Array ? Buffer.from(buffer.buffer, buffer.byteOffset, buffer.byteLength) : Buffer.from(buffer);
  const header = readHeader(bytes, where);
  const a = viewArrays(bytes, header, where);
  const common = {
    addedTokens: header.addedTokens.map(unpackAddedToken),
    specialIds: header.specialIds,
    wrapping: header.wrapping,
    truncation: header.truncation ?? undefined,
  };
  if (header.kind === 'unigram') {
    const { scores, trieFirst, trieTerm, edgeLabel, edgeNext } = a;
    return new UnigramTokenizer({
      ...common,
      vocab: new PackedVocab(a),
      scores,
      trie: { trieFirst, trieTerm, edgeLabel, edgeNext },
      unkId: header.unkId ?? undefined,
      byteFallback: header.byteFallback,
      normalizer: header.normalizer,
      preTokenizer: header.preTokenizer,
      decoder: header.decoder,
      where,
    });
  }
  if (header.kind === 'ugm') {
    const { scores, trieFirst, trieTerm, edgeLabel, edgeNext, types } = a;
    return new UgmTokenizer({
      ...common,
      vocab: new PackedVocab(a),
      types,
      scores,
      trie: { trieFirst, trieTerm, edgeLabel, edgeNext },
      unkId: header.unkId,
      unkScore: header.unkScore,
      charsmap: header.charsmap,
      addSpacePrefix: header.addSpacePrefix,
      removeExtraWhitespaces: header.removeExtraWhitespaces,
      where,
    });
  }
  if (header.kind === 'wordpiece') {
    return new WordPieceTokenizer({
      ...common,
      vocab: new PackedVocab(a),
      unkToken: header.unkToken,
      continuingSubwordPrefix: header.prefix,
      maxInputCharsPerWord: header.maxChars,
      normalizer: header.normalizer,
      cleanup: header.cleanup,
      where,
    });
  }
  const bpe = { ...common, vocab: new PackedVocab(a), merges: MergeTable.fromArrays(a, header.mergeCount), text: header.text };
  if (header.kind === 'byte-level-bpe') return new ByteLevelBpeTokenizer({ ...bpe, model: header.model });
  return new ByteFallbackBpeTokenizer({
    ...bpe,
    decoder: header.decoder,
    byteFallback: header.byteFallback,
    unkId: header.unkId ?? undefined,
    fuseUnk: header.fuseUnk,
  });
}
