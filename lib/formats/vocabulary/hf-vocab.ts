/**
 * The vocabulary of a Hugging Face folder as its files state it, for writers that store it in
 * another form (ajc1 `.tokenizer`, EMBD's embedded WordPiece vocabulary): token strings by id
 * (byte-level BPE strings in their internal form, e.g. "Ġthe"), the BPE merges in rank order, and
 * tokenizer_config.json. Sources, first found wins: `tokenizer.json` (BPE or WordPiece model plus
 * `added_tokens`), `vocab.json` + `merges.txt` (+ the `added_tokens_decoder` of
 * tokenizer_config.json), `vocab.txt` (WordPiece, id = line index, line ends trimmed as HF does).
 * Encoding text is lib/tokenizers' job; nothing here tokenizes.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { runNow, type Steps } from '../../base/steps';
import { validateTokenizerJsonSteps, validateVocabSteps } from '../../tokenizers/validate-json';
import type { TokenizerData } from '../../addon/weights';
import { fail } from '../containers/bytes';
import type { HfJson } from '../containers/hf-config';
import { rangeError } from '../../base/errors';
import { LLAMA3_PATTERN, O200K_PATTERN, QWEN2_PATTERN } from '../../tokenizers/pretokenizers';

/** tokenizer.json files above this are not tokenizers (the largest real ones are ~35 MB). */
const MAX_TOKENIZER_JSON_BYTES = 256 << 20;

export interface HfVocabulary {
  kind: 'bpe' | 'wordpiece';
  /** Token string by id; ids the files do not name are undefined. */
  tokens: (string | undefined)[];
  /** BPE merges in rank order (empty for WordPiece). */
  merges: [string, string][];
  /** tokenizer_config.json, when present. */
  config?: HfJson;
  /** WordPiece: whether text is lowercased (normalizer.lowercase / do_lower_case; default true). */
  lowercase: boolean;
  /** The file the vocabulary came from. */
  path: string;
  /**
   * tokenizer.json itself when its model is a BPE with byte fallback over U+2581-marked text
   * (Gemma 3), whose tokens are no byte-level strings: kept for the SentencePiece conversion.
   */
  byteFallbackJson?: HfJson;
  /**
   * Whether tokenizer.json's post-processor puts a special token before / after the text (Llama
   * 3.1's BOS; Llama 3's none), and which one after it (Qwen3-Embedding's <|endoftext|>).
   */
  wraps?: { bos: boolean; eos: boolean; eosToken?: string };
  /** A byte-level BPE tokenizer.json's text steps as GGUF's `tokenizer.ggml.pre` names them, when they are one it knows. */
  ggufPre?: 'qwen2' | 'llama-bpe' | 'gpt-4o' | 'gpt2';
}

/** The special tokens a TemplateProcessing (alone or in a Sequence) puts around a single text. */
function wrapsOf(json: HfJson): HfVocabulary['wraps'] {
  const post = json.post_processor as HfJson | null | undefined;
  const steps = post?.type === 'Sequence' && Array.isArray(post.processors) ? (post.processors as HfJson[]) : post ? [post] : [];
  const template = steps.find((p) => p?.type === 'TemplateProcessing');
  const single = Array.isArray(template?.single) ? (template!.single as HfJson[]) : [];
  const at = single.findIndex((piece) => piece && 'Sequence' in piece);
  const after = at >= 0 && at + 1 < single.length && 'SpecialToken' in single[at + 1] ? (single[at + 1].SpecialToken as HfJson | undefined)?.id : undefined;
  return { bos: at > 0 && 'SpecialToken' in single[at - 1], eos: after !== undefined, ...(typeof after === 'string' ? { eosToken: after } : {}) };
}

/**
 * The GGUF pre-tokenizer that splits and normalizes as tokenizer.json does: Qwen2's split after
 * NFC, Llama 3's split (with ignore_merges, as llama.cpp's "llama-bpe" does), o200k's (gpt-oss: "gpt-4o"), or GPT-2's byte-level
 * regex; undefined for any other.
 */
function ggufPreOf(json: HfJson): HfVocabulary['ggufPre'] {
  const pre = json.pre_tokenizer as HfJson | null | undefined;
  const normalizer = (json.normalizer as HfJson | null | undefined)?.type ?? null;
  const ignoreMerges = (json.model as HfJson).ignore_merges === true;
  const steps = pre?.type === 'Sequence' && Array.isArray(pre.pretokenizers) ? (pre.pretokenizers as HfJson[]) : pre ? [pre] : [];
  const isByteLevel = (s: HfJson | undefined, useRegex: boolean) => s?.type === 'ByteLevel' && s.add_prefix_space === false && (s.use_regex !== false) === useRegex;
  if (steps.length === 1 && isByteLevel(steps[0], true) && normalizer === null && !ignoreMerges) return 'gpt2';
  if (steps.length !== 2 || !isByteLevel(steps[1], false)) return undefined;
  const split = steps[0];
  if (split.type !== 'Split' || split.behavior !== 'Isolated' || split.invert === true) return undefined;
  const pattern = (split.pattern as HfJson | undefined)?.Regex;
  if (pattern === QWEN2_PATTERN && normalizer === 'NFC' && !ignoreMerges) return 'qwen2';
  if (pattern === LLAMA3_PATTERN && normalizer === null && ignoreMerges) return 'llama-bpe';
  if (pattern === O200K_PATTERN && normalizer === null && ignoreMerges) return 'gpt-4o';
  return undefined;
}

