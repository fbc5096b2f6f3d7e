/**
 * The vocabulary of a source in the form each writer stores: GGUF `tokenizer.ggml.*`, a llama2.c
 * tokenizer.bin, an ajc1 `.tokenizer`, an HF folder's tokenizer.json. Conversions between the
 * TokenizerData kinds that describe the same tokenizer, so that a converted model encodes and
 * decodes as its source did:
 *  - SentencePiece (llama2.c tokenizer.bin) <-> GGUF "llama": spaces as U+2581, BOS/EOS as
 *    "\n<s>\n" / "\n</s>\n" in llama2.c, <unk>/<s>/</s>/<0xXX> typed 2/3/3/6 in GGUF (as
 *    llama.cpp's llama2.c converter writes them);
 *  - byte-level BPE by merge scores (ajc1) <-> GGUF "gpt2" / tokenizer.json: tokens as GPT-2
 *    byte-level strings, merges rebuilt from the scores (every split of a merged token into two
 *    earlier ones, as lib/tokenizers/scored-byte-level.ts reads them), added tokens typed control
 *    (special) or user-defined, ids without an entry as "[PAD<id>]" typed unused (as Hugging
 *    Face's GGUF converter pads a vocabulary);
 *  - byte-fallback BPE (Gemma 3's tokenizer.json) -> GGUF "llama" with scores from the merge
 *    ranks (gguf-spm-vocab.ts).
 */
import * as fs from 'node:fs';
import { architectureOf } from '../../architectures';
import * as nodePath from 'node:path';
import { isDecoderConfig, type DecoderConfig } from '../../architectures/decoder';
import { bytesToByteLevel, byteLevelToBytes } from '../../tokenizers/byte-level';
import { GPT2_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, QWEN2_PATTERN } from '../../tokenizers/pretokenizers';
import { TOKEN_BYTE, TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_UNUSED, TOKEN_USER_DEFINED } from '../../tokenizers/from-data';
import { scoredMergesSteps } from '../../tokenizers/scored-byte-level';
import { runNow, runYielding, type Steps } from '../../base/steps';
import { UnsupportedError } from '../../base/errors';
import { ByteFallbackBpeTokenizer } from '../../tokenizers/byte-fallback-bpe';
import { tokenizerFromJsonSteps } from '../../tokenizers/hf-json';
import { SPACE_MARK } from '../../tokenizers/sentencepiece-bpe';
import type { ModelWeights, TokenizerData } from '../../addon/weights';
import { AJC1_UNMERGED_SCORE, ajc1TokenizerFromHf, chatTemplateSource, hfSideFolder } from './ajc1-sidecars';
import { jsonText, readJsonFile, type HfJson } from '../containers/hf-config';
import { decodeVocabularySteps } from '../../tokenizers/deferred-vocabulary';
import { encodeLlama2cTokenizer, readLlama2cTokenizer } from './llama2c-tokenizer';
import { ggufSentencePieceSteps, templateProcessing, tokenizerJsonFromSentencePieceSteps } from './gguf-spm-vocab';
import { hfSentencePieceFilesOffThread } from './vocab-offload';
import { readHfVocabulary } from './hf-vocab';

type Scored = Extract<TokenizerData, { kind: 'scored' }>;
type Gguf = Extract<TokenizerData, { kind: 'gguf' }>;


/** ajc1 scores at or below this mark tokens that are no merge result (bytes, added tokens, absent ids). */
const NOT_A_MERGE = -1e5;

const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });

function decoderConfig(weights: ModelWeights): DecoderConfig | undefined {
  const c = weights.config;
  return isDecoderConfig(c) ? c : undefined;
}

// ---- SentencePiece: llama2.c <-> GGUF "llama" --------------------------------------------------

export function ggufFromLlama2c(t: Scored): Gguf {
  const tokens: string[] = [];
  const tokenTypes = new Int32Array(t.tokens.length);
  t.tokens.forEach((bytes, i) => {
    // llama2.c stores BOS/EOS as "\n<s>\n" / "\n</s>\n".
    const text = utf8.decode(bytes).replace(/^\n(<\/?s>)\n$/, '$1');
    tokens.push(text.replace(/ /g, SPACE_MARK));
    tokenTypes[i] = text === '<unk>' ? TOKEN_UNKNOWN : text === '<s>' || text === '</s>' ? TOKEN_CONTROL : /^<0x[0-9A-F]{2}>$/.test(text) ? TOKEN_BYTE : TOKEN_NORMAL;
  });
  return { kind: 'gguf', model: 'llama', tokens, scores: t.scores, tokenTypes, unkId: 0, bosId: t.bosId ?? 1, eosId: t.eosId ?? 2 };
}

