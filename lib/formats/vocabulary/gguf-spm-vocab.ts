/**
 * A byte-fallback BPE tokenizer.json over U+2581-marked text (Gemma 3's: spaces replaced by U+2581;
 * Llama 2's, Mistral 7B v0.1's, TinyLlama's: the same after a U+2581 prepended to each run of text,
 * SentencePiece's dummy prefix; no pre-tokenizer split, `<0xXX>` byte tokens) as the SentencePiece
 * vocabulary llama.cpp reads from GGUF (`tokenizer.ggml.model` "llama", pre "default"):
 *  - tokens by id, exactly `vocabSize` of them (the model's embedding rows, as llama.cpp requires):
 *    ids beyond are left out (Gemma 3 1B's `<image_soft_token>`), ids the files never name become
 *    `[PAD<id>]` typed unused (as llama.cpp's converter pads);
 *  - scores: llama.cpp's SPM tokenizer merges the adjacent pair whose concatenation is a token with
 *    the highest score, leftmost first; HF's BPE the listed pair of lowest rank. A token's score is
 *    minus the rank of the first merge that makes it, so the two orders agree wherever each token
 *    comes from one merge, or its merges sit next to each other in rank order (HF's SentencePiece
 *    conversion lists every split of each piece, so every pair that concatenates to a token is a
 *    merge). Tokens no merge makes (characters, bytes, added tokens) score below every merge;
 *  - types: `<0xXX>` byte, special added tokens control (the unknown token too when it is one,
 *    else unknown), the other added tokens user-defined (cut out of the raw text first, as HF
 *    does), the rest normal. Gemma's added runs of U+2581 stay normal pieces: llama.cpp prints a
 *    user-defined token's text as it is (U+2581, not spaces), while as a normal piece the merges
 *    still make it from spaces, and only a literal U+2581 run typed in the input is split otherwise
 *    than HF splits it (21 of the 3000 strings of the differential corpus). llama.cpp's own
 *    converter writes those tokens with spaces instead, which disagrees with HF more (48 of 3000);
 *  - BOS/EOS/UNK/PAD ids as HF's tokenizer names them, add_bos/add_eos from its post-processor,
 *    add_space_prefix from the normalizer (llama.cpp, like HF's Prepend, puts the space before the
 *    text and before each run that follows a special token).
 * Anything SentencePiece cannot express (another normalizer, a pre-tokenizer that splits, added
 * tokens with strip or single-word flags) is an UnsupportedError.
 */
import { UnsupportedError } from '../../base/errors';
import type { ByteFallbackBpeTokenizer } from '../../tokenizers/byte-fallback-bpe';
import { TOKEN_BYTE, TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_UNUSED, TOKEN_USER_DEFINED } from '../../tokenizers/from-data';
import { bytePieceValue, SPACE_MARK } from '../../tokenizers/sentencepiece-bpe';
import type { Steps } from '../../base/steps';
import type { TokenizerData } from '../../addon/weights';
import { fail } from '../containers/bytes';

type Gguf = Extract<TokenizerData, { kind: 'gguf' }>;

/** Below the score of every merge: ranks stay under 2^24, where f32 still holds each integer. */
export const SPM_UNMERGED_SCORE = -(2 ** 24);

/** Items between two checkpoints (well under a millisecond; see steps.ts). */
const STEP = 4096;

function json(v: unknown): string {
  return JSON.stringify(v);
}

type JsonStep = { type?: unknown; pattern?: { String?: unknown }; content?: unknown; prepend?: unknown; normalizers?: unknown } | null | undefined;

const isSpaceMarking = (n: JsonStep) => n?.type === 'Replace' && n.pattern?.String === ' ' && n.content === SPACE_MARK;
const isPrefixing = (n: JsonStep) => n?.type === 'Prepend' && n.prepend === SPACE_MARK;

