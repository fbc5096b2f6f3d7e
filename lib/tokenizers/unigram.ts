/**
 * SentencePiece Unigram tokenizers from tokenizer.json (XLM-R, bge-m3, multilingual-e5, T5-style
 * vocabularies), as Hugging Face's tokenizers runs them: added tokens cut out first, the rest
 * normalized (tokenizer.json's normalizer: Precompiled charsmap, Replace, NFKC, Strip, ...),
 * pre-tokenized by Metaspace, each word segmented by the Unigram model (unigram-model.ts), then
 * the post-processor's special tokens and truncation. Decoding runs tokenizer.json's decoder
 * (Metaspace, or the ByteFallback sequences of piece-decoder.ts; none: the tokens joined by spaces).
 */
import { UnsupportedError } from '../base/errors';
import { AddedTokenSplitter, indexAddedTokens, type AddedToken } from './added-tokens';
import { bertNormalizerFromJson } from './bert-basic';
import type { BpeVocab } from './bpe-vocab';
import { byteStreamDecoder } from './byte-stream';
import { metaspaceDecodeToken, metaspaceFromJson, metaspaceSplit, type MetaspaceSpec } from './metaspace';
import { normalizerFromJson } from './normalizers';
import { leadingStripper, pieceDecoderFromJson, streamPieceDecoderFromJson, type PieceDecoder } from './piece-decoder';
import { finishEncoding, NO_WRAPPING, type SpecialWrapping } from './post-process';
import type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer } from './types';
import { UnigramModel, type UnigramTrieArrays } from './unigram-model';

export interface UnigramConfig {
  vocab: BpeVocab;
  /** Score by id (vocab.size of them). */
  scores: Float64Array;
  trie: UnigramTrieArrays;
  unkId?: number;
  byteFallback: boolean;
  addedTokens: AddedToken[];
  /** tokenizer.json's `normalizer`, `pre_tokenizer` and `decoder` entries (data, so that the config packs). */
  normalizer: unknown;
  preTokenizer: unknown;
  decoder: unknown;
  specialIds?: SpecialTokenIds;
  wrapping?: SpecialWrapping;
  truncation?: number;
  /** The source, for errors. */
  where?: string;
}

/** The Metaspace of a `pre_tokenizer` entry (a lone one, or the only member of a Sequence); null when there is none. */
export function unigramPreTokenizer(json: any): MetaspaceSpec | null {
  if (json === null || json === undefined) return null;
  if (json.type === 'Metaspace') return metaspaceFromJson(json);
  if (json.type === 'Sequence' && Array.isArray(json.pretokenizers) && json.pretokenizers.length === 1) return unigramPreTokenizer(json.pretokenizers[0]);
  throw new UnsupportedError(`pre-tokenizer ${JSON.stringify(json?.type)} is not supported with Unigram`);
}

export class UnigramTokenizer implements Tokenizer {
  readonly kind = 'unigram' as const;
  readonly vocabSize: number;
  readonly specialIds: Readonly<SpecialTokenIds>;
  readonly truncation: number | undefined;
  private readonly model: UnigramModel;
  private readonly splitter: AddedTokenSplitter;
  private readonly metaspace: MetaspaceSpec | null;
  private readonly wrapping: SpecialWrapping;
  private readonly decoder: PieceDecoder;
  private readonly addedContent: Map<number, string>;
  private readonly added: Map<string, AddedToken>;
  private readonly special: Set<number>;
  private readonly specialContent: Set<string>;

