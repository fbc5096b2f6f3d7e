/** TokenizerData (a vocabulary found inside or beside weights) -> Tokenizer. */
import { UnsupportedError, WeightFormatError } from '../base/errors';
import type { TokenizerData } from '../addon/weights';
import type { AddedToken } from './added-tokens';
import { ByteLevelBpeTokenizer } from './byte-level-bpe';
import { mergeTableFromPairs, parseMergeEntry } from './bpe-model';
import { MapVocab } from './bpe-vocab';
import { GPT2_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, QWEN2_PATTERN } from './pretokenizers';
import { byteLevelBpeFromScoredSteps } from './scored-byte-level';
import { bytePieceValue, SentencePieceBpeTokenizer, SPACE_MARK } from './sentencepiece-bpe';
import { runNow, runYielding, type Steps } from '../base/steps';
import { decodeVocabularySteps } from './deferred-vocabulary';
import type { SpecialTokenIds, Tokenizer } from './types';
import { bertNormalizerJson, WordPieceTokenizer } from './wordpiece';
import { withRecipe } from './recipes';
import { TOKEN_BYTE, TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_USER_DEFINED } from './token-types';
import { ugmFromGgufSteps } from './ugm-gguf';

type Gguf = Extract<TokenizerData, { kind: 'gguf' }>;
type Scored = Extract<TokenizerData, { kind: 'scored' }>;

export { TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_CONTROL, TOKEN_USER_DEFINED, TOKEN_UNUSED, TOKEN_BYTE } from './token-types';

function special(id: number, content: string, isSpecial = true): AddedToken {
  return { id, content, special: isSpecial, singleWord: false, lstrip: false, rstrip: false, normalized: false };
}

function definedIds(ids: SpecialTokenIds): SpecialTokenIds {
  const out: SpecialTokenIds = {};
  for (const [k, v] of Object.entries(ids) as [keyof SpecialTokenIds, number | undefined][]) if (v !== undefined) out[k] = v;
  return out;
}

function wordPiece(tokens: string[], ids: { pad?: number; unk: number; cls?: number; sep?: number; mask?: number }, lowercase: boolean, where: string) {
  const specials = [ids.pad, ids.unk, ids.cls, ids.sep, ids.mask].filter((id): id is number => id !== undefined);
  for (const id of specials) {
    if (!(id >= 0 && id < tokens.length)) throw new WeightFormatError('CONFIG_MISMATCH', `special id ${id} lies outside the vocabulary`, { path: where, expected: `< ${tokens.length}`, found: id });
  }
  return new WordPieceTokenizer({
    vocab: MapVocab.fromTokens(tokens),
    unkToken: tokens[ids.unk],
    addedTokens: specials.map((id) => special(id, tokens[id])),
    normalizer: bertNormalizerJson(lowercase),
    specialIds: definedIds({ pad: ids.pad, unk: ids.unk, cls: ids.cls, sep: ids.sep, mask: ids.mask }),
    wrapping: { prefix: ids.cls !== undefined ? [ids.cls] : [], suffix: ids.sep !== undefined ? [ids.sep] : [] },
    where,
  });
}

/** U+2581's UTF-8 bytes as a latin1 string. */
const SPACE_MARK_LATIN1 = Buffer.from(SPACE_MARK, 'utf8').toString('latin1');

/** llama2.c tokenizer.bin: raw bytes with real spaces; ids 0/1/2 are <unk>, BOS, EOS. */
function llama2cTokenizer(data: Scored): Tokenizer {
  const latin1 = data.tokens.map((b) => Buffer.from(b).toString('latin1'));
  const tokens = data.tokens.map((b) => Buffer.from(b).toString('utf8').replaceAll(' ', SPACE_MARK));
  const byteIds = new Map<number, number>();
  latin1.forEach((t, id) => {
    const v = bytePieceValue(t);
    if (v >= 0) byteIds.set(id, v);
  });
  const bos = data.bosId ?? 1;
  const eos = data.eosId ?? 2;
  const unk = 0;
  return new SentencePieceBpeTokenizer({
    tokens,
    tokenKeys: latin1.map((t) => t.replaceAll(' ', SPACE_MARK_LATIN1)),
    scores: data.scores,
    addedTokens: [],
    byteIds,
    specialIdSet: new Set([unk, bos, eos]),
    specialIds: { unk, bos, eos },
    addBos: true,
    addEos: false,
    addSpacePrefix: true,
    stripAfterBos: true,
    pieceBytes: (id) => data.tokens[id],
  });
}

function ggufSentencePiece(data: Gguf, where: string): Tokenizer {
  if (!data.scores) throw new WeightFormatError('BAD_HEADER', 'a llama (SentencePiece) vocabulary needs tokenizer.ggml.scores', { path: where });
  const types = data.tokenTypes;
  const byteIds = new Map<number, number>();
  const addedTokens: AddedToken[] = [];
  const specialSet = new Set<number>();
  data.tokens.forEach((t, id) => {
    const type = types ? types[id] : TOKEN_NORMAL;
    if (type === TOKEN_BYTE || (!types && bytePieceValue(t) >= 0)) {
      const v = bytePieceValue(t);
      if (v >= 0) byteIds.set(id, v);
    } else if (type === TOKEN_CONTROL) {
      specialSet.add(id);
      addedTokens.push(special(id, t));
    } else if (type === TOKEN_USER_DEFINED) {
      addedTokens.push(special(id, t, false));
    } else if (type === TOKEN_UNKNOWN) {
      specialSet.add(id);
    }
  });
  for (const id of [data.bosId, data.eosId, data.unkId]) if (id !== undefined) specialSet.add(id);
  return new SentencePieceBpeTokenizer({
    tokens: data.tokens,
    scores: data.scores,
    addedTokens,
    byteIds,
    specialIdSet: specialSet,
    specialIds: definedIds({ bos: data.bosId, eos: data.eosId, unk: data.unkId, pad: data.padId }),
    addBos: data.addBos ?? true,
    addEos: data.addEos ?? false,
    addSpacePrefix: data.addSpacePrefix ?? true,
    stripAfterBos: false,
  });
}