/**
 * Whether the tokenizer's text steps are SentencePiece's (spaces to U+2581, perhaps with the dummy
 * prefix, and nothing else); returns whether the prefix is there (GGUF add_space_prefix).
 */
function checkText(t: ByteFallbackBpeTokenizer): boolean {
  const { normalizer, preTokenizer } = t.config.text;
  const n = typeof normalizer === 'object' ? (normalizer.json as JsonStep) : undefined;
  const steps = n?.type === 'Sequence' && Array.isArray(n.normalizers) ? (n.normalizers as JsonStep[]) : [n];
  // Prepend and Replace commute (the prefix is U+2581 itself), so either order is the same text.
  const prefixed = steps.length === 2 && steps.some(isPrefixing) && steps.some(isSpaceMarking);
  if (!prefixed && !(steps.length === 1 && isSpaceMarking(steps[0]))) {
    throw new UnsupportedError(`a SentencePiece GGUF vocabulary needs the normalizer Replace(' ' -> '${SPACE_MARK}'), perhaps after Prepend('${SPACE_MARK}'), not ${json(n ?? normalizer)}`);
  }
  // After the normalizer no space is left, so a split on ' ' splits nothing.
  const p = 'json' in preTokenizer ? (preTokenizer.json as { type?: unknown; pattern?: { String?: unknown } } | null) : undefined;
  if (p !== null && !(p?.type === 'Split' && p.pattern?.String === ' ')) {
    throw new UnsupportedError(`a SentencePiece GGUF vocabulary takes no pre-tokenizer that splits words, not ${json(p ?? preTokenizer)}`);
  }
  return prefixed;
}

/** 1 when `ids` is exactly [id], 0 when empty; anything else SentencePiece cannot add. */
function wrapFlag(ids: readonly number[], id: number | undefined, what: string): boolean {
  if (ids.length === 0) return false;
  if (ids.length === 1 && ids[0] === id) return true;
  throw new UnsupportedError(`a SentencePiece GGUF vocabulary adds only the ${what} token around the text, not ids ${json(ids)}`);
}

/**
 * `t` (built from a byte-fallback BPE tokenizer.json) as GGUF `tokenizer.ggml.*` data for a model
 * of `vocabSize` embedding rows. `where` names the source in errors.
 */
export function* ggufSentencePieceSteps(t: ByteFallbackBpeTokenizer, vocabSize: number, where: string): Steps<Gguf> {
  const addSpacePrefix = checkText(t);
  const { vocab, merges, addedTokens } = t.config;
  const specialIds = t.specialIds;
  if (merges.size >= 2 ** 24) throw new UnsupportedError(`${merges.size} merges are more than f32 scores can order (2^24)`);
  for (const a of addedTokens) {
    if (a.lstrip || a.rstrip || a.singleWord || a.normalized) {
      throw new UnsupportedError(`added token ${json(a.content)} has lstrip/rstrip/single_word/normalized flags, which SentencePiece does not hold`);
    }
  }
  for (const [name, id] of Object.entries(specialIds) as [string, number | undefined][]) {
    if (id !== undefined && id >= vocabSize) fail('CONFIG_MISMATCH', `the ${name} token lies beyond the model's embeddings`, { path: where, expected: `< ${vocabSize}`, found: id });
  }
  const tokens: string[] = new Array(vocabSize);
  const tokenTypes = new Int32Array(vocabSize).fill(TOKEN_UNUSED);
  const scores = new Float32Array(vocabSize).fill(SPM_UNMERGED_SCORE);
  for (let id = 0; id < vocabSize; id++) {
    if (id % STEP === STEP - 1) yield;
    const text = vocab.tokenOf(id);
    if (text === undefined) {
      tokens[id] = `[PAD${id}]`;
      continue;
    }
    tokens[id] = text;
    tokenTypes[id] = id === specialIds.unk ? TOKEN_UNKNOWN : bytePieceValue(text) >= 0 ? TOKEN_BYTE : TOKEN_NORMAL;
  }
  for (const a of addedTokens) {
    if (a.id >= vocabSize) continue;
    if (!a.special && a.content.includes(SPACE_MARK) && vocab.get(a.content) === a.id) continue;
    tokens[a.id] = a.content;
    tokenTypes[a.id] = a.special ? TOKEN_CONTROL : TOKEN_USER_DEFINED;
  }
  let n = 0;
  for (const [, , rank, merged] of merges.entries()) {
    if (++n % STEP === 0) yield;
    if (merged < vocabSize && -rank > scores[merged]) scores[merged] = -rank;
  }
  const wrapping = t.config.wrapping ?? { prefix: [], suffix: [] };
  return {
    kind: 'gguf',
    model: 'llama',
    pre: 'default',
    tokens,
    scores,
    tokenTypes,
    ...(specialIds.bos !== undefined ? { bosId: specialIds.bos } : {}),
    ...(specialIds.eos !== undefined ? { eosId: specialIds.eos } : {}),
    ...(specialIds.unk !== undefined ? { unkId: specialIds.unk } : {}),
    ...(specialIds.pad !== undefined ? { padId: specialIds.pad } : {}),
    addBos: wrapFlag(wrapping.prefix, specialIds.bos, 'BOS'),
    addEos: wrapFlag(wrapping.suffix, specialIds.eos, 'EOS'),
    addSpacePrefix,
  };
}