export function llama2cFromGguf(t: Gguf): Scored {
  const encoder = new TextEncoder();
  let maxTokenLength = 1;
  const tokens = t.tokens.map((text, id) => {
    const plain = text.replaceAll(SPACE_MARK, ' ');
    const control = t.tokenTypes?.[id] === TOKEN_CONTROL && /^<\/?s>$/.test(plain);
    const bytes = encoder.encode(control ? `\n${plain}\n` : plain);
    maxTokenLength = Math.max(maxTokenLength, bytes.length);
    return bytes;
  });
  return {
    kind: 'scored',
    style: 'llama2c',
    tokens,
    scores: t.scores ?? new Float32Array(tokens.length),
    maxTokenLength,
    ...(t.bosId !== undefined ? { bosId: t.bosId } : {}),
    ...(t.eosId !== undefined ? { eosId: t.eosId } : {}),
  };
}

// ---- byte-level BPE: ajc1 <-> GGUF "gpt2" -------------------------------------------------------

function isSpecialAdded(t: Scored, id: number, content: string): boolean {
  return id === t.bosId || id === t.eosId || /^<\|.*\|>$/s.test(content);
}

/** Items between two checkpoints of the byte-level conversions (well under a millisecond; see steps.ts). */
const STEP = 1024;

function* ggufFromAjc1(t: Scored, vocabSize: number): Steps<Gguf> {
  const { tokens: bytesOf, scores } = t;
  const count = Math.max(vocabSize, bytesOf.length);
  const tokens: string[] = new Array(count);
  const tokenTypes = new Int32Array(count);
  for (let id = 0; id < count; id++) {
    if (id % STEP === STEP - 1) yield;
    const bytes = bytesOf[id];
    if (!bytes || bytes.length === 0) {
      tokens[id] = `[PAD${id}]`;
      tokenTypes[id] = TOKEN_UNUSED;
    } else if (scores[id] <= NOT_A_MERGE && bytes.length > 1) {
      tokens[id] = utf8.decode(bytes);
      tokenTypes[id] = isSpecialAdded(t, id, tokens[id]) ? TOKEN_CONTROL : TOKEN_USER_DEFINED;
    } else {
      tokens[id] = bytesToByteLevel(bytes);
      tokenTypes[id] = TOKEN_NORMAL;
    }
  }
  // The pairs in merge-rank order (a counting sort by rank, in slices; pairs of one rank in table
  // order), kept in typed arrays: 10^5 small arrays would outlive the young generation.
  const { table } = yield* scoredMergesSteps(t);
  const left = new Int32Array(table.size);
  const right = new Int32Array(table.size);
  const rank = new Int32Array(table.size);
  let n = 0;
  for (const [a, b, r] of table.entries()) {
    if (n % STEP === STEP - 1) yield;
    left[n] = a;
    right[n] = b;
    rank[n++] = r;
  }
  let maxRank = 0;
  for (let k = 0; k < n; k++) maxRank = Math.max(maxRank, rank[k]);
  const starts = new Int32Array(maxRank + 2);
  for (let k = 0; k < n; k++) starts[rank[k] + 1]++;
  for (let r = 0; r <= maxRank; r++) starts[r + 1] += starts[r];
  const order = new Int32Array(n);
  for (let k = 0; k < n; k++) order[starts[rank[k]]++] = k;
  yield;
  const merges: string[] = [];
  for (let i = 0; i < n; i++) {
    if (i % STEP === STEP - 1) yield;
    merges.push(`${tokens[left[order[i]]]} ${tokens[right[order[i]]]}`);
  }
  return {
    kind: 'gguf',
    model: 'gpt2',
    pre: t.pre ?? 'qwen2',
    tokens,
    tokenTypes,
    merges,
    ...(t.bosId !== undefined ? { bosId: t.bosId } : {}),
    ...(t.eosId !== undefined ? { eosId: t.eosId } : {}),
    addBos: t.addBos ?? false,
    ...(t.addEos ? { addEos: true } : {}),
  };
}

/**
 * A Map split by a cheap hash of the key: a Map of 10^5 keys grows by rehashing them all in one
 * call (tens of milliseconds on a loaded machine), a shard a sixteenth of that.
 */
class ShardedMap<V> {
  private readonly shards = Array.from({ length: 16 }, () => new Map<string, V>());

  private shard(key: string): Map<string, V> {
    return this.shards[(key.length + key.charCodeAt(key.length - 1)) & 15];
  }

