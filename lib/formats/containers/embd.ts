/**
 * EMBD (cpp_embedder's seed spec), FORMATS.md §3: a 64-byte header, a metadata section of string
 * key/values, an optional vocabulary section with a 20-byte special-id block, a tensor index of
 * 32-byte descriptors (FNV-1a name hashes) followed by a string table of names, 64-byte aligned
 * tensor data (HF [out,in]), and a 16-byte footer with CRC-32s of the data and of the whole file.
 * Every layout choice the seed left open is a DECISION of §3, implemented here as written.
 */
import * as nodePath from 'node:path';
import { isFamily } from '../../architectures';
import { rangeError, UnsupportedError } from '../../base/errors';
import { mapFile, type MappedSource } from '../../addon/mapping';
import { numel, type DType, type ModelWeights, type TensorView, type TokenizerData } from '../../addon/weights';
import { bertTensorSpecs, BERT_NAMES, type BertConfig } from '../../architectures/bert';
import { ByteCursor, checkLayerCount, checkNoOverlap, checkRange, fail } from './bytes';
import { EMBD_MAGIC, detectEmbd } from './magic';
import { crc32, crc32Combine, crc32Native, fnv1a32 } from '../../addon/checksums';
import type { FloatDType } from '../quantization/dtype-convert';
import type { FormatModule, ReadOptions, WriteOptions } from '../types';
import { runYielding, type Steps } from '../../base/steps';
import { lazy } from '../../base/lazy';

/** The writer's modules, loaded by the first write: reading needs none of them. */
const writing = lazy(() => ({
  ...(require('./safetensors') as typeof import('./safetensors')),
  ...(require('../writing/output-files') as typeof import('../writing/output-files')),
  ...(require('../writing/write-job') as typeof import('../writing/write-job')),
}));

export { EMBD_MAGIC } from './magic';
export const EMBD_FOOTER_MAGIC = 0x454d4244; // "DBME"
export const EMBD_VERSION_MAJOR = 1;
export const EMBD_HEADER_BYTES = 64;
export const EMBD_FOOTER_BYTES = 16;
const DESCRIPTOR_BYTES = 32;
const SPECIAL_BLOCK_BYTES = 20;
const ALIGNMENT = 64;

export const FLAG_VOCAB_EMBEDDED = 1 << 0;
export const FLAG_TENSORS_ALIGNED = 1 << 1;
export const FLAG_CHECKSUM_ENABLED = 1 << 2;
export const FLAG_COMPRESSED = 1 << 3;

/** dtype codes of §3.5. */
export const EMBD_DTYPES: readonly DType[] = ['f32', 'f16', 'bf16', 'i32', 'i16', 'i8', 'u32', 'u16', 'u8'];
const DTYPE_SIZE: Readonly<Record<string, number>> = { f32: 4, f16: 2, bf16: 2, i32: 4, i16: 2, i8: 1, u32: 4, u16: 2, u8: 1 };

/** The metadata keys the seed requires, in its order. */
export const EMBD_REQUIRED_KEYS = [
  'model_name', 'model_version', 'embedding_dim', 'vocab_size', 'num_layers', 'num_attention_heads',
  'hidden_size', 'intermediate_size', 'max_position_emb', 'created_at',
] as const;

const align = (n: number, a: number) => Math.ceil(n / a) * a;
// ignoreBOM keeps a leading U+FEFF: some vocabularies have it as a token of its own.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The header fields (offsets in §3.2's table). */
export interface EmbdHeader {
  versionMajor: number;
  versionMinor: number;
  flags: number;
  metadataOffset: number;
  metadataSize: number;
  vocabOffset: number;
  vocabSize: number;
  tensorIndexOffset: number;
  tensorIndexCount: number;
  tensorDataOffset: number;
  tensorDataSize: number;
  totalFileSize: number;
  headerChecksum: number;
}

// ---- reader ----------------------------------------------------------------------------------

function readHeader(src: MappedSource, verify: boolean): EmbdHeader {
  const path = src.path;
  const cur = new ByteCursor(src.bytes, path);
  cur.need(EMBD_HEADER_BYTES, 'the EMBD header');
  const magic = cur.u32('magic');
  if (magic !== EMBD_MAGIC) fail('BAD_MAGIC', 'not an EMBD file', { path, offset: 0, expected: EMBD_MAGIC, found: magic });
  const versionMajor = cur.u16('version_major');
  const versionMinor = cur.u16('version_minor');
  if (versionMajor !== EMBD_VERSION_MAJOR) fail('BAD_VERSION', 'unsupported EMBD major version', { path, offset: 4, expected: EMBD_VERSION_MAJOR, found: versionMajor });
  const flags = cur.u32('flags');
  if (flags & FLAG_COMPRESSED) fail('UNSUPPORTED', 'compressed EMBD files are not supported', { path, offset: 8, expected: 'bit3 clear', found: flags });
  if (flags >>> 4) fail('UNSUPPORTED', 'unknown EMBD flags (bits 4-31)', { path, offset: 8, expected: 'bits 4-31 clear', found: flags });
  const h: EmbdHeader = {
    versionMajor,
    versionMinor,
    flags,
    metadataOffset: cur.u32('metadata_offset'),
    metadataSize: cur.u32('metadata_size'),
    vocabOffset: cur.u32('vocab_offset'),
    vocabSize: cur.u32('vocab_size'),
    tensorIndexOffset: cur.u32('tensor_index_offset'),
    tensorIndexCount: cur.u32('tensor_index_count'),
    tensorDataOffset: cur.u32('tensor_data_offset'),
    tensorDataSize: cur.u64('tensor_data_size'),
    totalFileSize: cur.u64('total_file_size'),
    headerChecksum: cur.u32('header_checksum'),
  };
  const reserved = cur.u32('reserved');
  if (reserved !== 0) fail('BAD_HEADER', 'the reserved header word is not 0', { path, offset: 60, expected: 0, found: reserved });
  if (flags & FLAG_CHECKSUM_ENABLED && verify) {
    const crc = crc32(src.bytes.subarray(0, 56));
    if (crc !== h.headerChecksum) fail('CHECKSUM_MISMATCH', 'header checksum', { path, offset: 56, expected: crc, found: h.headerChecksum });
  }
  return h;
}