// ---- back: a GGUF SentencePiece vocabulary as tokenizer.json -------------------------------------

/** A token's merges in HF's order: the pieces by falling score (then id), each piece's splits by (left id, right id). */
function* spmMergesSteps(t: Gguf, byText: Map<string, number>): Steps<[string, string][]> {
  const { tokens, scores, tokenTypes } = t;
  const results: number[] = [];
  for (let id = 0; id < tokens.length; id++) {
    if (id % STEP === STEP - 1) yield;
    const type = tokenTypes?.[id] ?? TOKEN_NORMAL;
    // weightmap's writer scores tokens no merge makes below every merge: they stay unmergeable.
    if ((type === TOKEN_NORMAL || type === TOKEN_USER_DEFINED) && scores![id] > SPM_UNMERGED_SCORE && byText.get(tokens[id]) === id) results.push(id);
  }
  results.sort((a, b) => scores![b] - scores![a] || a - b);
  yield;
  const merges: [string, string][] = [];
  const splits: [number, number][] = [];
  for (let k = 0; k < results.length; k++) {
    if (k % STEP === STEP - 1) yield;
    const text = tokens[results[k]];
    splits.length = 0;
    // Split between code points (a surrogate pair is one character to HF).
    for (let at = 1; at < text.length; at++) {
      const c = text.charCodeAt(at);
      if (c >= 0xdc00 && c <= 0xdfff) continue;
      const left = byText.get(text.slice(0, at));
      const right = byText.get(text.slice(at));
      if (left !== undefined && right !== undefined) splits.push([left, right]);
    }
    splits.sort((a, b) => a[0] - b[0] || a[1] - b[1]);
    for (const [l, r] of splits) merges.push([tokens[l], tokens[r]]);
  }
  return merges;
}

/** tokenizer.json's TemplateProcessing that puts `bos` before and `eos` after each sequence (either may be absent). */
export function templateProcessing(tokens: readonly string[], bos: number | undefined, eos: number | undefined): Record<string, unknown> {
  const template = (seq: string, typeId: number) => [
    ...(bos !== undefined ? [{ SpecialToken: { id: tokens[bos], type_id: typeId } }] : []),
    { Sequence: { id: seq, type_id: typeId } },
    ...(eos !== undefined ? [{ SpecialToken: { id: tokens[eos], type_id: typeId } }] : []),
  ];
  const wrapped = [bos, eos].filter((id): id is number => id !== undefined);
  return {
    type: 'TemplateProcessing',
    single: template('A', 0),
    pair: [...template('A', 0), ...template('B', 1)],
    special_tokens: Object.fromEntries(wrapped.map((id) => [tokens[id], { id: tokens[id], ids: [id], tokens: [tokens[id]] }])),
  };
}