  get(key: string): V | undefined {
    return this.shard(key).get(key);
  }

  /** Sets `key` unless it is already there. */
  setFirst(key: string, value: V): void {
    const shard = this.shard(key);
    if (!shard.has(key)) shard.set(key, value);
  }
}

function* ajc1FromGguf(t: Gguf, vocabSize: number): Steps<Scored> {
  const { tokens: texts, tokenTypes } = t;
  const count = Math.max(vocabSize, texts.length);
  const typeOf = (id: number) => (texts[id] === undefined ? TOKEN_UNUSED : (tokenTypes?.[id] ?? TOKEN_NORMAL));
  const isAdded = (type: number) => type === TOKEN_CONTROL || type === TOKEN_USER_DEFINED;
  // A token's score is the rank of the first merge that makes its text: ranks found through the
  // first id of each text (the texts are the vocabulary's own strings: no new one outlives a slice).
  const firstId = new ShardedMap<number>();
  for (let id = 0; id < count; id++) {
    if (id % STEP === STEP - 1) yield;
    const type = typeOf(id);
    if (type !== TOKEN_UNUSED && !isAdded(type)) firstId.setFirst(texts[id], id);
  }
  const firstRank = new Int32Array(count).fill(-1);
  const merges = t.merges ?? [];
  for (let rank = 0; rank < merges.length; rank++) {
    if (rank % STEP === STEP - 1) yield;
    const space = merges[rank].indexOf(' ', 1);
    const id = firstId.get(merges[rank].slice(0, space) + merges[rank].slice(space + 1));
    if (id !== undefined && firstRank[id] < 0) firstRank[id] = rank;
  }
  const tokens: Uint8Array[] = new Array(count);
  const scores = new Float32Array(count).fill(AJC1_UNMERGED_SCORE);
  let maxTokenLength = 1;
  for (let id = 0; id < count; id++) {
    if (id % STEP === STEP - 1) yield;
    const type = typeOf(id);
    if (type === TOKEN_UNUSED) {
      tokens[id] = new Uint8Array(0);
      continue;
    }
    const text = texts[id];
    const added = isAdded(type);
    tokens[id] = added ? Buffer.from(text, 'utf8') : byteLevelToBytes(text);
    const rank = added ? -1 : firstRank[firstId.get(text)!];
    if (rank >= 0) scores[id] = -Math.log(rank + 1);
    maxTokenLength = Math.max(maxTokenLength, tokens[id].length);
  }
  return {
    kind: 'scored',
    style: 'ajc1',
    tokens,
    scores,
    maxTokenLength,
    ...(t.bosId !== undefined ? { bosId: t.bosId } : {}),
    ...(t.eosId !== undefined ? { eosId: t.eosId } : {}),
  };
}

// ---- what a source holds -------------------------------------------------------------------------

/**
 * The vocabulary of `weights`: its own, else that of the HF folder a decoder was read from (a
 * llama2.c tokenizer.bin, byte-level BPE tokenizer files, or a byte-fallback BPE tokenizer.json
 * as GGUF's SentencePiece vocabulary).
 */
export function sourceVocabulary(weights: ModelWeights): TokenizerData | undefined {
  return runNow(sourceVocabularySteps(weights));
}

function* sourceVocabularySteps(weights: ModelWeights): Steps<TokenizerData | undefined> {
  if (weights.tokenizer) return weights.tokenizer;
  const c = decoderConfig(weights);
  const dir = hfSideFolder(weights);
  if (!c || !dir) return undefined;
  const bin = nodePath.join(dir, 'tokenizer.bin');
  if (fs.existsSync(bin)) return readLlama2cTokenizer(bin, c.vocabSize);
  const v = readHfVocabulary(dir);
  if (v?.byteFallbackJson) {
    const t = yield* tokenizerFromJsonSteps(v.byteFallbackJson, v.path, v.config);
    if (!(t instanceof ByteFallbackBpeTokenizer)) throw new UnsupportedError(`${v.path} is no byte-fallback BPE tokenizer that GGUF can hold`);
    return yield* ggufSentencePieceSteps(t, c.vocabSize, v.path);
  }
  return ajc1TokenizerFromHf(dir, c, v);
}

/** Whether `weights` come with a vocabulary: their own, or tokenizer files in or beside them. */
export function hasVocabulary(weights: ModelWeights): boolean {
  if (weights.tokenizer) return true;
  const stat = fs.statSync(weights.path, { throwIfNoEntry: false });
  if (!stat) return false;
  const dir = stat.isDirectory() ? weights.path : nodePath.dirname(weights.path);
  return ['tokenizer.json', 'vocab.json', 'vocab.txt', 'tokenizer.bin'].some((name) => fs.existsSync(nodePath.join(dir, name)));
}

