/**
 * BERT WordPiece tokenizer: added tokens ([CLS], [SEP], ...) cut out first, BertNormalizer,
 * BertPreTokenizer, then greedy longest-match-first per word with `##` continuations; a word
 * longer than `maxInputCharsPerWord` characters, or with a remainder no piece matches, becomes
 * one [UNK]. Encode wraps the ids in [CLS] ... [SEP]; decode joins pieces like HF's WordPiece
 * decoder (cleanup of spaces before punctuation included).
 */
import { WeightFormatError } from '../base/errors';
import { AddedToken, AddedTokenSplitter } from './added-tokens';
import { bertNormalizerFromJson, bertPreTokenize } from './bert-basic';
import type { BpeVocab } from './bpe-vocab';
import { normalizerFromJson } from './normalizers';
import { finishEncoding, NO_WRAPPING, SpecialWrapping } from './post-process';
import type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer } from './types';

export interface WordPieceConfig {
  /** Token -> id, and each id's string (MapVocab as built, PackedVocab when unpacked). */
  vocab: BpeVocab;
  unkToken: string;
  continuingSubwordPrefix?: string;
  maxInputCharsPerWord?: number;
  addedTokens: AddedToken[];
  /** The normalizer as tokenizer.json states it (BertNormalizer for vocab.txt); null for none. */
  normalizer?: unknown;
  specialIds?: SpecialTokenIds;
  wrapping?: SpecialWrapping;
  truncation?: number;
  /** Decoder cleanup of " ." -> "." etc. (HF default true). */
  cleanup?: boolean;
  where?: string;
}

/** The normalizer of a vocab.txt (BertTokenizer's: clean text, CJK spacing, accents stripped when lowercasing). */
export function bertNormalizerJson(lowercase: boolean): object {
  return { type: 'BertNormalizer', clean_text: true, handle_chinese_chars: true, strip_accents: null, lowercase };
}

function cleanup(s: string): string {
  return s
    .replaceAll(' .', '.')
    .replaceAll(' ?', '?')
    .replaceAll(' !', '!')
    .replaceAll(' ,', ',')
    .replaceAll(" ' ", "'")
    .replaceAll(" n't", "n't")
    .replaceAll(" 'm", "'m")
    .replaceAll(' do not', " don't")
    .replaceAll(" 's", "'s")
    .replaceAll(" 've", "'ve")
    .replaceAll(" 're", "'re");
}

const CACHE_LIMIT = 100_000;

export class WordPieceTokenizer implements Tokenizer {
  readonly kind = 'wordpiece' as const;
  readonly vocabSize: number;
  readonly specialIds: Readonly<SpecialTokenIds>;
  readonly truncation: number | undefined;
  private readonly vocab: BpeVocab;
  private readonly unkId: number;
  private readonly prefix: string;
  private readonly maxChars: number;
  private readonly splitter: AddedTokenSplitter;
  private readonly wrapping: SpecialWrapping;
  private readonly added = new Map<string, AddedToken>();
  /** Added tokens' strings by id: they replace the vocabulary's in decoding. */
  private readonly addedById = new Map<number, string>();
  private readonly special = new Set<number>();
  private readonly cache = new Map<string, number[]>();
  private readonly cleanup: boolean;

  constructor(readonly config: WordPieceConfig) {
    this.vocab = config.vocab;
    let size = config.vocab.size;
    for (const t of config.addedTokens) {
      this.addedById.set(t.id, t.content);
      this.added.set(t.content, t);
      if (t.id + 1 > size) size = t.id + 1;
    }
    const specialContents = new Set(config.addedTokens.filter((t) => t.special).map((t) => t.content));
    for (const t of config.addedTokens) if (specialContents.has(t.content)) this.special.add(t.id);
    const unk = this.vocab.get(config.unkToken) ?? this.added.get(config.unkToken)?.id;
    if (unk === undefined) {
      throw new WeightFormatError('BAD_HEADER', `the WordPiece unknown token ${JSON.stringify(config.unkToken)} is not in the vocabulary`, {
        path: config.where,
      });
    }
    this.unkId = unk;
    this.prefix = config.continuingSubwordPrefix ?? '##';
    this.maxChars = config.maxInputCharsPerWord ?? 100;
    this.splitter = new AddedTokenSplitter(config.addedTokens, normalizerFromJson(config.normalizer, bertNormalizerFromJson));
    this.wrapping = config.wrapping ?? NO_WRAPPING;
    this.truncation = config.truncation;
    this.vocabSize = size;
    this.specialIds = { unk: this.unkId, ...config.specialIds };
    this.cleanup = config.cleanup !== false;
  }

  private encodeWord(word: string, out: number[]): void {
    const cached = this.cache.get(word);
    if (cached) {
      for (const id of cached) out.push(id);
      return;
    }
    const chars = Array.from(word);
    const ids: number[] = [];
    if (chars.length > this.maxChars) {
      ids.push(this.unkId);
    } else {
      let start = 0;
      while (start < chars.length) {
        let end = chars.length;
        let found = -1;
        while (end > start) {
          let piece = chars.slice(start, end).join('');
          if (start > 0) piece = this.prefix + piece;
          const id = this.vocab.get(piece);
          if (id !== undefined) {
            found = id;
            break;
          }
          end--;
        }
        if (found < 0) {
          ids.length = 0;
          ids.push(this.unkId);
          break;
        }
        ids.push(found);
        start = end;
      }
    }
    if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
    this.cache.set(word, ids);
    for (const id of ids) out.push(id);
  }

  encode(text: string, options?: EncodeOptions): number[] {
    const ids: number[] = [];
    const words: string[] = [];
    for (const seg of this.splitter.split(text, options?.parseSpecialTokens !== false)) {
      if (typeof seg === 'number') {
        ids.push(seg);
        continue;
      }
      words.length = 0;
      bertPreTokenize(seg, words);
      for (const w of words) this.encodeWord(w, ids);
    }
    return finishEncoding(ids, this.wrapping, options, this.truncation);
  }

  /** One token's text as the decoder writes it, `first` when it starts the output. */
  private piece(id: number, first: boolean): string | undefined {
    let token = this.idToToken(id);
    if (token === undefined) return undefined;
    if (!first) token = token.startsWith(this.prefix) ? token.slice(this.prefix.length) : ' ' + token;
    return this.cleanup ? cleanup(token) : token;
  }

  decode(ids: ArrayLike<number>, options?: DecodeOptions): string {
    const stream = this.createStreamDecoder(options);
    let out = '';
    for (let i = 0; i < ids.length; i++) out += stream.push(ids[i]);
    return out + stream.flush();
  }

  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    const skip = options?.skipSpecialTokens === true;
    let first = true;
    return {
      push: (id: number): string => {
        if (skip && this.special.has(id)) return '';
        const p = this.piece(id, first);
        if (p === undefined) return '';
        first = false;
        return p;
      },
      flush: (): string => {
        first = true;
        return '';
      },
    };
  }

  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 ? (this.addedById.get(id) ?? this.vocab.tokenOf(id)) : undefined;
  }

  tokenToId(token: string): number | undefined {
    return this.added.get(token)?.id ?? this.vocab.get(token);
  }

  isSpecial(id: number): boolean {
    return this.special.has(id);
  }
}