/**
 * tokenizer.json and tokenizer_config.json for a GGUF SentencePiece ("llama") vocabulary: a BPE with
 * byte fallback whose merges are every split of each piece into two pieces, ordered by the pieces'
 * scores (as HF's SentencePiece conversion makes them, and as gguf-spm-vocab reads them back),
 * control and user-defined tokens as added tokens, the normalizer with Prepend(U+2581) when the
 * vocabulary adds a space prefix, and the decoder that undoes them.
 */
export function* tokenizerJsonFromSentencePieceSteps(t: Gguf, chatTemplate: string | undefined, maxSeqLen: number): Steps<[string, string][]> {
  if (!t.scores) throw new UnsupportedError('a SentencePiece vocabulary without scores has no merge order for tokenizer.json');
  const { tokens, tokenTypes } = t;
  const vocab: Record<string, number> = {};
  const byText = new Map<string, number>();
  const added: Record<string, unknown>[] = [];
  for (let id = 0; id < tokens.length; id++) {
    if (id % STEP === STEP - 1) yield;
    const type = tokenTypes?.[id] ?? TOKEN_NORMAL;
    if (type === TOKEN_UNUSED) continue;
    const text = tokens[id];
    if (!byText.has(text)) {
      byText.set(text, id);
      vocab[text] = id;
    }
    if (type === TOKEN_CONTROL || type === TOKEN_USER_DEFINED || type === TOKEN_UNKNOWN) {
      added.push({ id, content: text, single_word: false, lstrip: false, rstrip: false, normalized: false, special: type !== TOKEN_USER_DEFINED });
    }
  }
  const merges = yield* spmMergesSteps(t, byText);
  const prefix = t.addSpacePrefix !== false;
  const name = (id: number | undefined) => (id === undefined ? null : tokens[id]);
  const spaceMarking = { type: 'Replace', pattern: { String: ' ' }, content: SPACE_MARK };
  // llama.cpp's defaults for a SentencePiece vocabulary, as from-data.ts reads them.
  const addBos = t.addBos ?? true;
  const addEos = t.addEos ?? false;
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: prefix ? { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: SPACE_MARK }, spaceMarking] } : spaceMarking,
    pre_tokenizer: null,
    post_processor: templateProcessing(tokens, addBos ? t.bosId : undefined, addEos ? t.eosId : undefined),
    decoder: {
      type: 'Sequence',
      decoders: [
        { type: 'Replace', pattern: { String: SPACE_MARK }, content: ' ' },
        { type: 'ByteFallback' },
        { type: 'Fuse' },
        ...(prefix ? [{ type: 'Strip', content: ' ', start: 1, stop: 0 }] : []),
      ],
    },
    model: {
      type: 'BPE', dropout: null, unk_token: name(t.unkId), continuing_subword_prefix: null, end_of_word_suffix: null, fuse_unk: true, byte_fallback: true, ignore_merges: false,
      vocab,
      merges,
    },
  };
  yield;
  const config = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    add_bos_token: addBos,
    add_eos_token: addEos,
    bos_token: name(t.bosId),
    eos_token: name(t.eosId),
    unk_token: name(t.unkId),
    ...(t.padId !== undefined ? { pad_token: name(t.padId) } : {}),
    model_max_length: maxSeqLen,
    ...(chatTemplate !== undefined ? { chat_template: chatTemplate } : {}),
  };
  const json = JSON.stringify(tokenizer);
  yield;
  return [
    ['tokenizer.json', json],
    ['tokenizer_config.json', `${JSON.stringify(config, null, 2)}\n`],
  ];
}