/**
 * The source's SentencePiece vocabulary as a llama2.c tokenizer.bin holds it; none for one without
 * the dummy space prefix (Gemma's), which a tokenizer.bin always implies.
 */
export function llama2cVocabulary(weights: ModelWeights): Scored | undefined {
  const t = sourceVocabulary(weights);
  if (t?.kind === 'scored' && t.style === 'llama2c') return t;
  if (t?.kind === 'gguf' && t.model === 'llama' && t.addSpacePrefix !== false) return llama2cFromGguf(t);
  return undefined;
}

/** sourceVocabulary with what its reader put off done, in slices that let the event loop turn. */
async function preparedVocabulary(weights: ModelWeights): Promise<TokenizerData | undefined> {
  const t = await runYielding(sourceVocabularySteps(weights));
  if (t) await runYielding(decodeVocabularySteps(t));
  return t;
}

/** The source's byte-level BPE vocabulary as an ajc1 `.tokenizer` holds it (rebuilt in slices that let the event loop turn). */
export async function ajc1Vocabulary(weights: ModelWeights, vocabSize: number): Promise<Scored | undefined> {
  const t = await preparedVocabulary(weights);
  if (t?.kind === 'scored' && t.style === 'ajc1') return t;
  if (t?.kind === 'gguf' && t.model === 'gpt2') return runYielding(ajc1FromGguf(t, vocabSize));
  return undefined;
}

/** The source's vocabulary as GGUF `tokenizer.ggml.*` holds it (rebuilt in slices that let the event loop turn). */
export async function ggufVocabulary(weights: ModelWeights, vocabSize: number): Promise<Gguf | undefined> {
  const t = await preparedVocabulary(weights);
  if (t?.kind === 'gguf') return t;
  if (t?.kind === 'scored') return t.style === 'llama2c' ? ggufFromLlama2c(t) : runYielding(ggufFromAjc1(t, vocabSize));
  return undefined;
}

/** The source's Jinja chat template: GGUF `tokenizer.chat_template`, or its HF folder's. */
export function jinjaChatTemplateOf(weights: ModelWeights): string | undefined {
  const own = weights.metadata['tokenizer.chat_template'];
  if (typeof own === 'string') return own;
  const dir = hfSideFolder(weights);
  if (!dir) return undefined;
  const configPath = nodePath.join(dir, 'tokenizer_config.json');
  return chatTemplateSource(dir, fs.existsSync(configPath) ? (readJsonFile(configPath) as HfJson) : undefined);
}

// ---- an HF folder's tokenizer files --------------------------------------------------------------

/** The tokenizer files of an HF folder (and TLLM's vocab.txt + merges.txt), copied as they are when the source has them. */
const HF_TOKENIZER_FILES = [
  'tokenizer.json', 'tokenizer_config.json', 'vocab.json', 'vocab.txt', 'merges.txt', 'special_tokens_map.json', 'added_tokens.json',
  'chat_template.jinja', 'tokenizer.bin',
];

/** GGUF `tokenizer.ggml.pre` -> the tokenizer.json Split pattern, whether NFC comes first, and whether whole-word vocabulary entries skip the merges (llama.cpp's ignore_merges). */
const PRE_TOKENIZERS: Readonly<Record<string, { pattern: string; nfc: boolean; ignoreMerges: boolean }>> = {
  qwen2: { pattern: QWEN2_PATTERN, nfc: true, ignoreMerges: false },
  llama3: { pattern: LLAMA3_PATTERN, nfc: false, ignoreMerges: true },
  'llama-bpe': { pattern: LLAMA3_PATTERN, nfc: false, ignoreMerges: true },
  'gpt-4o': { pattern: O200K_PATTERN, nfc: false, ignoreMerges: true },
  default: { pattern: GPT2_PATTERN, nfc: false, ignoreMerges: false },
  gpt2: { pattern: GPT2_PATTERN, nfc: false, ignoreMerges: false },
};

