/**
 * The TLLM tokenizer (FORMATS.md §1.6, the original tiny_llama's BPETokenizer): vocab.txt +
 * merges.txt over raw bytes. Text is ASCII-lowercased, tab/newline/CR become spaces, every
 * whitespace byte becomes its own " " word, and each word is merged from single bytes by
 * repeatedly taking the lowest-rank pair and merging all its occurrences. Pieces missing from the
 * vocabulary become <unk>. Strings are handled as bytes (latin1 JS strings) like the original's
 * std::string.
 */
import { byteStreamDecoder } from './byte-stream';
import type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer } from './types';
import { concatBytes, decodeUtf8Lossy } from './utf8';
import { finishEncoding, NO_WRAPPING } from './post-process';

const SPECIALS = ['<unk>', '<pad>', '<bos>', '<eos>'];

/** C `isspace` in the C locale. */
function isCSpace(b: number): boolean {
  return b === 0x20 || (b >= 0x09 && b <= 0x0d);
}

/** Splits a line into whitespace-separated fields, as `istream >> std::string` would. */
function fields(line: string): string[] {
  return line.split(/[ \t\n\v\f\r]+/).filter((f) => f.length > 0);
}

export class TllmTokenizer implements Tokenizer {
  readonly kind = 'tllm' as const;
  readonly specialIds: Readonly<SpecialTokenIds>;
  readonly truncation = undefined;
  /** Byte strings (latin1) by id; holes are "". */
  private readonly idToTok: string[];
  private readonly tokToId = new Map<string, number>();
  private readonly ranks = new Map<string, number>();
  private readonly cache = new Map<string, number[]>();

  /** `vocab` and `merges` are the files' bytes. */
  constructor(vocab: Uint8Array, merges: Uint8Array) {
    this.idToTok = SPECIALS.slice();
    SPECIALS.forEach((t, id) => this.tokToId.set(t, id));
    const addToken = (t: string) => {
      if (this.tokToId.has(t)) return;
      this.tokToId.set(t, this.idToTok.length);
      this.idToTok.push(t);
    };
    for (const line of Buffer.from(vocab).toString('latin1').split('\n')) {
      if (line.length === 0) continue;
      const f = fields(line);
      const token = f[0] ?? '';
      const id = f.length >= 2 && /^[+-]?\d+/.test(f[1]) ? parseInt(f[1], 10) : undefined;
      if (id !== undefined && id >= 0) {
        while (this.idToTok.length <= id) this.idToTok.push('');
        this.idToTok[id] = token;
        this.tokToId.set(token, id);
      } else {
        addToken(token);
      }
    }
    const lines = Buffer.from(merges).toString('latin1').split('\n');
    let rank = 0;
    lines.forEach((line, i) => {
      if (i === 0 && line.includes('#version')) return;
      if (line.length === 0) return;
      const f = fields(line);
      if (f.length < 2) return;
      this.ranks.set(`${f[0]} ${f[1]}`, rank++);
    });
    this.specialIds = {
      unk: this.tokToId.get('<unk>'),
      pad: this.tokToId.get('<pad>'),
      bos: this.tokToId.get('<bos>'),
      eos: this.tokToId.get('<eos>'),
    };
  }

  get vocabSize(): number {
    return this.idToTok.length;
  }

  private bpe(word: string): string[] {
    let chars = Array.from(word, (c) => c); // one latin1 char per byte
    if (chars.length === 1) return chars;
    for (;;) {
      let best = Infinity;
      let at = -1;
      for (let i = 0; i + 1 < chars.length; i++) {
        const r = this.ranks.get(`${chars[i]} ${chars[i + 1]}`);
        if (r !== undefined && r < best) {
          best = r;
          at = i;
        }
      }
      if (at < 0) return chars;
      const a = chars[at];
      const b = chars[at + 1];
      const merged: string[] = [];
      for (let i = 0; i < chars.length; i++) {
        if (i + 1 < chars.length && chars[i] === a && chars[i + 1] === b) {
          merged.push(a + b);
          i++;
        } else merged.push(chars[i]);
      }
      chars = merged;
    }
  }

  encode(text: string, options?: EncodeOptions): number[] {
    const bytes = Buffer.from(text, 'utf8');
    const ids: number[] = [];
    const unk = this.specialIds.unk!;
    let word = '';
    const flush = () => {
      if (word.length === 0) return;
      let cached = this.cache.get(word);
      if (!cached) {
        cached = this.bpe(word).map((p) => this.tokToId.get(p) ?? unk);
        this.cache.set(word, cached);
      }
      ids.push(...cached);
      word = '';
    };
    for (const raw of bytes) {
      let b = raw >= 0x41 && raw <= 0x5a ? raw + 32 : raw;
      if (b === 0x09 || b === 0x0a || b === 0x0d) b = 0x20;
      if (isCSpace(b)) {
        flush();
        ids.push(this.tokToId.get(' ') ?? unk);
      } else {
        word += String.fromCharCode(b);
      }
    }
    flush();
    return finishEncoding(ids, NO_WRAPPING, options, undefined);
  }

  /** An id outside the vocabulary decodes as <unk>, as in the original. */
  private bytesOf(id: number): Uint8Array {
    const t = Number.isInteger(id) && id >= 0 && id < this.idToTok.length ? this.idToTok[id] : this.idToTok[this.specialIds.unk!];
    return Buffer.from(t, 'latin1');
  }

  decode(ids: ArrayLike<number>, options?: DecodeOptions): string {
    const skip = options?.skipSpecialTokens === true;
    const chunks: Uint8Array[] = [];
    for (let i = 0; i < ids.length; i++) if (!(skip && this.isSpecial(ids[i]))) chunks.push(this.bytesOf(ids[i]));
    return decodeUtf8Lossy(concatBytes(chunks));
  }

  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    const skip = options?.skipSpecialTokens === true;
    return byteStreamDecoder((id) => (skip && this.isSpecial(id) ? undefined : this.bytesOf(id)));
  }

  idToToken(id: number): string | undefined {
    if (!Number.isInteger(id) || id < 0 || id >= this.idToTok.length) return undefined;
    return decodeUtf8Lossy(Buffer.from(this.idToTok[id], 'latin1'));
  }

  tokenToId(token: string): number | undefined {
    return this.tokToId.get(Buffer.from(token, 'utf8').toString('latin1'));
  }

  isSpecial(id: number): boolean {
    return id === this.specialIds.unk || id === this.specialIds.pad || id === this.specialIds.bos || id === this.specialIds.eos;
  }
}
