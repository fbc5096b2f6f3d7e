/**
 * Score-based BPE over a SentencePiece vocabulary (Llama 1/2, llama2.c's tokenizer.bin, GGUF
 * model 'llama'), as llama.cpp's SPM tokenizer does it: spaces become U+2581, a dummy space
 * prefix starts the text (and each text run after a special token), the text starts as one
 * symbol per UTF-8 character, and the adjacent pair whose concatenation is a vocabulary entry
 * with the highest score is merged first (leftmost on ties) until none is left. Symbols that are
 * no vocabulary entry fall back to their bytes as `<0xXX>` tokens.
 */
import { AddedToken, AddedTokenSplitter } from './added-tokens';
import { byteStreamDecoder } from './byte-stream';
import { finishEncoding, SpecialWrapping } from './post-process';
import type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer } from './types';
import { concatBytes, decodeUtf8Lossy } from './utf8';

const SPACE_MARK = '\u2581';
const SPACE_MARK_BYTES = Buffer.from(SPACE_MARK, 'utf8');
const BYTE_PIECE = /^<0x([0-9A-Fa-f]{2})>$/;

export interface SentencePieceConfig {
  /** Token strings by id, with U+2581 for spaces (GGUF form). */
  tokens: string[];
  /**
   * Lookup keys by id when the tokens are not UTF-8 text: each token's bytes (spaces written as
   * U+2581's UTF-8) as a latin1 string. Defaults to the UTF-8 of `tokens`.
   */
  tokenKeys?: string[];
  scores: Float32Array;
  /** Ids cut out of the text before merging (control / user-defined tokens); special ones are skipped by decode. */
  addedTokens: AddedToken[];
  /** Ids decoded as one raw byte (`<0xXX>` pieces). */
  byteIds: Map<number, number>;
  /** Ids that decode to nothing when skipping special tokens (BOS, EOS, UNK, control tokens). */
  specialIdSet: Set<number>;
  specialIds: SpecialTokenIds;
  addBos: boolean;
  addEos: boolean;
  addSpacePrefix: boolean;
  /**
   * Where decode drops the dummy prefix's space (with addSpacePrefix): at the start of the output
   * and after each BOS (llama2.c's run.c), or once, off the whole output's start, special tokens'
   * text counted when kept (Hugging Face's Strip decoder: a GGUF from a tokenizer.json).
   */
  stripAfterBos: boolean;
  /** How a token decodes when it is neither a byte nor special: its text with U+2581 as space, or these bytes. */
  pieceBytes?: (id: number) => Uint8Array;
}

interface Bigram {
  score: number;
  left: number;
  right: number;
  size: number;
}

/** Max-heap order: higher score first, then smaller left index. */
function before(a: Bigram, b: Bigram): boolean {
  return a.score > b.score || (a.score === b.score && a.left < b.left);
}

class BigramHeap {
  private items: Bigram[] = [];
  get size(): number {
    return this.items.length;
  }
  push(b: Bigram): void {
    const h = this.items;
    h.push(b);
    let i = h.length - 1;
    while (i > 0) {
      const p = (i - 1) >> 1;
      if (!before(b, h[p])) break;
      h[i] = h[p];
      i = p;
    }
    h[i] = b;
  }
  pop(): Bigram {
    const h = this.items;
    const top = h[0];
    const last = h.pop()!;
    if (h.length > 0) {
      let i = 0;
      for (;;) {
        let c = 2 * i + 1;
        if (c >= h.length) break;
        if (c + 1 < h.length && before(h[c + 1], h[c])) c++;
        if (!before(h[c], last)) break;
        h[i] = h[c];
        i = c;
      }
      h[i] = last;
    }
    return top;
  }
}

function utf8Length(lead: number): number {
  if (lead < 0x80) return 1;
  if (lead >= 0xf0) return 4;
  if (lead >= 0xe0) return 3;
  if (lead >= 0xc0) return 2;
  return 1;
}

export class SentencePieceBpeTokenizer implements Tokenizer {
  readonly kind = 'sentencepiece-bpe' as const;
  readonly vocabSize: number;
  readonly specialIds: Readonly<SpecialTokenIds>;
  readonly truncation = undefined;
  /** UTF-8 bytes of a token (U+2581 kept) as a latin1 string -> id (the first id wins). */
  private readonly byKey = new Map<string, number>();
  private readonly byText = new Map<string, number>();
  private readonly fallback = new Int32Array(256).fill(-1);
  private readonly splitter: AddedTokenSplitter;
  private readonly wrapping: SpecialWrapping;
  private readonly bytesCache: (Uint8Array | undefined)[] = [];

  constructor(private readonly config: SentencePieceConfig) {
    config.tokens.forEach((t, id) => {
      const key = config.tokenKeys ? config.tokenKeys[id] : Buffer.from(t, 'utf8').toString('latin1');
      if (!this.byKey.has(key)) this.byKey.set(key, id);
      if (!this.byText.has(t)) this.byText.set(t, id);
    });
    for (const [id, byte] of config.byteIds) if (this.fallback[byte] < 0) this.fallback[byte] = id;
    this.vocabSize = config.tokens.length;
    this.specialIds = { ...config.specialIds };
    this.splitter = new AddedTokenSplitter(config.addedTokens);
    this.wrapping = {
      prefix: config.addBos && config.specialIds.bos !== undefined ? [config.specialIds.bos] : [],
      suffix: config.addEos && config.specialIds.eos !== undefined ? [config.specialIds.eos] : [],
    };
  }