/** Checks the file size and places the sections: each inside the file, none overlapping. */
function checkFileSize(src: MappedSource, h: EmbdHeader): void {
  const path = src.path;
  const size = src.byteLength;
  if (size < h.totalFileSize) fail('TRUNCATED', 'the file is shorter than total_file_size', { path, offset: size, expected: h.totalFileSize, found: size });
  if (size > h.totalFileSize) fail('TRAILING_DATA', 'bytes follow the footer', { path, offset: h.totalFileSize, expected: h.totalFileSize, found: size });
}

/** Places the sections: each inside the file, none overlapping, the sizes consistent. */
function checkSections(src: MappedSource, h: EmbdHeader, stringTableBytes: number): void {
  const path = src.path;
  if (h.tensorDataOffset + h.tensorDataSize + EMBD_FOOTER_BYTES !== h.totalFileSize) {
    fail('BAD_HEADER', 'total_file_size != tensor_data_offset + tensor_data_size + 16', {
      path,
      offset: 48,
      expected: h.tensorDataOffset + h.tensorDataSize + EMBD_FOOTER_BYTES,
      found: h.totalFileSize,
    });
  }
  if (h.flags & FLAG_TENSORS_ALIGNED && h.tensorDataOffset % ALIGNMENT !== 0) {
    fail('BAD_HEADER', 'tensor_data_offset is not 64-byte aligned', { path, offset: 36, expected: 'a multiple of 64', found: h.tensorDataOffset });
  }
  if (!(h.flags & FLAG_VOCAB_EMBEDDED) && (h.vocabOffset !== 0 || h.vocabSize !== 0)) {
    fail('BAD_HEADER', 'a vocabulary section is given but flags bit0 is clear', { path, offset: 20, expected: 0, found: h.vocabOffset });
  }
  const sections = [
    { name: 'header', byteOffset: 0, byteLength: EMBD_HEADER_BYTES },
    { name: 'metadata section', byteOffset: h.metadataOffset, byteLength: h.metadataSize },
    ...(h.flags & FLAG_VOCAB_EMBEDDED ? [{ name: 'vocabulary section', byteOffset: h.vocabOffset, byteLength: h.vocabSize }] : []),
    { name: 'tensor index and string table', byteOffset: h.tensorIndexOffset, byteLength: DESCRIPTOR_BYTES * h.tensorIndexCount + stringTableBytes },
    { name: 'tensor data', byteOffset: h.tensorDataOffset, byteLength: h.tensorDataSize },
    { name: 'footer', byteOffset: h.totalFileSize - EMBD_FOOTER_BYTES, byteLength: EMBD_FOOTER_BYTES },
  ];
  for (const s of sections) checkRange(path, s.byteOffset, s.byteLength, h.totalFileSize, `the ${s.name}`);
  const sorted = [...sections].sort((a, b) => a.byteOffset - b.byteOffset);
  for (let i = 1; i < sorted.length; i++) {
    const prev = sorted[i - 1];
    if (sorted[i].byteOffset < prev.byteOffset + prev.byteLength) {
      fail('OVERLAP', `the ${prev.name} and the ${sorted[i].name} overlap`, {
        path,
        offset: sorted[i].byteOffset,
        expected: `offset >= ${prev.byteOffset + prev.byteLength}`,
        found: sorted[i].byteOffset,
      });
    }
  }
}

