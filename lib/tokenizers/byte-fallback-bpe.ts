/**
 * BPE over characters with byte fallback (Gemma 3's tokenizer.json): added tokens cut out first,
 * the rest normalized (spaces -> U+2581) and pre-tokenized, each word starting as one symbol per
 * character that is a vocabulary entry, the `<0xNN>` tokens of its UTF-8 bytes otherwise (the
 * unknown token when one of those is missing, consecutive unknowns fused), then merged by rank
 * like HF's BPE model. Decoding runs tokenizer.json's decoder (piece-decoder.ts).
 */
import { AddedToken, AddedTokenSplitter, indexAddedTokens } from './added-tokens';
import { mergeWord } from './bpe-merge';
import { bpeTextSteps, type BpeTextSpec } from './bpe-text';
import type { BpeVocab } from './bpe-vocab';
import { byteStreamDecoder } from './byte-stream';
import type { MergeTable } from './merge-table';
import { leadingStripper, pieceDecoderFromJson, streamPieceDecoderFromJson, type PieceDecoder } from './piece-decoder';
import { finishEncoding, NO_WRAPPING, type SpecialWrapping } from './post-process';
import type { PreTokenizer } from './pretokenizers';
import type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer } from './types';

const CACHE_LIMIT = 100_000;
/** Words longer than this (UTF-16 units) are not cached. */
const CACHE_MAX_WORD = 256;

export interface ByteFallbackBpeConfig {
  vocab: BpeVocab;
  merges: MergeTable;
  addedTokens: AddedToken[];
  text: BpeTextSpec;
  /** tokenizer.json's `decoder` entry (data, like `text`, so that the config can be packed). */
  decoder: unknown;
  /** HF `byte_fallback`: characters outside the vocabulary become their `<0xNN>` byte tokens. */
  byteFallback: boolean;
  unkId?: number;
  /** HF `fuse_unk`: a run of unknown characters gives one unknown token. */
  fuseUnk: boolean;
  specialIds?: SpecialTokenIds;
  wrapping?: SpecialWrapping;
  truncation?: number;
}

export class ByteFallbackBpeTokenizer implements Tokenizer {
  readonly kind = 'byte-fallback-bpe' as const;
  readonly vocabSize: number;
  readonly specialIds: Readonly<SpecialTokenIds>;
  readonly truncation: number | undefined;
  private readonly splitter: AddedTokenSplitter;
  private readonly preTokenizer: PreTokenizer;
  private readonly wrapping: SpecialWrapping;
  private readonly decoder: PieceDecoder;
  private readonly addedContent: Map<number, string>;
  private readonly added: Map<string, AddedToken>;
  private readonly special: Set<number>;
  /** byte -> id of its `<0xNN>` token, -1 when absent. */
  private readonly byteIds = new Int32Array(256).fill(-1);
  /** id -> byte for the `<0xNN>` tokens (stream decoding). */
  private readonly byteOf = new Map<number, number>();
  private readonly cache = new Map<string, Int32Array>();
  private symBuf = new Int32Array(1024);

  constructor(readonly config: ByteFallbackBpeConfig) {
    const index = indexAddedTokens(config.addedTokens, config.vocab.size);
    this.addedContent = index.content;
    this.added = index.byContent;
    this.special = index.special;
    for (let b = 0; b < 256; b++) {
      const id = config.vocab.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
      if (id !== undefined) {
        this.byteIds[b] = id;
        this.byteOf.set(id, b);
      }
    }
    this.vocabSize = index.vocabSize;
    this.specialIds = { ...config.specialIds };
    this.truncation = config.truncation;
    const text = bpeTextSteps(config.text);
    this.splitter = new AddedTokenSplitter(config.addedTokens, text.normalizer);
    this.preTokenizer = text.preTokenizer;
    this.wrapping = config.wrapping ?? NO_WRAPPING;
    this.decoder = pieceDecoderFromJson(config.decoder);
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
      for (let i = 0; i < words.length; i++) this.encodeWord(words[i], ids);
    }
    return finishEncoding(ids, this.wrapping, options, this.truncation);
  }

  private encodeWord(word: string, out: number[]): void {
    const cached = this.cache.get(word);
    if (cached !== undefined) {
      for (let i = 0; i < cached.length; i++) out.push(cached[i]);
      return;
    }
    // At most 4 symbols per code point (its UTF-8 bytes), so 2 per UTF-16 unit.
    if (this.symBuf.length < word.length * 2) this.symBuf = new Int32Array(word.length * 4);
    const syms = this.symBuf;
    const { vocab, unkId, byteFallback, fuseUnk } = this.config;
    let n = 0;
    let lastUnk = false;
    for (const ch of word) {
      const id = vocab.get(ch);
      if (id !== undefined) {
        syms[n++] = id;
        lastUnk = false;
        continue;
      }
      if (byteFallback) {
        const bytes = Buffer.from(ch, 'utf8');
        if (bytes.every((b) => this.byteIds[b] >= 0)) {
          for (const b of bytes) syms[n++] = this.byteIds[b];
          lastUnk = false;
          continue;
        }
      }
      if (unkId === undefined) continue;
      if (!(fuseUnk && lastUnk)) syms[n++] = unkId;
      lastUnk = true;
    }
    n = mergeWord(syms, n, this.config.merges);
    for (let i = 0; i < n; i++) out.push(syms[i]);
    if (word.length <= CACHE_MAX_WORD) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(word, syms.slice(0, n));
    }
  }

  decode(ids: ArrayLike<number>, options?: DecodeOptions): string {
    const skip = options?.skipSpecialTokens === true;
    const tokens: string[] = [];
    for (let i = 0; i < ids.length; i++) {
      const id = ids[i];
      if (skip && this.special.has(id)) continue;
      const t = this.idToToken(id);
      if (t !== undefined) tokens.push(t);
    }
    return this.decoder(tokens);
  }

  /**
   * Incremental decoding: byte tokens as their byte, other tokens as their decoded text (incomplete
   * UTF-8 is held back); a Strip after Fuse (Llama 2's) cuts its characters off the output's start.
   */
  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    const skip = options?.skipSpecialTokens === true;
    const { piece, stripChar, stripStart } = streamPieceDecoderFromJson(this.config.decoder);
    const stripLeading = leadingStripper(stripChar, stripStart);
    return byteStreamDecoder((id) => {
      if (skip && this.special.has(id)) return undefined;
      const byte = this.byteOf.get(id);
      let bytes: Uint8Array | undefined;
      if (byte !== undefined && !this.addedContent.has(id)) bytes = Uint8Array.of(byte);
      else {
        const t = this.idToToken(id);
        if (t === undefined) return undefined;
        bytes = Buffer.from(piece([t]), 'utf8');
      }
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