  encode(text: string, options?: EncodeOptions): number[] {
    const ids: number[] = [];
    let afterSpecial = true;
    for (const seg of this.splitter.split(text, options?.parseSpecialTokens !== false)) {
      if (typeof seg === 'number') {
        ids.push(seg);
        afterSpecial = true;
        continue;
      }
      if (seg.length === 0) continue;
      const withPrefix = this.config.addSpacePrefix && afterSpecial ? ' ' + seg : seg;
      this.encodeRun(Buffer.from(withPrefix.replaceAll(' ', SPACE_MARK), 'utf8'), ids);
      afterSpecial = false;
    }
    return finishEncoding(ids, this.wrapping, options, undefined);
  }

  private encodeRun(bytes: Buffer, out: number[]): void {
    // Symbols: one per UTF-8 character, as [start, length] with a doubly linked list.
    const n0 = bytes.length;
    const start = new Int32Array(n0);
    const len = new Int32Array(n0);
    const prev = new Int32Array(n0);
    const next = new Int32Array(n0);
    let n = 0;
    for (let at = 0; at < n0; ) {
      const l = Math.min(utf8Length(bytes[at]), n0 - at);
      start[n] = at;
      len[n] = l;
      prev[n] = n - 1;
      next[n] = at + l === n0 ? -1 : n + 1;
      n++;
      at += l;
    }
    const heap = new BigramHeap();
    const tryAdd = (left: number, right: number) => {
      if (left < 0 || right < 0) return;
      const size = len[left] + len[right];
      const id = this.byKey.get(bytes.toString('latin1', start[left], start[left] + size));
      if (id === undefined) return;
      heap.push({ score: this.config.scores[id], left, right, size });
    };
    for (let i = 1; i < n; i++) tryAdd(i - 1, i);
    while (heap.size > 0) {
      const b = heap.pop();
      if (len[b.left] === 0 || len[b.right] === 0 || len[b.left] + len[b.right] !== b.size) continue;
      len[b.left] += len[b.right];
      len[b.right] = 0;
      next[b.left] = next[b.right];
      if (next[b.right] >= 0) prev[next[b.right]] = b.left;
      tryAdd(prev[b.left], b.left);
      tryAdd(b.left, next[b.left]);
    }
    for (let i = n > 0 ? 0 : -1; i !== -1; i = next[i]) {
      const id = this.byKey.get(bytes.toString('latin1', start[i], start[i] + len[i]));
      if (id !== undefined) {
        out.push(id);
        continue;
      }
      for (let k = start[i]; k < start[i] + len[i]; k++) {
        const byteId = this.fallback[bytes[k]];
        if (byteId >= 0) out.push(byteId);
        else if (this.config.specialIds.unk !== undefined) out.push(this.config.specialIds.unk);
      }
    }
  }

  /** The bytes a token decodes to (without the after-BOS space rule). */
  tokenBytes(id: number): Uint8Array | undefined {
    let b = this.bytesCache[id];
    if (b === undefined) {
      const token = this.config.tokens[id];
      if (token === undefined) return undefined;
      const byte = this.config.byteIds.get(id);
      if (byte !== undefined) b = Uint8Array.of(byte);
      else if (this.config.pieceBytes) b = this.config.pieceBytes(id);
      else b = Buffer.from(token.replaceAll(SPACE_MARK, ' '), 'utf8');
      this.bytesCache[id] = b;
    }
    return b;
  }

  /** A decoding pass: the dummy prefix's space dropped where `stripAfterBos` says. */
  private decoderState(skip: boolean): (id: number) => Uint8Array | undefined {
    const strip = this.config.addSpacePrefix;
    const afterBos = this.config.stripAfterBos;
    let atStart = strip;
    const bos = this.config.specialIds.bos;
    return (id) => {
      const isBos = id === bos;
      if (skip && this.config.specialIdSet.has(id)) {
        if (isBos && afterBos) atStart = strip;
        return undefined;
      }
      let b = this.tokenBytes(id);
      if (b === undefined) return undefined;
      if (!afterBos) {
        if (atStart && b.length > 0) {
          if (b[0] === 0x20) b = b.subarray(1);
          atStart = false;
        }
        return b;
      }
      if (atStart && b.length > 0 && b[0] === 0x20) b = b.subarray(1);
      atStart = strip && isBos;
      return b;
    };
  }

  decode(ids: ArrayLike<number>, options?: DecodeOptions): string {
    const piece = this.decoderState(options?.skipSpecialTokens === true);
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < ids.length; i++) {
      const b = piece(ids[i]);
      if (b !== undefined) chunks.push(b);
    }
    return decodeUtf8Lossy(concatBytes(chunks));
  }

  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    return byteStreamDecoder(this.decoderState(options?.skipSpecialTokens === true));
  }

  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 ? this.config.tokens[id] : undefined;
  }

  tokenToId(token: string): number | undefined {
    return this.byText.get(token);
  }

  isSpecial(id: number): boolean {
    return this.config.specialIdSet.has(id);
  }
}

/** Parses `<0xXX>` piece text; -1 when it is not one. */
export function bytePieceValue(text: string): number {
  const m = BYTE_PIECE.exec(text);
  return m ? parseInt(m[1], 16) : -1;
}

export { SPACE_MARK, SPACE_MARK_BYTES };