/** Entries in file order; keys must be non-empty, unique UTF-8; values UTF-8. */
function readMetadata(src: MappedSource, h: EmbdHeader): [string, string][] {
  const path = src.path;
  const end = h.metadataOffset + h.metadataSize;
  const cur = new ByteCursor(src.bytes, path, h.metadataOffset, end);
  const count = cur.u32('metadata entry_count');
  const totalSize = cur.u32('metadata total_size');
  // DECISION (§3.3): total_size excludes the 8-byte header; accept the other reading too.
  const entriesBytes = h.metadataSize === totalSize + 8 ? totalSize : h.metadataSize === totalSize ? totalSize - 8 : -1;
  if (entriesBytes < 0) {
    fail('BAD_HEADER', 'metadata_size agrees with neither total_size nor total_size + 8', { path, offset: 16, expected: `${totalSize + 8} or ${totalSize}`, found: h.metadataSize });
  }
  const entries: [string, string][] = [];
  const keys = new Set<string>();
  for (let i = 0; i < count; i++) {
    const keyLength = cur.u16('a metadata key length');
    const valueLength = cur.u16('a metadata value length');
    const keyAt = cur.offset;
    if (keyLength === 0) fail('BAD_NAME', 'empty metadata key', { path, offset: keyAt });
    const key = cur.utf8(keyLength, 'a metadata key');
    if (keys.has(key)) fail('BAD_NAME', `metadata key '${key}' appears twice`, { path, offset: keyAt });
    keys.add(key);
    const valueAt = cur.offset;
    const raw = cur.bytesView(valueLength, `the value of ${key}`);
    let value: string;
    try {
      value = utf8.decode(raw);
    } catch {
      return fail('BAD_HEADER', `the value of metadata key '${key}' is not UTF-8`, { path, offset: valueAt });
    }
    entries.push([key, value]);
  }
  const used = cur.offset - h.metadataOffset - 8;
  if (used !== entriesBytes) fail('BAD_HEADER', 'metadata entries do not fill total_size exactly', { path, offset: cur.offset, expected: entriesBytes, found: used });
  return entries;
}

/** Tokens decoded between two checkpoints of readVocabSteps (well under a millisecond; see steps.ts). */
const VOCAB_STEP = 2048;

/** The vocabulary section, with §3.4's tolerant placement of the special-id block; in slices (steps.ts). */
function* readVocabSteps(src: MappedSource, h: EmbdHeader): Steps<Extract<TokenizerData, { kind: 'wordpiece' }> & { count: number }> {
  const path = src.path;
  const start = h.vocabOffset;
  const end = start + h.vocabSize;
  const head = new ByteCursor(src.bytes, path, start, end);
  const count = head.u32('token_count');
  const totalSize = head.u32('the vocabulary total_size');
  const special = head.u32('special_tokens');
  if (12 + totalSize + SPECIAL_BLOCK_BYTES !== h.vocabSize) {
    fail('BAD_HEADER', 'vocab_size != 12 + token bytes + 20', { path, offset: 24, expected: 12 + totalSize + SPECIAL_BLOCK_BYTES, found: h.vocabSize });
  }
  // Where the block may sit: before the entries (special == +12), else at the absolute offset, else
  // relative to the section; a candidate must lie inside the section and clear of the entries.
  const fits = (o: number, entries: number) =>
    o >= start + 12 && o + SPECIAL_BLOCK_BYTES <= end && (o + SPECIAL_BLOCK_BYTES <= entries || o >= entries + totalSize);
  let blockAt: number;
  let entriesAt = start + 12;
  if (special === start + 12) {
    blockAt = special;
    entriesAt = start + 12 + SPECIAL_BLOCK_BYTES;
  } else if (fits(special, entriesAt)) {
    blockAt = special;
  } else if (fits(start + special, entriesAt)) {
    blockAt = start + special;
  } else {
    return fail('OUT_OF_BOUNDS', 'special_tokens points neither inside the vocabulary section nor clear of its entries', {
      path,
      offset: start + 8,
      expected: `${start + 12 + totalSize} (absolute) or ${12 + totalSize} (relative)`,
      found: special,
    });
  }
  const entriesEnd = entriesAt + totalSize;
  if (2 * count > totalSize) {
    fail('BAD_HEADER', 'token_count is larger than the token entries can hold', { path, offset: start, expected: `<= ${totalSize / 2}`, found: count });
  }
  const cur = new ByteCursor(src.bytes, path, entriesAt, entriesEnd);
  const tokens: string[] = new Array(count);
  for (let i = 0; i < count; i++) {
    if (i % VOCAB_STEP === VOCAB_STEP - 1) yield;
    const length = cur.u16('a token length');
    const at = cur.offset;
    const raw = cur.bytesView(length, `token ${i}`);
    try {
      tokens[i] = utf8.decode(raw);
    } catch {
      fail('BAD_HEADER', `token ${i} is not UTF-8`, { path, offset: at });
    }
  }
  if (cur.remaining !== 0) fail('BAD_HEADER', 'token entries do not fill total_size exactly', { path, offset: cur.offset, expected: totalSize, found: cur.offset - entriesAt });
  const ids = new ByteCursor(src.bytes, path, blockAt, blockAt + SPECIAL_BLOCK_BYTES);
  const names = ['pad', 'unk', 'cls', 'sep', 'mask'] as const;
  const specialIds = {} as Record<(typeof names)[number], number>;
  for (const name of names) {
    const at = ids.offset;
    const id = ids.u32(`the ${name} id`);
    if (id >= count) fail('CONFIG_MISMATCH', `the ${name} id lies outside the vocabulary`, { path, offset: at, expected: `< ${count}`, found: id });
    specialIds[name] = id;
  }
  return { kind: 'wordpiece', tokens, specialIds, doLowerCase: true, count };
}

interface Descriptor {
  name: string;
  dtype: DType;
  shape: number[];
  dataOffset: number;
  at: number;
}

