/**
 * The vocabulary of a GGUF file (`tokenizer.ggml.*`) as TokenizerData. The file is mapped and
 * its metadata parsed by parseGguf (gguf.ts); this adds the keys the tokenizer needs beyond the
 * reader's TokenizerData (BERT's [SEP]/[CLS]/[MASK] ids, add_space_prefix).
 */
import { fail } from '../containers/bytes';
import { parseGguf } from '../containers/gguf';
import { readUgmKeys } from '../containers/gguf-ugm-keys';
import { mapFile } from '../../addon/mapping';
import type { TokenizerData } from '../../addon/weights';

type Gguf = Extract<TokenizerData, { kind: 'gguf' }>;

/** `tokenizer.ggml.*` metadata -> TokenizerData, or undefined when the file has no vocabulary. */
export function ggufTokenizerData(meta: Record<string, unknown>, path: string): Gguf | undefined {
  const model = meta['tokenizer.ggml.model'];
  const tokens = meta['tokenizer.ggml.tokens'];
  if (tokens === undefined) return undefined;
  if (!Array.isArray(tokens) || !tokens.every((t) => typeof t === 'string')) {
    fail('BAD_HEADER', "'tokenizer.ggml.tokens' is not an array of strings", { path });
  }
  const n = tokens.length;
  const data: Gguf = { kind: 'gguf', model: typeof model === 'string' ? model : 'llama', tokens: tokens as string[] };
  const pre = meta['tokenizer.ggml.pre'];
  if (typeof pre === 'string') data.pre = pre;
  const scores = meta['tokenizer.ggml.scores'];
  if (scores !== undefined) {
    if (!(scores instanceof Float32Array) || scores.length !== n) fail('BAD_HEADER', "'tokenizer.ggml.scores' is not one f32 per token", { path, expected: n });
    data.scores = scores;
  }
  const types = meta['tokenizer.ggml.token_type'];
  if (types !== undefined) {
    if (!(types instanceof Int32Array) || types.length !== n) fail('BAD_HEADER', "'tokenizer.ggml.token_type' is not one i32 per token", { path, expected: n });
    data.tokenTypes = types;
  }
  const merges = meta['tokenizer.ggml.merges'];
  if (merges !== undefined) {
    if (!Array.isArray(merges) || !merges.every((m) => typeof m === 'string')) fail('BAD_HEADER', "'tokenizer.ggml.merges' is not an array of strings", { path });
    data.merges = merges as string[];
  }
  const ids: [keyof Gguf, string][] = [
    ['bosId', 'bos_token_id'], ['eosId', 'eos_token_id'], ['unkId', 'unknown_token_id'], ['padId', 'padding_token_id'],
    ['sepId', 'seperator_token_id'], ['clsId', 'cls_token_id'], ['maskId', 'mask_token_id'],
  ];
  for (const [field, key] of ids) {
    const raw = meta[`tokenizer.ggml.${key}`];
    if (raw === undefined) continue;
    if (typeof raw !== 'number' || !Number.isInteger(raw) || raw < 0) fail('BAD_HEADER', `'tokenizer.ggml.${key}' is not a token id`, { path, found: raw });
    // llama.cpp writes 0xFFFFFFFF for "none": ids outside the vocabulary mean absent.
    if (raw < n) (data as unknown as Record<string, unknown>)[field] = raw;
  }
  const flags: [keyof Gguf, string][] = [['addBos', 'add_bos_token'], ['addEos', 'add_eos_token'], ['addSpacePrefix', 'add_space_prefix']];
  for (const [field, key] of flags) {
    const v = meta[`tokenizer.ggml.${key}`];
    if (typeof v === 'boolean') (data as unknown as Record<string, unknown>)[field] = v;
  }
  readUgmKeys(meta, path, data);
  return data;
}

/** Maps a GGUF file, reads its vocabulary and unmaps it. */
export function readGgufTokenizerData(path: string): Gguf {
  const src = mapFile(path);
  try {
    const data = ggufTokenizerData(parseGguf(src.bytes, path, src).metadata, path);
    if (!data) return fail('BAD_HEADER', 'the GGUF file holds no tokenizer.ggml vocabulary', { path });
    return data;
  } finally {
    src.close();
  }
}