/** GGUF `tokenizer.ggml.pre` -> the regex and normalizer of the HF tokenizer it stands for. */
function preTokenizerFor(pre: string | undefined) {
  switch (pre ?? 'default') {
    case 'qwen2':
      return { pattern: QWEN2_PATTERN, nfc: true, ignoreMerges: false };
    case 'llama3':
    case 'llama-bpe':
      // llama.cpp's "llama-bpe" takes a word that is a vocabulary entry whole, as HF's ignore_merges.
      return { pattern: LLAMA3_PATTERN, nfc: false, ignoreMerges: true };
    case 'gpt-4o':
      // o200k (gpt-oss): tokenizer.json has ignore_merges, as tiktoken takes a whole-word rank first.
      return { pattern: O200K_PATTERN, nfc: false, ignoreMerges: true };
    case 'default':
    case 'gpt2':
    case 'gpt-2':
      return { pattern: GPT2_PATTERN, nfc: false, ignoreMerges: false };
    default:
      throw new UnsupportedError(`GGUF pre-tokenizer ${JSON.stringify(pre)} is not supported`);
  }
}

function ggufByteLevel(data: Gguf, where: string): Tokenizer {
  const vocab = new Map<string, number>();
  const addedTokens: AddedToken[] = [];
  data.tokens.forEach((t, id) => {
    const type = data.tokenTypes ? data.tokenTypes[id] : TOKEN_NORMAL;
    if (type === TOKEN_CONTROL) addedTokens.push(special(id, t));
    else if (type === TOKEN_USER_DEFINED) addedTokens.push(special(id, t, false));
    if (!vocab.has(t)) vocab.set(t, id);
  });
  const merges = (data.merges ?? []).map((m, i) => parseMergeEntry(m, i, where));
  const { pattern, nfc, ignoreMerges } = preTokenizerFor(data.pre);
  const ids = definedIds({ bos: data.bosId, eos: data.eosId, unk: data.unkId, pad: data.padId });
  return new ByteLevelBpeTokenizer({
    vocab: new MapVocab(vocab),
    merges: mergeTableFromPairs(vocab, merges, where),
    addedTokens,
    text: { normalizer: nfc ? 'NFC' : 'none', preTokenizer: { pattern, prefixSpace: false } },
    model: { ignoreMerges },
    specialIds: ids,
    wrapping: {
      prefix: data.addBos && ids.bos !== undefined ? [ids.bos] : [],
      suffix: data.addEos && ids.eos !== undefined ? [ids.eos] : [],
    },
  });
}

/** llama.cpp stores BERT vocabularies with U+2581 word starts and bare continuation pieces. */
function ggufWordPiece(data: Gguf, where: string): Tokenizer {
  const tokens = data.tokens.map((t) =>
    t.startsWith('[') && t.endsWith(']') ? t : t.startsWith(SPACE_MARK) ? t.slice(SPACE_MARK.length) : '##' + t,
  );
  const unk = data.unkId ?? tokens.indexOf('[UNK]');
  if (unk < 0) throw new WeightFormatError('BAD_HEADER', 'the BERT vocabulary has no unknown token', { path: where });
  const named = (name: string) => (tokens.indexOf(name) >= 0 ? tokens.indexOf(name) : undefined);
  return wordPiece(
    tokens,
    {
      pad: data.padId ?? named('[PAD]'),
      unk,
      cls: data.clsId ?? named('[CLS]'),
      sep: data.sepId ?? named('[SEP]'),
      mask: data.maskId ?? named('[MASK]'),
    },
    true,
    where,
  );
}

/**
 * tokenizerFromData without holding the JS thread for the whole build: a byte-level BPE rebuilt
 * from an ajc1 `.tokenizer` (151k tokens: a few hundred milliseconds) gives the event loop a turn
 * every few milliseconds. The other kinds build in one go.
 */
export async function tokenizerFromDataAsync(data: TokenizerData, where = 'tokenizer data'): Promise<Tokenizer> {
  return withRecipe(await runYielding(tokenizerFromDataSteps(data, where)), { data, where });
}

/** Builds the tokenizer a TokenizerData describes. `where` names its source in errors. */
export function tokenizerFromData(data: TokenizerData, where = 'tokenizer data'): Tokenizer {
  return runNow(tokenizerFromDataSteps(data, where));
}

/** tokenizerFromData in slices (see steps.ts). */
export function* tokenizerFromDataSteps(data: TokenizerData, where = 'tokenizer data'): Steps<Tokenizer> {
  yield* decodeVocabularySteps(data);
  if (data.kind === 'scored' && data.style !== 'llama2c') return yield* byteLevelBpeFromScoredSteps(data, where);
  switch (data.kind) {
    case 'wordpiece':
      return wordPiece(data.tokens, data.specialIds, data.doLowerCase, where);
    case 'scored':
      return llama2cTokenizer(data);
    case 'gguf':
      switch (data.model) {
        case 'gpt2':
          return ggufByteLevel(data, where);
        case 'llama':
          return ggufSentencePiece(data, where);
        case 'bert':
          return ggufWordPiece(data, where);
        case 't5':
          return yield* ugmFromGgufSteps(data, where);
        default:
          throw new UnsupportedError(`GGUF tokenizer model ${JSON.stringify(data.model)} is not supported`);
      }
  }
}
