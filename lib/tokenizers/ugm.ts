/**
 * GGUF UGM vocabularies (`tokenizer.ggml.model` "t5": XLM-R, T5, nomic-bert-moe as llama.cpp's
 * converter writes them), tokenized as llama.cpp's UGM tokenizer does (src/llama-vocab.cpp), which
 * is sentencepiece's own behaviour rather than Hugging Face's tokenizer.json one (unigram.ts):
 *  - control, user-defined and unknown tokens are cut out first, one token at a time, the longest
 *    (in bytes) first, each at every occurrence left (control and unknown ones only when special
 *    tokens are parsed);
 *  - each fragment is normalized by the charsmap's *longest* rule at each byte position (no
 *    grapheme clusters), then its spaces escaped to U+2581: with remove_extra_whitespaces, each run
 *    of non-spaces gets one ▁ before it and the spaces themselves go; otherwise each space is a ▁
 *    and, with add_space_prefix, one ▁ goes before the first non-space;
 *  - the Viterbi runs over the whole fragment with the normal, user-defined (score 0) and unused
 *    pieces; an unknown character scores min(normal score) - 10 (in f32), and a run of them is one
 *    unknown id;
 *  - decoding: control and unknown tokens only when special tokens are kept, ▁ as a space, byte
 *    tokens as their byte, the first piece's leading space dropped under add_space_prefix (not
 *    after a skipped BOS), and a skipped BOS / EOS only first / last.
 */
import { AddedTokenSplitter, type AddedToken } from './added-tokens';
import type { BpeVocab } from './bpe-vocab';
import { byteStreamDecoder } from './byte-stream';
import { finishEncoding, type SpecialWrapping } from './post-process';
import { precompiledFromBase64, type PrecompiledCharsmap } from './precompiled-charsmap';
import type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer } from './types';
import { UnigramModel, type UnigramTrieArrays } from './unigram-model';
import { TOKEN_BYTE, TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_UNKNOWN, TOKEN_USER_DEFINED } from './token-types';

const SPACE_MARK = '\u2581';

export interface UgmConfig {
  vocab: BpeVocab;
  /** llama.cpp token type by id (TOKEN_*). */
  types: Uint8Array;
  /** Score by id as the Viterbi uses it (user-defined pieces 0). */
  scores: Float64Array;
  /** The token matcher: normal, user-defined and unused pieces. */
  trie: UnigramTrieArrays;
  unkId: number;
  /** f32(min normal score - 10). */
  unkScore: number;
  /** The charsmap blob as base64 (so that the config packs), or null for none. */
  charsmap: string | null;
  addSpacePrefix: boolean;
  removeExtraWhitespaces: boolean;
  /** The control, user-defined and unknown tokens (special: control and unknown), in the order they are cut. */
  addedTokens: AddedToken[];
  specialIds: SpecialTokenIds;
  /** BOS when add_bos_token, EOS when add_eos_token. */
  wrapping: SpecialWrapping;
  truncation?: number;
  where?: string;
}

/** llama.cpp's cut order: longer token texts (in bytes) first; equal lengths by id (llama.cpp's sort leaves their order unspecified). */
export function ugmCutOrder(tokens: AddedToken[]): AddedToken[] {
  return tokens
    .filter((t) => t.content.length > 0)
    .map((t) => ({ t, n: Buffer.byteLength(t.content, 'utf8') }))
    .sort((a, b) => b.n - a.n || a.t.id - b.t.id)
    .map(({ t }) => t);
}

/** C's isspace over a UTF-16 unit (llama.cpp strips bytes; the ASCII ones are the only ones it can match). */
const isCSpace = (c: number) => c === 0x20 || (c >= 0x09 && c <= 0x0d);

export class UgmTokenizer implements Tokenizer {
  readonly kind = 'unigram' as const;
  readonly vocabSize: number;
  readonly specialIds: Readonly<SpecialTokenIds>;
  readonly truncation: number | undefined;
  private readonly model: UnigramModel;
  private readonly charsmap: PrecompiledCharsmap | null;
  private readonly special: Set<number>;
  private readonly added: Map<string, number>;

  constructor(readonly config: UgmConfig) {
    this.vocabSize = config.vocab.size;
    this.specialIds = { ...config.specialIds };
    this.truncation = config.truncation;
    this.charsmap = config.charsmap === null ? null : precompiledFromBase64(config.charsmap, config.where ?? 'UGM vocabulary');
    this.model = new UnigramModel({ vocab: config.vocab, scores: config.scores, trie: config.trie, unkId: config.unkId, byteFallback: false, unkScore: config.unkScore, unkRunIsUnk: true });
    this.special = new Set(config.addedTokens.filter((t) => t.special).map((t) => t.id));
    this.added = new Map(config.addedTokens.map((t) => [t.content, t.id]));
  }

  encode(text: string, options?: EncodeOptions): number[] {
    const ids: number[] = [];
    for (const piece of this.partition(text, options?.parseSpecialTokens !== false)) {
      if (typeof piece === 'number') ids.push(piece);
      else {
        const normalized = this.normalize(piece);
        if (normalized.length > 0) this.model.encodeWord(normalized, ids);
      }
    }
    return finishEncoding(ids, this.config.wrapping, options, this.truncation);
  }

