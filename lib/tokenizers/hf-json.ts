/**
 * Hugging Face tokenizer.json (and the older vocab.json + merges.txt + tokenizer_config.json
 * layout) -> a Tokenizer. Supported: BPE with ByteLevel (GPT-2, Qwen, Llama 3 families), BPE with
 * byte fallback (Gemma 3), WordPiece (BERT) and Unigram (XLM-R, bge-m3, multilingual-e5); other
 * models or components raise UnsupportedError.
 */
import { UnsupportedError, WeightFormatError } from '../base/errors';
import type { AddedToken } from './added-tokens';
import { ByteFallbackBpeTokenizer } from './byte-fallback-bpe';
import { ByteLevelBpeTokenizer } from './byte-level-bpe';
import { mergeTableFromPairsSteps, parseMergeEntry } from './bpe-model';
import { runNow, type Steps } from '../base/steps';
import type { SpecialWrapping } from './post-process';
import { MapVocab } from './bpe-vocab';
import { GPT2_PATTERN, QWEN2_PATTERN } from './pretokenizers';
import type { SpecialTokenIds, Tokenizer } from './types';
import { validateAddedTokensDecoder, validateTokenizerJsonSteps, validateVocabSteps } from './validate-json';
import { WordPieceTokenizer } from './wordpiece';
import { UnigramTokenizer } from './unigram';
import { buildUnigramTrieSteps } from './unigram-model';

function addedTokenFromJson(entry: any, id: number): AddedToken {
  return {
    id,
    content: String(entry.content),
    special: !!entry.special,
    singleWord: !!entry.single_word,
    lstrip: !!entry.lstrip,
    rstrip: !!entry.rstrip,
    normalized: entry.normalized === undefined ? !entry.special : !!entry.normalized,
  };
}

function tokenContent(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as any).content === 'string') return (value as any).content;
  return undefined;
}

const GUESSES: [keyof SpecialTokenIds, string[]][] = [
  ['bos', ['<s>', '<|begin_of_text|>', '<|startoftext|>', '<bos>']],
  ['eos', ['</s>', '<|end_of_text|>', '<|endoftext|>', '<eos>']],
  ['pad', ['[PAD]', '<pad>']],
  ['unk', ['[UNK]', '<unk>']],
  ['cls', ['[CLS]']],
  ['sep', ['[SEP]']],
  ['mask', ['[MASK]', '<mask>']],
];

/** Special ids from tokenizer_config.json's *_token fields, else by the usual token names. */
function specialIdsOf(lookup: (s: string) => number | undefined, config: any): SpecialTokenIds {
  const ids: SpecialTokenIds = {};
  for (const [key, names] of GUESSES) {
    const configured = tokenContent(config?.[`${key}_token`]);
    if (config && `${key}_token` in config) {
      if (configured !== undefined) ids[key] = lookup(configured);
      continue;
    }
    for (const n of names) {
      const id = lookup(n);
      if (id !== undefined) {
        ids[key] = id;
        break;
      }
    }
  }
  for (const k of Object.keys(ids) as (keyof SpecialTokenIds)[]) if (ids[k] === undefined) delete ids[k];
  return ids;
}

/** The ids a post-processor puts around a single sequence. */
function wrappingFromJson(json: any, lookup: (s: string) => number | undefined, where: string): SpecialWrapping {
  const w: SpecialWrapping = { prefix: [], suffix: [] };
  if (!json) return w;
  const idOf = (name: string, fallback?: number): number => {
    const id = fallback ?? lookup(name);
    if (id === undefined) throw new WeightFormatError('BAD_HEADER', `post-processor token ${JSON.stringify(name)} is unknown`, { path: where });
    return id;
  };
  switch (json.type) {
    case 'ByteLevel':
      return w;
    case 'BertProcessing':
    case 'RobertaProcessing':
      w.prefix.push(idOf(json.cls[0], json.cls[1]));
      w.suffix.push(idOf(json.sep[0], json.sep[1]));
      return w;
    case 'TemplateProcessing': {
      let seenSequence = false;
      for (const item of json.single as any[]) {
        if (item.Sequence) {
          seenSequence = true;
          continue;
        }
        const name = String(item.SpecialToken?.id);
        const ids: number[] = json.special_tokens?.[name]?.ids ?? [idOf(name)];
        (seenSequence ? w.suffix : w.prefix).push(...ids);
      }
      return w;
    }
    case 'Sequence': {
      for (const p of json.processors as any[]) {
        const inner = wrappingFromJson(p, lookup, where);
        w.prefix.push(...inner.prefix);
        w.suffix.push(...inner.suffix);
      }
      return w;
    }
    default:
      throw new UnsupportedError(`post-processor type ${JSON.stringify(json.type)} is not supported`);
  }
}