function readIndex(src: MappedSource, h: EmbdHeader): Descriptor[] {
  const path = src.path;
  const indexEnd = h.tensorIndexOffset + DESCRIPTOR_BYTES * h.tensorIndexCount;
  checkRange(path, h.tensorIndexOffset, DESCRIPTOR_BYTES * h.tensorIndexCount, h.totalFileSize, 'the tensor index');
  const cur = new ByteCursor(src.bytes, path, h.tensorIndexOffset, indexEnd);
  const raw: { hash: number; dtype: DType; shape: number[]; nameLength: number; dataOffset: number; at: number }[] = [];
  for (let i = 0; i < h.tensorIndexCount; i++) {
    const at = cur.offset;
    const hash = cur.u32('name_hash');
    const code = cur.u8('dtype');
    if (code >= EMBD_DTYPES.length) fail('BAD_DTYPE', `descriptor ${i} has an unknown dtype code`, { path, offset: at + 4, expected: '0..8', found: code });
    const ndim = cur.u8('ndim');
    if (ndim < 1 || ndim > 4) fail('BAD_HEADER', `descriptor ${i} has ndim outside 1..4`, { path, offset: at + 5, expected: '1..4', found: ndim });
    const nameLength = cur.u16('name_length');
    if (nameLength === 0) fail('BAD_NAME', `descriptor ${i} has an empty name`, { path, offset: at + 6 });
    const dims = [cur.u32('shape[0]'), cur.u32('shape[1]'), cur.u32('shape[2]'), cur.u32('shape[3]')];
    if (dims.slice(ndim).some((d) => d !== 0)) fail('BAD_HEADER', `descriptor ${i} has non-zero unused dimensions`, { path, offset: at + 8, expected: 0, found: dims });
    const dataOffset = cur.u64('data_offset');
    raw.push({ hash, dtype: EMBD_DTYPES[code], shape: dims.slice(0, ndim), nameLength, dataOffset, at });
  }
  // DECISION (§3.5): the string table follows the descriptors, names back to back in descriptor order.
  const names = new ByteCursor(src.bytes, path, indexEnd, h.totalFileSize);
  return raw.map((d) => {
    const name = names.utf8(d.nameLength, 'a tensor name');
    const hash = fnv1a32(name);
    if (hash !== d.hash) fail('CHECKSUM_MISMATCH', `the FNV-1a hash of '${name}'`, { path, offset: d.at, expected: hash, found: d.hash });
    return { name, dtype: d.dtype, shape: d.shape, dataOffset: d.dataOffset, at: d.at };
  });
}

function stringTableBytes(src: MappedSource, h: EmbdHeader): number {
  let total = 0;
  for (let i = 0; i < h.tensorIndexCount; i++) {
    const at = h.tensorIndexOffset + DESCRIPTOR_BYTES * i + 6;
    checkRange(src.path, at, 2, h.totalFileSize, 'a tensor descriptor');
    total += src.bytes.readUInt16LE(at);
  }
  return total;
}

const POSITIVE_INT = /^[1-9][0-9]*$/;

/** HF hidden_act names -> BertConfig.hiddenAct ('gelu' is the erf form). */
function activationOf(text: string): BertConfig['hiddenAct'] | undefined {
  if (text === 'gelu') return 'gelu';
  if (text === 'gelu_tanh' || text === 'gelu_new' || text === 'gelu_pytorch_tanh') return 'gelu_tanh';
  return undefined;
}

/** BertConfig from the metadata entries (required keys, optional extras) and the token-type table. */
function configFromMetadata(meta: Map<string, string>, path: string, typeRows: number | undefined): BertConfig {
  for (const key of EMBD_REQUIRED_KEYS) {
    if (!meta.has(key)) fail('BAD_HEADER', `metadata lacks the required key '${key}'`, { path });
  }
  const int = (key: string): number => {
    const v = meta.get(key)!;
    if (!POSITIVE_INT.test(v) || !Number.isSafeInteger(Number(v))) fail('CONFIG_MISMATCH', `metadata ${key} is not a positive integer`, { path, expected: 'decimal digits', found: v });
    return Number(v);
  };
  const optionalInt = (key: string, fallback: number) => (meta.has(key) ? int(key) : fallback);
  const hidden = int('hidden_size');
  const heads = int('num_attention_heads');
  const maxPos = int('max_position_emb');
  if (int('embedding_dim') !== hidden) fail('CONFIG_MISMATCH', 'embedding_dim != hidden_size', { path, expected: hidden, found: int('embedding_dim') });
  if (hidden % heads !== 0) fail('CONFIG_MISMATCH', 'hidden_size is not a multiple of num_attention_heads', { path, expected: `multiple of ${heads}`, found: hidden });
  let layerNormEps = 1e-12;
  if (meta.has('layer_norm_eps')) {
    layerNormEps = Number(meta.get('layer_norm_eps'));
    if (!Number.isFinite(layerNormEps) || layerNormEps <= 0) fail('CONFIG_MISMATCH', 'metadata layer_norm_eps is not a positive number', { path, found: meta.get('layer_norm_eps') });
  }
  const act = meta.get('hidden_act') ?? 'gelu';
  const hiddenAct = activationOf(act) ?? fail('UNSUPPORTED', `hidden_act '${act}'`, { path, expected: 'gelu or gelu_tanh', found: act });
  const pooling = meta.get('pooling') ?? 'mean';
  if (pooling !== 'mean' && pooling !== 'cls' && pooling !== 'max') fail('UNSUPPORTED', `pooling '${pooling}'`, { path, expected: 'mean, cls or max', found: pooling });
  const normalizeText = meta.get('normalize') ?? 'true';
  if (normalizeText !== 'true' && normalizeText !== 'false') fail('CONFIG_MISMATCH', 'metadata normalize is not true or false', { path, found: normalizeText });
  const maxSeqLength = optionalInt('max_seq_length', Math.min(256, maxPos));
  if (maxSeqLength > maxPos) fail('CONFIG_MISMATCH', 'max_seq_length exceeds max_position_emb', { path, expected: `<= ${maxPos}`, found: maxSeqLength });
  return {
    architecture: 'bert',
    hiddenSize: hidden,
    numLayers: int('num_layers'),
    numHeads: heads,
    intermediateSize: int('intermediate_size'),
    vocabSize: int('vocab_size'),
    maxPositionEmbeddings: maxPos,
    typeVocabSize: optionalInt('type_vocab_size', typeRows ?? 2),
    layerNormEps,
    hiddenAct,
    maxSeqLength,
    pooling,
    normalize: normalizeText === 'true',
  };
}