function isObject(v: unknown): v is HfJson {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function readJson(path: string): unknown {
  const size = fs.statSync(path).size;
  if (size > MAX_TOKENIZER_JSON_BYTES) fail('BAD_HEADER', 'JSON file too large to be a tokenizer file', { path, expected: `<= ${MAX_TOKENIZER_JSON_BYTES} bytes`, found: size });
  try {
    return JSON.parse(new TextDecoder('utf-8', { fatal: true, ignoreBOM: true }).decode(fs.readFileSync(path)));
  } catch (cause) {
    return fail('BAD_HEADER', `not valid UTF-8 JSON: ${(cause as Error).message}`, { path });
  }
}

/** The text of a special-token field: "…" or { content: "…" }. */
export function tokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (isObject(value) && typeof value.content === 'string') return value.content;
  return undefined;
}

function setToken(tokens: (string | undefined)[], id: unknown, text: string, path: string): void {
  if (typeof id !== 'number' || !Number.isSafeInteger(id) || id < 0 || id >= 1 << 24) {
    fail('BAD_HEADER', `token ${JSON.stringify(text)} has an invalid id`, { path, expected: 'an integer id in [0, 2^24)', found: id });
  }
  tokens[id as number] = text;
}

/** Entries between two checkpoints of the reads (well under a millisecond; see steps.ts). */
const SLICE = 4096;

function* vocabObjectSteps(vocab: unknown, tokens: (string | undefined)[], path: string): Steps<void> {
  if (!isObject(vocab)) fail('BAD_HEADER', 'the vocabulary is not an object of token -> id', { path });
  let n = 0;
  for (const text in vocab as HfJson) {
    setToken(tokens, (vocab as HfJson)[text], text, path);
    if (++n % SLICE === 0) yield;
  }
}

/** "a b" lines or [a, b] pairs; anything else is BAD_HEADER. */
function mergePair(entry: unknown, rank: number, path: string): [string, string] {
  if (Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && typeof entry[1] === 'string') return [entry[0], entry[1]];
  if (typeof entry === 'string') {
    const parts = entry.split(' ');
    if (parts.length === 2 && parts[0].length > 0 && parts[1].length > 0) return [parts[0], parts[1]];
  }
  return fail('BAD_HEADER', `merge ${rank} is not a pair of tokens`, { path, found: entry });
}

function* fromTokenizerJsonSteps(path: string, config: HfJson | undefined): Steps<HfVocabulary | undefined> {
  const json = readJson(path);
  yield;
  yield* validateTokenizerJsonSteps(json, path);
  if (!isObject(json) || !isObject(json.model)) return fail('BAD_HEADER', 'tokenizer.json has no model object', { path });
  const model = json.model;
  const type = model.type ?? (model.merges !== undefined ? 'BPE' : undefined);
  if (type !== 'BPE' && type !== 'WordPiece') return undefined;
  const tokens: (string | undefined)[] = [];
  yield* vocabObjectSteps(model.vocab, tokens, path);
  if (Array.isArray(json.added_tokens)) {
    for (const t of json.added_tokens) {
      if (!isObject(t) || typeof t.content !== 'string') fail('BAD_HEADER', 'an added token has no content', { path, found: t });
      setToken(tokens, (t as HfJson).id, (t as HfJson).content as string, path);
    }
  }
  const rawMerges = type === 'BPE' ? model.merges ?? [] : [];
  if (!Array.isArray(rawMerges)) fail('BAD_HEADER', 'model.merges is not a list', { path });
  const merges: [string, string][] = [];
  for (const m of rawMerges as unknown[]) {
    merges.push(mergePair(m, merges.length, path));
    if (merges.length % SLICE === 0) yield;
  }
  const normalizer = isObject(json.normalizer) ? json.normalizer : undefined;
  const lowercase = normalizer?.type === 'BertNormalizer' ? normalizer.lowercase !== false : config?.do_lower_case !== false;
  const byteFallback = type === 'BPE' && model.byte_fallback === true;
  const ggufPre = type === 'BPE' && !byteFallback ? ggufPreOf(json) : undefined;
  return {
    kind: type === 'BPE' ? 'bpe' : 'wordpiece', tokens, merges, config, lowercase, path, wraps: wrapsOf(json),
    ...(byteFallback ? { byteFallbackJson: json } : {}), ...(ggufPre ? { ggufPre } : {}),
  };
}