function usesByteLevel(json: any): boolean {
  const has = (node: any): boolean =>
    !!node &&
    (node.type === 'ByteLevel' ||
      (Array.isArray(node.pretokenizers) && node.pretokenizers.some(has)) ||
      (Array.isArray(node.decoders) && node.decoders.some(has)));
  return has(json.pre_tokenizer) || has(json.decoder);
}

function truncationOf(json: any): number | undefined {
  const t = json.truncation;
  if (!t || typeof t.max_length !== 'number') return undefined;
  if (t.direction === 'Left') throw new UnsupportedError('left truncation is not supported');
  return t.max_length;
}

/**
 * A parsed tokenizer.json. `config` is the tokenizer_config.json beside it, when there is one
 * (it names BOS/EOS, which tokenizer.json does not).
 */
export function tokenizerFromJson(json: any, where: string, config?: any): Tokenizer {
  return runNow(tokenizerFromJsonSteps(json, where, config));
}

/** Entries between two checkpoints of the builds (well under a millisecond; see steps.ts). */
const SLICE = 2048;

/** Token -> id from a JSON vocabulary object, in slices. */
function* vocabMapSteps(vocabJson: any): Steps<Map<string, number>> {
  const vocab = new Map<string, number>();
  let n = 0;
  for (const key in vocabJson ?? {}) {
    vocab.set(key, Number(vocabJson[key]));
    if (++n % SLICE === 0) yield;
  }
  return vocab;
}

/** Piece -> id of a Unigram `vocab` list (a piece listed twice: its last id, as HF's map). */
function* unigramVocabSteps(list: [string, number][]): Steps<Map<string, number>> {
  const vocab = new Map<string, number>();
  for (let id = 0; id < list.length; id++) {
    vocab.set(list[id][0], id);
    if (id % SLICE === SLICE - 1) yield;
  }
  return vocab;
}

/** tokenizerFromJson in slices (see steps.ts). */
export function* tokenizerFromJsonSteps(json: any, where: string, config?: any): Steps<Tokenizer> {
  yield* validateTokenizerJsonSteps(json, where);
  const model = json.model;
  const addedTokens: AddedToken[] = ((json.added_tokens ?? []) as any[]).map((e) => addedTokenFromJson(e, Number(e.id)));
  const type = model.type ?? (model.merges ? 'BPE' : model.vocab && !Array.isArray(model.vocab) ? 'WordPiece' : undefined);
  const vocab = type === 'Unigram' ? yield* unigramVocabSteps(model.vocab) : yield* vocabMapSteps(model.vocab);
  const lookup = (s: string) => addedTokens.find((t) => t.content === s)?.id ?? vocab.get(s);
  const wrapping = wrappingFromJson(json.post_processor, lookup, where);
  const specialIds = specialIdsOf(lookup, config);
  if (type === 'BPE') {
    const byteLevel = usesByteLevel(json);
    if (!byteLevel && !model.byte_fallback) throw new UnsupportedError('BPE tokenizer.json without ByteLevel or byte_fallback is not supported');
    if ((model.continuing_subword_prefix ?? '') !== '' || (model.end_of_word_suffix ?? '') !== '') {
      throw new UnsupportedError('BPE subword prefixes/suffixes are not supported');
    }
    if (!byteLevel && model.ignore_merges) throw new UnsupportedError('ignore_merges is not supported with byte_fallback');
    const merges: [string, string][] = [];
    for (const m of (model.merges ?? []) as unknown[]) {
      merges.push(parseMergeEntry(m, merges.length, where));
      if (merges.length % SLICE === 0) yield;
    }
    const unk = model.unk_token != null ? vocab.get(String(model.unk_token)) : undefined;
    yield;
    const table = yield* mergeTableFromPairsSteps(vocab, merges, where);
    if (!byteLevel) {
      return new ByteFallbackBpeTokenizer({
        vocab: new MapVocab(vocab),
        merges: table,
        addedTokens,
        text: { normalizer: { json: json.normalizer }, preTokenizer: { json: json.pre_tokenizer } },
        decoder: json.decoder,
        byteFallback: true,
        unkId: unk,
        fuseUnk: !!model.fuse_unk,
        specialIds,
        wrapping,
        truncation: truncationOf(json),
      });
    }
    return new ByteLevelBpeTokenizer({
      vocab: new MapVocab(vocab),
      merges: table,
      addedTokens,
      text: { normalizer: { json: json.normalizer }, preTokenizer: { json: json.pre_tokenizer } },
      model: { ignoreMerges: !!model.ignore_merges, unkId: unk },
      specialIds,
      wrapping,
      truncation: truncationOf(json),
    });
  }
  if (type === 'Unigram') {
    const pieces = model.vocab as [string, number][];
    const tokens = pieces.map((p) => p[0]);
    const mapVocab = new MapVocab(vocab, tokens);
    const scores = Float64Array.from(pieces, (p) => p[1]);
    yield;
    const trie = yield* buildUnigramTrieSteps(mapVocab);
    // Built once here so that a bad normalizer, pre-tokenizer or decoder fails with this file's name.
    return new UnigramTokenizer({
      vocab: mapVocab,
      scores,
      trie,
      unkId: model.unk_id ?? undefined,
      byteFallback: !!model.byte_fallback,
      addedTokens,
      normalizer: json.normalizer ?? null,
      preTokenizer: json.pre_tokenizer ?? null,
      decoder: json.decoder ?? null,
      specialIds,
      wrapping,
      truncation: truncationOf(json),
      where,
    });
  }
  if (type === 'WordPiece') {
    if (json.pre_tokenizer && json.pre_tokenizer.type !== 'BertPreTokenizer') {
      throw new UnsupportedError(`WordPiece with pre-tokenizer ${JSON.stringify(json.pre_tokenizer.type)} is not supported`);
    }
    const mapVocab = new MapVocab(vocab);
    yield;
    return new WordPieceTokenizer({
      vocab: mapVocab,
      unkToken: String(model.unk_token ?? '[UNK]'),
      continuingSubwordPrefix: model.continuing_subword_prefix ?? '##',
      maxInputCharsPerWord: model.max_input_chars_per_word ?? 100,
      addedTokens,
      normalizer: json.normalizer ?? null,
      specialIds,
      wrapping,
      truncation: truncationOf(json),
      cleanup: json.decoder?.cleanup !== false,
      where,
    });
  }
  throw new UnsupportedError(`tokenizer.json model type ${JSON.stringify(type)} is not supported`);
}