/** Views for the descriptors, checked against the architecture: names, shapes, dtypes, bounds, overlap. */
function tensorViews(src: MappedSource, h: EmbdHeader, descriptors: Descriptor[], config: BertConfig): TensorView[] {
  const path = src.path;
  checkLayerCount('metadata num_layers', config.numLayers, descriptors.length, { path, offset: h.metadataOffset });
  const specs = new Map(bertTensorSpecs(config).map((s) => [s.name, s]));
  const seen = new Set<string>();
  let dataEnd = 0;
  const views = descriptors.map((d) => {
    const spec = specs.get(d.name);
    if (!spec) fail('BAD_NAME', `unknown tensor '${d.name}'`, { path, offset: d.at });
    if (seen.has(d.name)) fail('BAD_NAME', `tensor '${d.name}' appears twice`, { path, offset: d.at });
    seen.add(d.name);
    if (d.shape.length !== spec.shape.length || d.shape.some((v, i) => v !== spec.shape[i])) {
      fail('SHAPE_MISMATCH', `tensor '${d.name}' has a shape that disagrees with the metadata`, { path, offset: d.at + 8, expected: spec.shape, found: d.shape });
    }
    if (d.dtype !== 'f32' && d.dtype !== 'f16' && d.dtype !== 'bf16') {
      fail('BAD_DTYPE', `tensor '${d.name}' must be a float tensor`, { path, offset: d.at + 4, expected: 'f32, f16 or bf16', found: d.dtype });
    }
    if (h.flags & FLAG_TENSORS_ALIGNED && d.dataOffset % ALIGNMENT !== 0) {
      fail('BAD_HEADER', `tensor '${d.name}' is not 64-byte aligned`, { path, offset: d.at + 24, expected: 'a multiple of 64', found: d.dataOffset });
    }
    const byteLength = numel(d.shape) * DTYPE_SIZE[d.dtype];
    if (d.dataOffset + byteLength > h.tensorDataSize) {
      fail('OUT_OF_BOUNDS', `tensor '${d.name}' lies outside the tensor data section`, {
        path,
        offset: d.at + 24,
        expected: `end <= ${h.tensorDataSize}`,
        found: `offset ${d.dataOffset} + length ${byteLength}`,
      });
    }
    dataEnd = Math.max(dataEnd, d.dataOffset + byteLength);
    return { name: d.name, dtype: d.dtype, shape: d.shape, source: src, byteOffset: h.tensorDataOffset + d.dataOffset, byteLength };
  });
  for (const spec of specs.values()) {
    if (!spec.optional && !seen.has(spec.name)) fail('MISSING_TENSOR', `the file has no tensor '${spec.name}'`, { path, offset: h.tensorIndexOffset });
  }
  checkNoOverlap(path, views);
  if (dataEnd !== h.tensorDataSize) {
    fail('BAD_HEADER', 'tensor_data_size does not end at the last tensor', { path, offset: 40, expected: dataEnd, found: h.tensorDataSize });
  }
  return views;
}

async function verifyDataAndFile(src: MappedSource, h: EmbdHeader): Promise<void> {
  const path = src.path;
  const footerAt = h.totalFileSize - EMBD_FOOTER_BYTES;
  const storedData = src.bytes.readUInt32LE(footerAt);
  const storedFile = src.bytes.readUInt32LE(footerAt + 4);
  const dataStart = h.tensorDataOffset;
  const dataEnd = dataStart + h.tensorDataSize;
  // The data section ends where the footer starts: one pass over it, joined to the CRC of
  // everything before it for the file's. Both run on the native thread pool side by side.
  const crcOf = (start: number, end: number) => crc32Native(src.bytes.subarray(start, end), 0, { file: src.file });
  const [dataCrc, prefixCrc] = await Promise.all([crcOf(dataStart, dataEnd), crcOf(0, dataStart)]);
  const fileCrc = crc32Combine(prefixCrc, dataCrc, dataEnd - dataStart);
  if (dataCrc !== storedData) fail('CHECKSUM_MISMATCH', 'tensor data checksum', { path, offset: footerAt, expected: dataCrc, found: storedData });
  if (fileCrc !== storedFile) fail('CHECKSUM_MISMATCH', 'file checksum', { path, offset: footerAt + 4, expected: fileCrc, found: storedFile });
}