  /** llama.cpp's tokenizer_st_partition: the text cut at each cut token in turn (ugmCutOrder), leftmost occurrence first. */
  private partition(text: string, parseSpecial: boolean): (string | number)[] {
    let pieces: (string | number)[] = [text];
    for (const t of this.config.addedTokens) {
      if (!parseSpecial && t.special) continue;
      const next: (string | number)[] = [];
      for (const piece of pieces) {
        if (typeof piece === 'number' || !piece.includes(t.content)) {
          next.push(piece);
          continue;
        }
        let from = 0;
        for (let at = piece.indexOf(t.content); at >= 0; at = piece.indexOf(t.content, from)) {
          let end = at;
          if (t.lstrip) while (end > from && isCSpace(piece.charCodeAt(end - 1))) end--;
          if (end > from) next.push(piece.slice(from, end));
          next.push(t.id);
          from = at + t.content.length;
          if (t.rstrip) while (from < piece.length && isCSpace(piece.charCodeAt(from))) from++;
        }
        if (from < piece.length) next.push(piece.slice(from));
      }
      pieces = next;
    }
    return pieces;
  }

  /**
   * A fragment normalized (see the module comment). llama.cpp first tries the user-defined tokens
   * at each position; none can match here, since partition cut every one out of the fragment.
   */
  private normalize(fragment: string): string {
    let mapped = fragment;
    if (this.charsmap) {
      const bytes = Buffer.from(fragment, 'utf8');
      mapped = '';
      let plain = 0;
      for (let at = 0; at < bytes.length; ) {
        const n = this.charsmap.longestRule(bytes, at);
        if (n === 0) {
          at += utf8Length(bytes[at]);
          continue;
        }
        if (at > plain) mapped += bytes.toString('utf8', plain, at);
        mapped += this.charsmap.matched;
        at += n;
        plain = at;
      }
      if (plain === 0) mapped = fragment;
      else if (plain < bytes.length) mapped += bytes.toString('utf8', plain);
    }
    const merge = this.config.removeExtraWhitespaces;
    let out = '';
    let prepended = false;
    let inWord = false;
    for (let i = 0; i < mapped.length; i++) {
      const c = mapped[i];
      if (c !== ' ') {
        if (!inWord) {
          inWord = true;
          if ((this.config.addSpacePrefix && !prepended) || merge) {
            out += SPACE_MARK;
            prepended = true;
          }
        }
        out += c;
      } else {
        inWord = false;
        if (!merge) out += SPACE_MARK;
      }
    }
    return out;
  }

  /** A token's text as llama.cpp's token_to_piece gives it, or undefined for none. */
  private pieceOf(id: number, keepSpecial: boolean): Uint8Array | undefined {
    const t = this.config.vocab.tokenOf(id);
    if (t === undefined || !Number.isInteger(id) || id < 0 || id >= this.config.types.length) return undefined;
    const type = this.config.types[id];
    if (type === TOKEN_CONTROL || type === TOKEN_UNKNOWN) return keepSpecial ? Buffer.from(t, 'utf8') : undefined;
    if (type === TOKEN_USER_DEFINED) return Buffer.from(t, 'utf8');
    if (type === TOKEN_NORMAL) return Buffer.from(t.replaceAll(SPACE_MARK, ' '), 'utf8');
    if (type === TOKEN_BYTE) {
      const m = /^<0x([0-9A-Fa-f]{2})>$/.exec(t);
      return m ? Uint8Array.of(parseInt(m[1], 16)) : undefined;
    }
    return undefined;
  }

  /** llama_detokenize with remove_special = skipSpecialTokens and unparse_special = !skipSpecialTokens. */
  decode(ids: ArrayLike<number>, options?: DecodeOptions): string {
    const stream = this.createStreamDecoder(options);
    const skip = options?.skipSpecialTokens === true;
    const eos = this.config.specialIds.eos;
    let n = ids.length;
    if (skip && n > 0 && this.config.wrapping.suffix.length > 0 && ids[n - 1] === eos) n--;
    let text = '';
    for (let i = 0; i < n; i++) text += stream.push(ids[i]);
    return text + stream.flush();
  }

  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    const skip = options?.skipSpecialTokens === true;
    const bos = this.config.specialIds.bos;
    const addBos = this.config.wrapping.prefix.length > 0;
    let first = true;
    let stripSpace = this.config.addSpacePrefix;
    const stream = byteStreamDecoder((id) => {
      if (first && skip && addBos && id === bos) {
        first = false;
        stripSpace = false;
        return undefined;
      }
      first = false;
      let bytes = this.pieceOf(id, !skip);
      if (stripSpace) {
        stripSpace = false;
        if (bytes !== undefined && bytes[0] === 0x20) bytes = bytes.subarray(1);
      }
      return bytes;
    });
    return {
      push: (id) => stream.push(id),
      flush: () => {
        first = true;
        stripSpace = this.config.addSpacePrefix;
        return stream.flush();
      },
    };
  }

  idToToken(id: number): string | undefined {
    return Number.isInteger(id) && id >= 0 ? this.config.vocab.tokenOf(id) : undefined;
  }

  tokenToId(token: string): number | undefined {
    return this.added.get(token) ?? this.config.vocab.get(token);
  }

  isSpecial(id: number): boolean {
    return this.special.has(id);
  }
}

/** The length of the UTF-8 sequence a lead byte starts (llama.cpp's unicode_len_utf8). */
function utf8Length(lead: number): number {
  return lead < 0x80 ? 1 : lead < 0xe0 ? (lead < 0xc0 ? 1 : 2) : lead < 0xf0 ? 3 : 4;
}