  constructor(readonly config: UnigramConfig) {
    const index = indexAddedTokens(config.addedTokens, config.vocab.size);
    this.addedContent = index.content;
    this.added = index.byContent;
    this.special = index.special;
    this.specialContent = new Set(config.addedTokens.filter((t) => t.special).map((t) => t.content));
    this.vocabSize = index.vocabSize;
    this.specialIds = { ...config.specialIds };
    this.truncation = config.truncation;
    this.model = new UnigramModel({ vocab: config.vocab, scores: config.scores, trie: config.trie, unkId: config.unkId, byteFallback: config.byteFallback });
    const normalizer = normalizerFromJson(config.normalizer, bertNormalizerFromJson, config.where);
    this.splitter = new AddedTokenSplitter(config.addedTokens, normalizer);
    this.metaspace = unigramPreTokenizer(config.preTokenizer);
    this.wrapping = config.wrapping ?? NO_WRAPPING;
    this.decoder = config.decoder === null || config.decoder === undefined ? (tokens) => tokens.join(' ') : pieceDecoderFromJson(config.decoder);
  }

  encode(text: string, options?: EncodeOptions): number[] {
    const ids: number[] = [];
    const words: string[] = [];
    const segments = this.splitter.split(text, options?.parseSpecialTokens !== false);
    for (let i = 0; i < segments.length; i++) {
      const seg = segments[i];
      if (typeof seg === 'number') {
        ids.push(seg);
        continue;
      }
      if (seg.length === 0) continue;
      words.length = 0;
      if (this.metaspace) metaspaceSplit(this.metaspace, seg, i === 0, words);
      else words.push(seg);
      for (const w of words) this.model.encodeWord(w, ids);
    }
    return finishEncoding(ids, this.wrapping, options, this.truncation);
  }

  private tokensOf(ids: ArrayLike<number>, skip: boolean): string[] {
    const tokens: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const t = this.idToToken(ids[i]);
      if (t !== undefined && !(skip && this.specialContent.has(t))) tokens.push(t);
    }
    return tokens;
  }

  decode(ids: ArrayLike<number>, options?: DecodeOptions): string {
    return this.decoder(this.tokensOf(ids, options?.skipSpecialTokens === true));
  }

  /**
   * Incremental decoding: a Metaspace decoder token by token (the first one dropping its
   * replacements); a ByteFallback sequence as the byte-fallback BPE streams it (byte tokens as
   * their byte, incomplete UTF-8 held back).
   */
  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    const skip = options?.skipSpecialTokens === true;
    const json = this.config.decoder as any;
    const tokenOf = (id: number) => {
      const t = this.idToToken(id);
      return t === undefined || (skip && this.specialContent.has(t)) ? undefined : t;
    };
    if (json === null || json === undefined || json.type === 'Metaspace') {
      const spec = json ? metaspaceFromJson(json) : null;
      let index = 0;
      const stream = byteStreamDecoder((id) => {
        const t = tokenOf(id);
        if (t === undefined) return undefined;
        const text = spec ? metaspaceDecodeToken(spec, t, index) : (index > 0 ? ' ' : '') + t;
        index++;
        return Buffer.from(text, 'utf8');
      });
      return {
        push: (id) => stream.push(id),
        flush: () => {
          index = 0;
          return stream.flush();
        },
      };
    }
    const { piece, stripChar, stripStart } = streamPieceDecoderFromJson(json);
    const bytesDecoded = JSON.stringify(json).includes('"ByteFallback"');
    const stripLeading = leadingStripper(stripChar, stripStart);
    return byteStreamDecoder((id) => {
      const t = tokenOf(id);
      if (t === undefined) return undefined;
      const byte = bytesDecoded && !this.addedContent.has(id) ? /^<0x([0-9A-Fa-f]{2})>$/.exec(t) : null;
      const bytes: Uint8Array = byte ? Uint8Array.of(parseInt(byte[1], 16)) : Buffer.from(piece([t]), 'utf8');
      return stripLeading(bytes);
    });
  }

  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 ? (this.addedContent.get(id) ?? this.config.vocab.tokenOf(id)) : undefined;
  }

  tokenToId(token: string): number | undefined {
    return this.added.get(token)?.id ?? this.config.vocab.get(token);
  }

  isSpecial(id: number): boolean {
    return this.special.has(id);
  }
}