async function read(path: string, options: ReadOptions = {}): Promise<ModelWeights> {
  const verify = options.verifyChecksums !== false;
  const src = mapFile(path);
  try {
    const h = readHeader(src, verify);
    checkFileSize(src, h);
    checkSections(src, h, stringTableBytes(src, h));
    const footerMagic = src.bytes.readUInt32LE(h.totalFileSize - 8);
    if (footerMagic !== EMBD_FOOTER_MAGIC) {
      fail('BAD_MAGIC', 'the footer magic is not "DBME"', { path, offset: h.totalFileSize - 8, expected: EMBD_FOOTER_MAGIC, found: footerMagic });
    }
    const reservedFooter = src.bytes.readUInt32LE(h.totalFileSize - 4);
    if (reservedFooter !== 0) fail('BAD_HEADER', 'the reserved footer word is not 0', { path, offset: h.totalFileSize - 4, expected: 0, found: reservedFooter });
    // The file CRC covers the metadata, vocabulary and index: verify it before reading meaning
    // into them, so that a flipped bit reports the checksum, not its consequence.
    if (h.flags & FLAG_CHECKSUM_ENABLED && verify) await verifyDataAndFile(src, h);
    const entries = readMetadata(src, h);
    const meta = new Map(entries);
    const vocab = h.flags & FLAG_VOCAB_EMBEDDED ? await runYielding(readVocabSteps(src, h)) : undefined;
    const descriptors = readIndex(src, h);
    const typeRows = descriptors.find((d) => d.name === BERT_NAMES.tokenTypeEmbeddings)?.shape[0];
    const config = configFromMetadata(meta, path, typeRows);
    if (vocab && vocab.count !== config.vocabSize) {
      fail('CONFIG_MISMATCH', 'token_count differs from the metadata vocab_size', { path, offset: h.vocabOffset, expected: config.vocabSize, found: vocab.count });
    }
    const tensors = tensorViews(src, h, descriptors, config);
    const tokenizer: TokenizerData | undefined = vocab && {
      kind: 'wordpiece',
      tokens: vocab.tokens,
      specialIds: vocab.specialIds,
      doLowerCase: meta.get('do_lower_case') !== 'false',
    };
    return {
      format: 'embd',
      path,
      architecture: 'bert',
      config,
      tensors,
      metadata: Object.fromEntries(entries),
      checksums: !(h.flags & FLAG_CHECKSUM_ENABLED) ? 'absent' : verify ? 'verified' : 'not verified',
      tokenizer,
      sources: [src],
    };
  } catch (error) {
    src.close();
    throw error;
  }
}

// ---- writer ----------------------------------------------------------------------------------

/** Now, or SOURCE_DATE_EPOCH (seconds) when set, for reproducible files. */
function creationTime(): Date {
  const epoch = Number(process.env.SOURCE_DATE_EPOCH);
  return process.env.SOURCE_DATE_EPOCH && Number.isFinite(epoch) ? new Date(epoch * 1000) : new Date();
}

/** Parses a metadata value the way the reader would, to keep the source's text when the value is unchanged. */
function sameValue(text: string | undefined, value: string): boolean {
  if (text === undefined) return false;
  if (text === value) return true;
  const a = Number(text);
  const b = Number(value);
  return text.trim() !== '' && Number.isFinite(a) && a === b;
}

/**
 * The metadata entries to write, in order: the source's own entries (EMBD sources, or the
 * `embd.*` __metadata__ of a safetensors file written from one), then any required key it lacks,
 * in the seed's order, then the configuration extras. Values that follow from the configuration
 * are rewritten only when they differ from it.
 */
export function embdMetadataEntries(weights: ModelWeights, config: BertConfig, now = creationTime()): [string, string][] {
  const { EMBD_METADATA_PREFIX } = writing();
  const out = new Map<string, string>();
  if (weights.format === 'embd') {
    for (const [k, v] of Object.entries(weights.metadata)) if (typeof v === 'string') out.set(k, v);
  } else if (weights.format === 'safetensors') {
    for (const [k, v] of Object.entries(weights.metadata)) {
      if (typeof v === 'string' && k.startsWith(EMBD_METADATA_PREFIX) && k.length > EMBD_METADATA_PREFIX.length) out.set(k.slice(EMBD_METADATA_PREFIX.length), v);
    }
  }
  const setDerived = (key: string, value: string) => {
    if (!sameValue(out.get(key), value)) out.set(key, value);
  };
  const keep = (key: string, value: string) => {
    if (!out.has(key)) out.set(key, value);
  };
  keep('model_name', nodePath.basename(weights.path).replace(/\.[^.]*$/, '') || 'bert');
  keep('model_version', '1.0.0');
  setDerived('embedding_dim', String(config.hiddenSize));
  setDerived('vocab_size', String(config.vocabSize));
  setDerived('num_layers', String(config.numLayers));
  setDerived('num_attention_heads', String(config.numHeads));
  setDerived('hidden_size', String(config.hiddenSize));
  setDerived('intermediate_size', String(config.intermediateSize));
  setDerived('max_position_emb', String(config.maxPositionEmbeddings));
  keep('created_at', now.toISOString().replace(/\.\d{3}Z$/, 'Z'));
  keep('source_model', nodePath.basename(weights.path));
  setDerived('type_vocab_size', String(config.typeVocabSize));
  setDerived('layer_norm_eps', String(config.layerNormEps));
  if (activationOf(out.get('hidden_act') ?? '') !== config.hiddenAct) out.set('hidden_act', config.hiddenAct);
  setDerived('pooling', config.pooling);
  setDerived('normalize', String(config.normalize));
  setDerived('max_seq_length', String(config.maxSeqLength));
  // The reader lowercases unless told otherwise.
  const tok = weights.tokenizer;
  if (tok?.kind === 'wordpiece' && !tok.doLowerCase) out.set('do_lower_case', 'false');
  else if (tok?.kind === 'wordpiece' && out.get('do_lower_case') === 'false') out.delete('do_lower_case');
  return [...out];
}

