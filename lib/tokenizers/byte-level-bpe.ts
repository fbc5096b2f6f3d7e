/**
 * Byte-level BPE tokenizer (GPT-2, Qwen2/3, Llama 3 families): added tokens cut out first, the
 * rest normalized, pre-tokenized by regex, each word BPE-merged over its UTF-8 bytes. Decoding
 * maps tokens back to bytes and reads them as UTF-8 (lossy), like HF's ByteLevel decoder.
 */
import { AddedToken, AddedTokenSplitter, indexAddedTokens } from './added-tokens';
import { byteLevelToBytes } from './byte-level';
import { byteStreamDecoder } from './byte-stream';
import { BpeModel, BpeModelOptions } from './bpe-model';
import { bpeTextSteps, type BpeTextSpec } from './bpe-text';
import type { BpeVocab } from './bpe-vocab';
import type { MergeTable } from './merge-table';
import { finishEncoding, NO_WRAPPING, SpecialWrapping } from './post-process';
import type { PreTokenizer } from './pretokenizers';
import type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer } from './types';
import { concatBytes, decodeUtf8Lossy } from './utf8';

export interface ByteLevelBpeConfig {
  /** Model vocabulary: byte-level string -> id. */
  vocab: BpeVocab;
  merges: MergeTable;
  addedTokens: AddedToken[];
  /** The normalizer and pre-tokenizer (as data, so that a packed tokenizer carries them). */
  text: BpeTextSpec;
  model?: BpeModelOptions;
  specialIds?: SpecialTokenIds;
  wrapping?: SpecialWrapping;
  truncation?: number;
}

export class ByteLevelBpeTokenizer implements Tokenizer {
  readonly kind = 'byte-level-bpe' as const;
  readonly vocabSize: number;
  readonly specialIds: Readonly<SpecialTokenIds>;
  readonly truncation: number | undefined;
  private readonly model: BpeModel;
  private readonly splitter: AddedTokenSplitter;
  private readonly preTokenizer: PreTokenizer;
  private readonly wrapping: SpecialWrapping;
  private readonly addedContent: Map<number, string>;
  private readonly added: Map<string, AddedToken>;
  private readonly special: Set<number>;
  private readonly bytesCache: (Uint8Array | undefined)[] = [];

  /** The pair table, for writers that store the merges (GGUF, tokenizer.json). */
  get mergeTable(): MergeTable {
    return this.config.merges;
  }

  constructor(readonly config: ByteLevelBpeConfig) {
    const index = indexAddedTokens(config.addedTokens, config.vocab.size);
    this.addedContent = index.content;
    this.added = index.byContent;
    this.special = index.special;
    this.vocabSize = index.vocabSize;
    this.specialIds = { ...config.specialIds };
    this.truncation = config.truncation;
    this.model = new BpeModel(config.vocab, config.merges, config.model);
    const text = bpeTextSteps(config.text);
    this.splitter = new AddedTokenSplitter(config.addedTokens, text.normalizer);
    this.preTokenizer = text.preTokenizer;
    this.wrapping = config.wrapping ?? NO_WRAPPING;
  }

  encode(text: string, options?: EncodeOptions): number[] {
    const ids: number[] = [];
    const words: string[] = [];
    for (const seg of this.splitter.split(text, options?.parseSpecialTokens !== false)) {
      if (typeof seg === 'number') {
        ids.push(seg);
        continue;
      }
      if (seg.length === 0) continue;
      words.length = 0;
      this.preTokenizer(seg, words);
      for (let i = 0; i < words.length; i++) this.model.encodeWord(words[i], ids);
    }
    return finishEncoding(ids, this.wrapping, options, this.truncation);
  }

  /** The bytes a token decodes to; undefined for ids outside the vocabulary. */
  tokenBytes(id: number): Uint8Array | undefined {
    let b = this.bytesCache[id];
    if (b === undefined) {
      const token = this.idToToken(id);
      if (token === undefined) return undefined;
      // Added tokens too: HF's ByteLevel decoder maps every token whose characters all are
      // byte stand-ins, and takes the UTF-8 of the others.
      b = byteLevelToBytes(token);
      this.bytesCache[id] = b;
    }
    return b;
  }

  decode(ids: ArrayLike<number>, options?: DecodeOptions): string {
    const skip = options?.skipSpecialTokens === true;
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (skip && this.special.has(id)) continue;
      const b = this.tokenBytes(id);
      if (b !== undefined) chunks.push(b);
    }
    return decodeUtf8Lossy(concatBytes(chunks));
  }

  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    const skip = options?.skipSpecialTokens === true;
    return byteStreamDecoder((id) => (skip && this.special.has(id) ? undefined : this.tokenBytes(id)));
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