/** tokenizer.json (HF `tokenizers`) and tokenizer_config.json of a GGUF byte-level vocabulary. */
function byteLevelTokenizerJson(t: Gguf, chatTemplate: string | undefined, maxSeqLen: number): [string, string][] | undefined {
  const pre = PRE_TOKENIZERS[t.pre ?? 'default'];
  if (!pre) return undefined;
  const vocab: Record<string, number> = {};
  const added: HfJson[] = [];
  t.tokens.forEach((text, id) => {
    const type = t.tokenTypes?.[id] ?? TOKEN_NORMAL;
    if (type === TOKEN_CONTROL || type === TOKEN_USER_DEFINED) {
      added.push({ id, content: text, single_word: false, lstrip: false, rstrip: false, normalized: false, special: type === TOKEN_CONTROL });
    } else if (type !== TOKEN_UNUSED && !Object.prototype.hasOwnProperty.call(vocab, text)) {
      vocab[text] = id;
    }
  });
  const byteLevel = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  const tokenizer = {
    version: '1.0',
    truncation: null,
    padding: null,
    added_tokens: added,
    normalizer: pre.nfc ? { type: 'NFC' } : null,
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: pre.pattern }, behavior: 'Isolated', invert: false }, byteLevel] },
    // (ByteLevel's post-processing only trims offsets: the template adds the ids)
    post_processor: t.addBos || t.addEos
      ? { type: 'Sequence', processors: [byteLevel, templateProcessing(t.tokens, t.addBos ? t.bosId : undefined, t.addEos ? t.eosId : undefined)] }
      : byteLevel,
    decoder: byteLevel,
    model: {
      type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, ignore_merges: pre.ignoreMerges,
      vocab,
      merges: (t.merges ?? []).map((m) => {
        const space = m.indexOf(' ', 1);
        return [m.slice(0, space), m.slice(space + 1)];
      }),
    },
  };
  const name = (id: number | undefined) => (id === undefined ? null : t.tokens[id]);
  const config = {
    tokenizer_class: 'PreTrainedTokenizerFast',
    add_bos_token: t.addBos ?? false,
    add_eos_token: t.addEos ?? false,
    bos_token: name(t.bosId),
    eos_token: name(t.eosId),
    ...(t.padId !== undefined ? { pad_token: name(t.padId) } : {}),
    model_max_length: maxSeqLen,
    ...(chatTemplate !== undefined ? { chat_template: chatTemplate } : {}),
  };
  return [
    ['tokenizer.json', JSON.stringify(tokenizer)],
    ['tokenizer_config.json', jsonText(config)],
  ];
}

/**
 * tokenizer.json + tokenizer_config.json for the source's SentencePiece vocabulary (gguf-spm-vocab),
 * made on this thread in slices; undefined when it has none.
 */
export async function hfSentencePieceFilesHere(weights: ModelWeights, maxSeqLen: number): Promise<[string, string][] | undefined> {
  const t = await preparedVocabulary(weights);
  if (t?.kind !== 'gguf' || t.model !== 'llama') return undefined;
  return runYielding(tokenizerJsonFromSentencePieceSteps(t, jinjaChatTemplateOf(weights), maxSeqLen));
}

/**
 * The tokenizer files of an HF folder (BERT's are written from its vocabulary elsewhere): the
 * source's own, copied (an HF folder's, or those beside a TLLM or MOON file); else, for a decoder,
 * tokenizer.json + tokenizer_config.json for a byte-level BPE vocabulary or a SentencePiece one
 * without the dummy prefix (Gemma's; made in the tokenizer worker when there is one), or a llama2.c
 * tokenizer.bin for a SentencePiece one with it.
 */
export async function hfTokenizerFiles(weights: ModelWeights): Promise<[string, string | Uint8Array][]> {
  const arch = architectureOf(weights.config);
  if (!arch || arch.hfVocabulary === 'wordpiece') return [];
  const dir = hfSideFolder(weights) ?? (arch.tokenizerBesideWeights ? nodePath.dirname(weights.path) : undefined);
  if (dir) {
    const own = HF_TOKENIZER_FILES.filter((name) => fs.existsSync(nodePath.join(dir, name)));
    if (own.length > 0) return own.map((name) => [name, fs.readFileSync(nodePath.join(dir, name))]);
  }
  const c = decoderConfig(weights);
  if (!c) return [];
  const llama = llama2cVocabulary(weights);
  if (llama) return [['tokenizer.bin', encodeLlama2cTokenizer(llama)]];
  const source = sourceVocabulary(weights);
  if (source?.kind === 'gguf' && source.model === 'llama') {
    const made = await hfSentencePieceFilesOffThread(weights, c.maxSeqLen);
    return (made === 'here' ? await hfSentencePieceFilesHere(weights, c.maxSeqLen) : made) ?? [];
  }
  const gguf = await ggufVocabulary(weights, c.vocabSize);
  if (gguf?.model === 'gpt2') return byteLevelTokenizerJson(gguf, jinjaChatTemplateOf(weights), c.maxSeqLen) ?? [];
  return [];
}