function validateBertConfig(c: BertConfig, path: string): void {
  const ints: [string, number][] = [
    ['hidden_size', c.hiddenSize], ['num_layers', c.numLayers], ['num_attention_heads', c.numHeads], ['intermediate_size', c.intermediateSize],
    ['vocab_size', c.vocabSize], ['max_position_emb', c.maxPositionEmbeddings], ['type_vocab_size', c.typeVocabSize], ['max_seq_length', c.maxSeqLength],
  ];
  for (const [name, v] of ints) {
    if (!Number.isInteger(v) || v <= 0 || v > 0xffffffff) fail('CONFIG_MISMATCH', `${name} must be a positive 32-bit integer`, { path, expected: '> 0', found: v });
  }
  if (c.hiddenSize % c.numHeads !== 0) fail('CONFIG_MISMATCH', 'hidden_size is not a multiple of num_attention_heads', { path, expected: `multiple of ${c.numHeads}`, found: c.hiddenSize });
  if (c.maxSeqLength > c.maxPositionEmbeddings) fail('CONFIG_MISMATCH', 'max_seq_length exceeds max_position_emb', { path, expected: `<= ${c.maxPositionEmbeddings}`, found: c.maxSeqLength });
  if (c.positionOffset) fail('UNSUPPORTED', 'EMBD holds BERT encoders, whose positions start at row 0; this one (XLM-RoBERTa) starts at a later row', { path, expected: 0, found: c.positionOffset });
  if (c.ropeTheta !== undefined || c.hiddenAct === 'swiglu') fail('UNSUPPORTED', 'EMBD holds BERT encoders with a position table and a GELU feed-forward; this one (nomic-bert) has rotary positions and SwiGLU', { path, expected: 'gelu', found: c.hiddenAct });
}

function metadataSection(entries: [string, string][]): Buffer {
  const parts: Buffer[] = [];
  for (const [k, v] of entries) {
    const key = Buffer.from(k, 'utf8');
    const value = Buffer.from(v, 'utf8');
    if (key.length === 0 || key.length > 0xffff || value.length > 0xffff) throw rangeError(`metadata entry '${k}' does not fit u16 lengths`);
    const head = Buffer.alloc(4);
    head.writeUInt16LE(key.length, 0);
    head.writeUInt16LE(value.length, 2);
    parts.push(head, key, value);
  }
  const body = Buffer.concat(parts);
  const head = Buffer.alloc(8);
  head.writeUInt32LE(entries.length, 0);
  head.writeUInt32LE(body.length, 4);
  return Buffer.concat([head, body]);
}

/** Vocabulary section at absolute `offset`: header, entries, then the special-id block. */
function vocabSection(tok: Extract<TokenizerData, { kind: 'wordpiece' }>, offset: number): Buffer {
  const entries: Buffer[] = [];
  for (const t of tok.tokens) {
    const bytes = Buffer.from(t, 'utf8');
    if (bytes.length > 0xffff) throw rangeError(`a token of ${bytes.length} bytes does not fit a u16 length`);
    const len = Buffer.alloc(2);
    len.writeUInt16LE(bytes.length);
    entries.push(len, bytes);
  }
  const body = Buffer.concat(entries);
  const head = Buffer.alloc(12);
  head.writeUInt32LE(tok.tokens.length, 0);
  head.writeUInt32LE(body.length, 4);
  head.writeUInt32LE(offset + 12 + body.length, 8);
  const s = tok.specialIds;
  const block = Buffer.alloc(SPECIAL_BLOCK_BYTES);
  [s.pad, s.unk, s.cls, s.sep, s.mask].forEach((id, i) => {
    if (!Number.isInteger(id) || id < 0 || id >= tok.tokens.length) throw rangeError(`special id ${id} lies outside the vocabulary`);
    block.writeUInt32LE(id, 4 * i);
  });
  return Buffer.concat([head, body, block]);
}

