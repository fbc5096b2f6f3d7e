/**
 * A llama2.c checkpoint's header (FORMATS.md §7; the layout is described in llama2c.ts) and its
 * detection, apart from the reader and writer: detection runs on every file that no other format
 * claims, and must not load the whole format.
 */
import { ByteCursor, fail } from './bytes';
import type { Probe } from '../types';

export const LLAMA2C_MAGIC = 0x616b3432;
export const LLAMA2C_V0_HEADER_BYTES = 28;
export const LLAMA2C_HEADER_BYTES = 256;
/** Limits that keep every size computation far inside safe integers. */
const MAX_DIM = 1 << 20;
const MAX_LAYERS = 4096;
const MAX_VOCAB = 1 << 24;

export interface Llama2cHeader {
  version: 0 | 1 | 2;
  dim: number;
  hiddenDim: number;
  nLayers: number;
  nHeads: number;
  nKvHeads: number;
  vocabSize: number;
  seqLen: number;
  shared: boolean;
  groupSize?: number;
  /** Where the tensors start. */
  payloadOffset: number;
}

export function readLlama2cHeader(bytes: Buffer, path: string): Llama2cHeader {
  const cur = new ByteCursor(bytes, path);
  let version: 0 | 1 | 2 = 0;
  if (bytes.length >= 4 && bytes.readUInt32LE(0) === LLAMA2C_MAGIC) {
    cur.u32('the magic');
    const v = cur.i32('the version');
    if (v !== 1 && v !== 2) fail('BAD_VERSION', 'unsupported llama2.c "ak42" version', { path, offset: 4, expected: '1 or 2', found: v });
    version = v;
    cur.need(LLAMA2C_HEADER_BYTES - 8, 'the 256-byte header');
  }
  const at = cur.offset;
  const ints = [cur.i32('dim'), cur.i32('hidden_dim'), cur.i32('n_layers'), cur.i32('n_heads'), cur.i32('n_kv_heads'), cur.i32('vocab_size'), cur.i32('seq_len')];
  const [dim, hiddenDim, nLayers, nHeads, nKvHeads, rawVocab, seqLen] = ints;
  const names = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'seq_len'];
  const limits = [MAX_DIM, MAX_DIM * 4, MAX_LAYERS, MAX_DIM, MAX_DIM, MAX_VOCAB, MAX_DIM * 16];
  ints.forEach((v, i) => {
    const value = i === 5 && version === 0 ? Math.abs(v) : v;
    if (value <= 0 || value > limits[i]) {
      fail('CONFIG_MISMATCH', `${names[i]} is out of range`, { path, offset: at + 4 * i, expected: `1..${limits[i]}`, found: v });
    }
  });
  if (dim % nHeads !== 0) fail('CONFIG_MISMATCH', 'dim is not a multiple of n_heads', { path, offset: at, expected: `multiple of ${nHeads}`, found: dim });
  if (nKvHeads > nHeads || nHeads % nKvHeads !== 0) fail('CONFIG_MISMATCH', 'n_heads is not a multiple of n_kv_heads', { path, offset: at + 16, expected: `divisor of ${nHeads}`, found: nKvHeads });
  if ((dim / nHeads) % 2 !== 0) fail('CONFIG_MISMATCH', 'the head size must be even for RoPE', { path, offset: at, expected: 'even', found: dim / nHeads });
  let shared = rawVocab > 0;
  let groupSize: number | undefined;
  if (version > 0) {
    const flag = bytes[36];
    if (flag > 1) fail('BAD_HEADER', 'shared_classifier must be 0 or 1', { path, offset: 36, expected: '0 | 1', found: flag });
    shared = flag === 1;
    if (version === 2) {
      groupSize = bytes.readInt32LE(37);
      if (groupSize <= 0 || groupSize > MAX_DIM) fail('CONFIG_MISMATCH', 'group_size is out of range', { path, offset: 37, expected: `1..${MAX_DIM}`, found: groupSize });
    }
  }
  return {
    version,
    dim,
    hiddenDim,
    nLayers,
    nHeads,
    nKvHeads,
    vocabSize: Math.abs(rawVocab),
    seqLen,
    shared,
    groupSize,
    payloadOffset: version === 0 ? LLAMA2C_V0_HEADER_BYTES : LLAMA2C_HEADER_BYTES,
  };
}

/**
 * v0 has no magic: accept a header of sane, mutually consistent sizes whose file could hold the
 * tensors (llama2c is last in detection order). "ak42" files are recognised by their magic.
 */
export function detectLlama2c(probe: Probe): boolean {
  if (probe.isDirectory || probe.head.length < LLAMA2C_V0_HEADER_BYTES) return false;
  if (probe.head.readUInt32LE(0) === LLAMA2C_MAGIC) return true;
  try {
    const h = readLlama2cHeader(probe.head, probe.path);
    return h.version === 0;
  } catch {
    return false;
  }
}