/** Added tokens of tokenizer_config.json's `added_tokens_decoder`. */
export function addedTokensFromConfig(config: any): AddedToken[] {
  const decoder = config?.added_tokens_decoder;
  if (!decoder || typeof decoder !== 'object') return [];
  return Object.entries(decoder).map(([id, e]) => addedTokenFromJson(e, Number(id)));
}

/**
 * vocab.json + merges.txt (+ tokenizer_config.json): the layout of the "slow" GPT-2 / Qwen2
 * tokenizers, built the way transformers converts them to a fast tokenizer. Qwen2Tokenizer gets
 * NFC and the Qwen2 split; anything else GPT-2's ByteLevel pre-tokenizer.
 */
export function tokenizerFromVocabMerges(vocabJson: any, mergesTxt: string, config: any, where: string): Tokenizer {
  return runNow(tokenizerFromVocabMergesSteps(vocabJson, mergesTxt, config, where));
}

/** tokenizerFromVocabMerges in slices (see steps.ts). */
export function* tokenizerFromVocabMergesSteps(vocabJson: any, mergesTxt: string, config: any, where: string): Steps<Tokenizer> {
  yield* validateVocabSteps(vocabJson, where, '$');
  validateAddedTokensDecoder(config, where);
  const vocab = yield* vocabMapSteps(vocabJson);
  const lines = mergesTxt.split('\n');
  const merges: [string, string][] = [];
  for (let i = 0; i < lines.length; i++) {
    if (i % SLICE === SLICE - 1) yield;
    const raw = lines[i];
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw;
    if (line.length === 0 || (i === 0 && line.startsWith('#version'))) continue;
    merges.push(parseMergeEntry(line, merges.length, where));
  }
  const addedTokens = addedTokensFromConfig(config);
  const lookup = (s: string) => addedTokens.find((t) => t.content === s)?.id ?? vocab.get(s);
  const cls = String(config?.tokenizer_class ?? '');
  const qwen = cls.startsWith('Qwen2Tokenizer');
  const prefixSpace = !qwen && !!config?.add_prefix_space;
  const specialIds = specialIdsOf(lookup, config);
  const wrapping: SpecialWrapping = { prefix: [], suffix: [] };
  if (config?.add_bos_token && specialIds.bos !== undefined) wrapping.prefix.push(specialIds.bos);
  if (config?.add_eos_token && specialIds.eos !== undefined) wrapping.suffix.push(specialIds.eos);
  const table = yield* mergeTableFromPairsSteps(vocab, merges, where);
  return new ByteLevelBpeTokenizer({
    vocab: new MapVocab(vocab),
    merges: table,
    addedTokens,
    text: { normalizer: qwen ? 'NFC' : 'none', preTokenizer: { pattern: qwen ? QWEN2_PATTERN : GPT2_PATTERN, prefixSpace } },
    specialIds,
    wrapping,
  });
}
