/**
 * Byte-level BPE rebuilt from an ajc1 `.tokenizer` alone (FORMATS.md §5.3): tokens are raw byte
 * strings, and a token made by merge number `rank` carries the score -ln(rank + 1); bytes and
 * added tokens carry -1e6. The merges themselves are not stored, only their results, so every
 * split of a merged token into two earlier tokens is accepted as that merge (a superset of the
 * true merge list; the true pair is always among them). With the Qwen2 pre-tokenizer and NFC
 * this reproduces Hugging Face's ids, which runq's own encode (no pre-tokenizer) does not.
 */
import { WeightFormatError } from '../base/errors';
import type { AddedToken } from './added-tokens';
import { bytesToByteLevel } from './byte-level';
import { ByteLevelBpeTokenizer } from './byte-level-bpe';
import { ByteStringIds } from './byte-string-ids';
import { MergeTable } from './merge-table';
import { MapVocab } from './bpe-vocab';
import { QWEN2_PATTERN } from './pretokenizers';
import { runNow, type Steps } from '../base/steps';
import type { TokenizerData } from '../addon/weights';

/** Scores at or below this mark tokens that are no merge result (bytes, added tokens, absent ids). */
const NOT_A_MERGE = -1e5;

/** merge rank from a stored score; exact for every rank below 2^24 (f32 resolution of ln). */
export function rankFromScore(score: number): number {
  return Math.round(Math.exp(-score) - 1);
}

const utf8 = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

/** Tokens between two checkpoints of the build (well under a millisecond; see steps.ts). */
const STEP = 1024;

export function byteLevelBpeFromScored(
  data: Extract<TokenizerData, { kind: 'scored' }>,
  where = 'ajc1 tokenizer',
): ByteLevelBpeTokenizer {
  return runNow(byteLevelBpeFromScoredSteps(data, where));
}

/** The same build in slices (see steps.ts). */
export function* byteLevelBpeFromScoredSteps(
  data: Extract<TokenizerData, { kind: 'scored' }>,
  where = 'ajc1 tokenizer',
): Steps<ByteLevelBpeTokenizer> {
  const { table, addedTokens, inVocab } = yield* scoredMergesSteps(data, where);
  const vocab = new Map<string, number>();
  for (let id = 0; id < inVocab.length; id++) {
    if (id % STEP === STEP - 1) yield;
    if (inVocab[id] !== 1) continue;
    const key = bytesToByteLevel(data.tokens[id]);
    if (!vocab.has(key)) vocab.set(key, id);
  }
  return new ByteLevelBpeTokenizer({
    vocab: new MapVocab(vocab),
    merges: table,
    addedTokens,
    text: { normalizer: 'NFC', preTokenizer: { pattern: QWEN2_PATTERN, prefixSpace: false } },
    specialIds: {
      ...(data.bosId !== undefined ? { bos: data.bosId } : {}),
      ...(data.eosId !== undefined ? { eos: data.eosId } : {}),
    },
  });
}

/**
 * The merge table and added tokens of scored data, and which ids are vocabulary entries (1; not
 * added tokens, not absent), in slices.
 */
export function* scoredMergesSteps(
  data: Extract<TokenizerData, { kind: 'scored' }>,
  where = 'ajc1 tokenizer',
): Steps<{ table: MergeTable; addedTokens: AddedToken[]; inVocab: Uint8Array }> {
  const n = data.tokens.length;
  const inVocab = new Uint8Array(n); // ids that are vocabulary entries (not added tokens, not absent)
  const rank = new Int32Array(n).fill(-1);
  const addedTokens: AddedToken[] = [];
  const ranked: number[] = [];
  for (let id = 0; id < n; id++) {
    if (id % STEP === STEP - 1) yield;
    const bytes = data.tokens[id];
    if (bytes.length === 0) continue; // ids the file has no entry for
    const score = data.scores[id];
    if (score <= NOT_A_MERGE && bytes.length > 1) {
      const content = utf8.decode(bytes);
      const special = id === data.bosId || id === data.eosId || /^<\|.*\|>$/s.test(content);
      addedTokens.push({ id, content, special, singleWord: false, lstrip: false, rstrip: false, normalized: false });
      continue;
    }
    inVocab[id] = 1;
    if (score > NOT_A_MERGE) {
      if (!(score <= 0) || bytes.length < 2) {
        throw new WeightFormatError('BAD_HEADER', `token ${id} has score ${score}, which is no merge rank`, { path: where });
      }
      rank[id] = rankFromScore(score);
      ranked.push(id);
    }
  }
  // Every split of a merged token into two vocabulary tokens of lower rank (the vocabulary's
  // first id of each byte string, as the tokenizer's vocabulary keeps it).
  const ids = yield* ByteStringIds.buildSteps(data.tokens, (id) => inVocab[id] === 1);
  const table = new MergeTable(ranked.length * 2); // Qwen3: 1.6 splits per merged token
  let prefix = new Uint32Array(64);
  for (let k = 0; k < ranked.length; k++) {
    if (k % STEP === STEP - 1) yield;
    const id = ranked[k];
    const r = rank[id];
    const bytes = data.tokens[id];
    const len = bytes.length;
    if (prefix.length < len + 1) prefix = new Uint32Array(len + 1);
    ids.prefixHashes(bytes, prefix);
    for (let i = 1; i < len; i++) {
      const left = ids.find(bytes, 0, i, prefix[i]);
      if (left < 0) continue;
      const right = ids.find(bytes, i, len, ids.suffixHash(prefix, i, len));
      if (right < 0) continue;
      if (rank[left] >= r || rank[right] >= r) continue;
      table.add(left, right, r, id);
    }
  }
  return { table, addedTokens, inVocab };
}