async function write(weights: ModelWeights, path: string, options: WriteOptions = {}): Promise<void> {
  const { requireTensor, runWriteJob, tensorsByName, writeOutputs } = writing();
  if (!isFamily(weights.config, 'bert')) throw new UnsupportedError(`EMBD holds BERT encoders, not a ${weights.config.architecture} model`);
  const config = weights.config;
  validateBertConfig(config, weights.path);
  const byName = tensorsByName(weights);
  const tok = weights.tokenizer?.kind === 'wordpiece' ? weights.tokenizer : undefined;
  if (tok && tok.tokens.length !== config.vocabSize) {
    fail('CONFIG_MISMATCH', 'the vocabulary size differs from the configuration', { path: weights.path, expected: config.vocabSize, found: tok.tokens.length });
  }
  const plan = bertTensorSpecs(config)
    .filter((s) => !s.optional || byName.has(s.name))
    .map((s) => {
      const view = requireTensor(weights, byName, s.name, s.shape);
      const dtype: FloatDType = options.dtype ?? (view.dtype as FloatDType);
      return { name: s.name, shape: s.shape, view, dtype, code: EMBD_DTYPES.indexOf(dtype), byteLength: numel(s.shape) * DTYPE_SIZE[dtype], dataOffset: 0 };
    });

  // Layout (§3.2): sections packed from byte 64, data and every tensor 64-aligned.
  const flags = FLAG_TENSORS_ALIGNED | FLAG_CHECKSUM_ENABLED | (tok ? FLAG_VOCAB_EMBEDDED : 0);
  const metadata = metadataSection(embdMetadataEntries(weights, config));
  const metadataOffset = EMBD_HEADER_BYTES;
  const vocabOffset = tok ? metadataOffset + metadata.length : 0;
  const vocab = tok ? vocabSection(tok, vocabOffset) : Buffer.alloc(0);
  const indexOffset = metadataOffset + metadata.length + vocab.length;
  const names = plan.map((p) => Buffer.from(p.name, 'utf8'));
  const stringsEnd = indexOffset + DESCRIPTOR_BYTES * plan.length + names.reduce((a, n) => a + n.length, 0);
  const dataOffset = align(stringsEnd, ALIGNMENT);
  let cursor = 0;
  for (const p of plan) {
    p.dataOffset = align(cursor, ALIGNMENT);
    cursor = p.dataOffset + p.byteLength;
  }
  const dataSize = cursor;
  const totalSize = dataOffset + dataSize + EMBD_FOOTER_BYTES;
  if (totalSize > 2 ** 53 || dataOffset > 0xffffffff) throw new UnsupportedError('the model does not fit EMBD offsets');

  const header = Buffer.alloc(EMBD_HEADER_BYTES);
  header.writeUInt32LE(EMBD_MAGIC, 0);
  header.writeUInt16LE(EMBD_VERSION_MAJOR, 4);
  header.writeUInt16LE(0, 6);
  header.writeUInt32LE(flags, 8);
  header.writeUInt32LE(metadataOffset, 12);
  header.writeUInt32LE(metadata.length, 16);
  header.writeUInt32LE(vocabOffset, 20);
  header.writeUInt32LE(vocab.length, 24);
  header.writeUInt32LE(indexOffset, 28);
  header.writeUInt32LE(plan.length, 32);
  header.writeUInt32LE(dataOffset, 36);
  header.writeBigUInt64LE(BigInt(dataSize), 40);
  header.writeBigUInt64LE(BigInt(totalSize), 48);
  header.writeUInt32LE(crc32(header.subarray(0, 56)), 56);

  const index = Buffer.alloc(DESCRIPTOR_BYTES * plan.length);
  plan.forEach((p, i) => {
    const o = DESCRIPTOR_BYTES * i;
    index.writeUInt32LE(fnv1a32(p.name), o);
    index.writeUInt8(p.code, o + 4);
    index.writeUInt8(p.shape.length, o + 5);
    index.writeUInt16LE(names[i].length, o + 6);
    p.shape.forEach((d, k) => index.writeUInt32LE(d, o + 8 + 4 * k));
    index.writeBigUInt64LE(BigInt(p.dataOffset), o + 24);
  });
  const prefix = Buffer.concat([header, metadata, vocab, index, ...names, Buffer.alloc(dataOffset - stringsEnd)]);

  await writeOutputs(weights, options, (out) => runWriteJob(out.file(path), totalSize, options, async (job) => {
    let fileCrc = crc32(prefix);
    let dataCrc = 0;
    await job.write(prefix);
    job.tap = (chunk) => {
      fileCrc = crc32(chunk, fileCrc);
      dataCrc = crc32(chunk, dataCrc);
    };
    let at = 0;
    for (const p of plan) {
      if (p.dataOffset > at) await job.write(new Uint8Array(p.dataOffset - at));
      await job.writeTensor(p.view, p.dtype);
      at = p.dataOffset + p.byteLength;
    }
    job.tap = undefined;
    const footer = Buffer.alloc(EMBD_FOOTER_BYTES);
    footer.writeUInt32LE(dataCrc, 0);
    footer.writeUInt32LE(fileCrc, 4);
    footer.writeUInt32LE(EMBD_FOOTER_MAGIC, 8);
    await job.write(footer);
  }));
}

export const embdFormat: FormatModule = {
  name: 'embd',
  title: 'EMBD (cpp_embedder)',
  detect: detectEmbd,
  read,
  write,
};