function addedFromConfig(config: HfJson | undefined, tokens: (string | undefined)[], path: string): void {
  const decoder = config?.added_tokens_decoder;
  if (!isObject(decoder)) return;
  for (const [id, entry] of Object.entries(decoder)) {
    const text = tokenText(entry);
    if (text === undefined) fail('BAD_HEADER', `added token ${id} has no content`, { path });
    setToken(tokens, /^(0|[1-9][0-9]*)$/.test(id) ? Number(id) : id, text!, path);
  }
}

function fromVocabMerges(dir: string, config: HfJson | undefined): HfVocabulary {
  const vocabPath = nodePath.join(dir, 'vocab.json');
  const mergesPath = nodePath.join(dir, 'merges.txt');
  const tokens: (string | undefined)[] = [];
  const vocab = readJson(vocabPath);
  runNow(validateVocabSteps(vocab, vocabPath, '$'));
  runNow(vocabObjectSteps(vocab, tokens, vocabPath));
  addedFromConfig(config, tokens, nodePath.join(dir, 'tokenizer_config.json'));
  const merges: [string, string][] = [];
  fs.readFileSync(mergesPath, 'utf8')
    .split('\n')
    .forEach((raw, i) => {
      const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
      if (line.length === 0 || (i === 0 && line.startsWith('#version'))) return;
      merges.push(mergePair(line, merges.length, mergesPath));
    });
  return { kind: 'bpe', tokens, merges, config, lowercase: false, path: vocabPath };
}

function fromVocabTxt(dir: string, config: HfJson | undefined): HfVocabulary {
  const path = nodePath.join(dir, 'vocab.txt');
  const lines = fs.readFileSync(path, 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  return { kind: 'wordpiece', tokens: lines.map((l) => l.replace(/\s+$/u, '')), merges: [], config, lowercase: config?.do_lower_case !== false, path };
}

/** The vocabulary of the HF folder `dir`, or undefined when it holds no tokenizer files. */
export function readHfVocabulary(dir: string): HfVocabulary | undefined {
  return runNow(readHfVocabularySteps(dir));
}

/** readHfVocabulary in slices (steps.ts): only the JSON.parse of tokenizer.json is one piece. */
export function* readHfVocabularySteps(dir: string): Steps<HfVocabulary | undefined> {
  const at = (name: string) => nodePath.join(dir, name);
  const configPath = at('tokenizer_config.json');
  const config = fs.existsSync(configPath) ? readJson(configPath) : undefined;
  if (config !== undefined && !isObject(config)) fail('BAD_HEADER', 'tokenizer_config.json is not an object', { path: configPath });
  const cfg = config as HfJson | undefined;
  if (fs.existsSync(at('tokenizer.json'))) return yield* fromTokenizerJsonSteps(at('tokenizer.json'), cfg);
  if (fs.existsSync(at('vocab.json')) && fs.existsSync(at('merges.txt'))) return fromVocabMerges(dir, cfg);
  if (fs.existsSync(at('vocab.txt')) && !fs.existsSync(at('merges.txt'))) return fromVocabTxt(dir, cfg);
  return undefined;
}

/** The id of a token string (the last one when a string repeats, as HF's vocabulary maps do). */
export function tokenIdOf(v: HfVocabulary, text: string | undefined): number | undefined {
  if (text === undefined) return undefined;
  const i = v.tokens.lastIndexOf(text);
  return i < 0 ? undefined : i;
}

/**
 * A WordPiece vocabulary as TokenizerData: special tokens from tokenizer_config.json's
 * *_token fields, else BERT's [PAD] [UNK] [CLS] [SEP] [MASK]. [UNK] must exist; another special
 * token the vocabulary lacks falls back to it (EMBD's special block needs all five ids).
 */
export function wordPieceData(v: HfVocabulary): Extract<TokenizerData, { kind: 'wordpiece' }> {
  if (v.kind !== 'wordpiece') throw rangeError(`${v.path} is not a WordPiece vocabulary`);
  const gaps = v.tokens.findIndex((t) => t === undefined);
  if (gaps >= 0) fail('BAD_HEADER', `the vocabulary has no token for id ${gaps}`, { path: v.path, expected: 'ids 0..n-1', found: `no id ${gaps}` });
  const id = (key: string, fallback: string) => tokenIdOf(v, tokenText(v.config?.[`${key}_token`]) ?? fallback);
  const unk = id('unk', '[UNK]');
  if (unk === undefined) return fail('BAD_HEADER', 'the WordPiece vocabulary has no unknown token', { path: v.path, expected: '[UNK]', found: 'absent' });
  return {
    kind: 'wordpiece',
    tokens: v.tokens as string[],
    specialIds: {
      pad: id('pad', '[PAD]') ?? unk,
      unk,
      cls: id('cls', '[CLS]') ?? unk,
      sep: id('sep', '[SEP]') ?? unk,
      mask: id('mask', '[MASK]') ?? unk,
    },
    doLowerCase: v.lowercase,
  };
}
