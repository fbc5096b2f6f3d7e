/**
 * SentencePiece's `precompiled_charsmap` (tokenizer.json's `Precompiled` normalizer): a u32 byte
 * size, a darts-clone double-array trie of that many bytes (u32 units, little-endian) mapping
 * UTF-8 byte strings to offsets in the NUL-separated normalized strings that follow it.
 *
 * Applied as Hugging Face's spm_precompiled applies it (not as sentencepiece does): the text is cut
 * into extended grapheme clusters; one under 6 UTF-8 bytes is replaced whole by the rule of its
 * *shortest* prefix that has one; otherwise each character by its own rule. sentencepiece instead
 * takes the longest rule at each byte position, so the two differ where a grapheme's first
 * character has a rule of its own (`Ａ` + U+0301 becomes `A` in HF, `Á` in sentencepiece).
 *
 * The blob is input like any other: every unit a lookup can reach is checked against the array's
 * length when the blob is parsed (one pass over the labelled units, checkTrieSteps), and every
 * value against the normalized strings' length and UTF-8 boundaries, so that a malformed blob is
 * a WeightFormatError there, never an out-of-range read later.
 */
import { WeightFormatError } from '../base/errors';
import type { Steps } from '../base/steps';
import { runNow } from '../base/steps';

/** Blobs larger than this are refused (nmt_nfkc's is ~240 KB). */
export const MAX_CHARSMAP_BYTES = 32 << 20;

const strictUtf8 = new TextDecoder('utf-8', { fatal: true });

function offsetOf(u: number): number {
  return (u >>> 10) * ((u & (1 << 9)) !== 0 ? 256 : 1);
}
const hasLeaf = (u: number) => ((u >>> 8) & 1) === 1;
const valueOf = (u: number) => u & 0x7fffffff;
/** The unit's label as darts-clone compares it: a leaf unit (bit 31) matches no byte. */
const labelOf = (u: number) => u & 0x800000ff;

export class PrecompiledCharsmap {
  private readonly memo = new Map<string, string | null>();
  private readonly byValue = new Map<number, string>();
  /** ASCII code -> its one-character rule (null: none). */
  private readonly ascii: (string | null)[] = [];
  /** Made on first use (the first Segmenter of a process loads ICU's break rules). */
  private segmenter: Intl.Segmenter | undefined;

  private constructor(
    private readonly units: Uint32Array,
    private readonly normalized: Uint8Array,
  ) {
    for (let c = 0; c < 128; c++) this.ascii.push(this.rule(String.fromCharCode(c)));
  }

  /** Parses and checks a blob (see the module comment); `where` names its source in errors. */
  static parse(blob: Uint8Array, where: string): PrecompiledCharsmap {
    return runNow(PrecompiledCharsmap.parseSteps(blob, where));
  }

  static *parseSteps(blob: Uint8Array, where: string): Steps<PrecompiledCharsmap> {
    const bad = (what: string, details: { offset?: number; expected?: unknown; found?: unknown } = {}): never => {
      throw new WeightFormatError('BAD_HEADER', `precompiled_charsmap: ${what}`, { path: where, ...details });
    };
    if (blob.length > MAX_CHARSMAP_BYTES) bad('too large', { expected: `<= ${MAX_CHARSMAP_BYTES} bytes`, found: blob.length });
    if (blob.length < 4) bad('shorter than its size field', { offset: 0, expected: '>= 4 bytes', found: blob.length });
    const view = new DataView(blob.buffer, blob.byteOffset, blob.byteLength);
    const trieBytes = view.getUint32(0, true);
    if (trieBytes % 4 !== 0 || trieBytes < 4 || 4 + trieBytes > blob.length) {
      bad('the trie size does not fit the blob', { offset: 0, expected: `a multiple of 4 in [4, ${blob.length - 4}]`, found: trieBytes });
    }
    const n = trieBytes / 4;
    const units = new Uint32Array(n);
    for (let i = 0; i < n; i++) units[i] = view.getUint32(4 + 4 * i, true);
    const normalized = blob.slice(4 + trieBytes);
    try {
      strictUtf8.decode(normalized);
    } catch {
      bad('the normalized strings are not valid UTF-8', { offset: 4 + trieBytes });
    }
    yield;
    yield* checkTrieSteps(units, normalized, bad);
    return new PrecompiledCharsmap(units, normalized);
  }

  /** The normalized bytes' offset of the shortest rule that is a prefix of `key` (bytes up to a NUL), or -1. */
  private firstRule(key: Uint8Array): number {
    const units = this.units;
    let p = offsetOf(units[0]);
    for (let i = 0; i < key.length; i++) {
      const c = key[i];
      if (c === 0) break;
      const q = p ^ c;
      if (q >= units.length) return -1; // unreachable for a checked blob
      const u = units[q];
      if (labelOf(u) !== c) return -1;
      p = q ^ offsetOf(u);
      if (hasLeaf(u)) return p < units.length ? valueOf(units[p]) : -1;
    }
    return -1;
  }

  /**
   * sentencepiece's (and llama.cpp's UGM) lookup: the byte length of the *longest* rule that is a
   * prefix of `bytes[at..]` (stopping at a NUL byte), or 0; its replacement is then in `matched`.
   */
  longestRule(bytes: Uint8Array, at: number): number {
    const units = this.units;
    let p = offsetOf(units[0]);
    let length = 0;
    let value = -1;
    for (let i = at; i < bytes.length; i++) {
      const c = bytes[i];
      if (c === 0) break;
      const q = p ^ c;
      if (q >= units.length) break; // unreachable for a checked blob
      const u = units[q];
      if (labelOf(u) !== c) break;
      p = q ^ offsetOf(u);
      if (hasLeaf(u) && p < units.length) {
        length = i - at + 1;
        value = valueOf(units[p]);
      }
    }
    if (length > 0) this.matched = this.replacementAt(value);
    return length;
  }

  /** The replacement of the last rule longestRule found. */
  matched = '';

  private replacementAt(v: number): string {
    let out = this.byValue.get(v);
    if (out === undefined) {
      let end = v;
      while (end < this.normalized.length && this.normalized[end] !== 0) end++;
      out = Buffer.from(this.normalized.buffer, this.normalized.byteOffset + v, end - v).toString('utf8');
      this.byValue.set(v, out);
    }
    return out;
  }

  /** The replacement of `chunk` (a grapheme or a character), or null when no rule applies. */
  rule(chunk: string): string | null {
    const memo = this.memo.get(chunk);
    if (memo !== undefined) return memo;
    const v = this.firstRule(Buffer.from(chunk, 'utf8'));
    const out = v >= 0 ? this.replacementAt(v) : null;
    if (this.memo.size >= 65536) this.memo.clear();
    this.memo.set(chunk, out);
    return out;
  }

  /**
   * The text normalized (see the module comment), in pieces cut before each space: a grapheme
   * never spans the point before an ASCII space unless a Prepend character stands before it.
   */
  normalize(text: string): string {
    let out = '';
    let start = 0;
    for (let at = text.indexOf(' ', 1); at >= 0; at = text.indexOf(' ', at + 1)) {
      if (PREPEND.test(text[at - 1]) || (at >= 2 && PREPEND.test(text.slice(at - 2, at)))) continue;
      out += this.normalizePiece(text.slice(start, at));
      start = at;
    }
    return out + this.normalizePiece(start === 0 ? text : text.slice(start));
  }

  private normalizePiece(text: string): string {
    let out = '';
    if (!MAY_JOIN.test(text)) {
      // Every code point is a grapheme of its own.
      for (let i = 0; i < text.length; i++) {
        const c = text.charCodeAt(i);
        if (c < 0x80) {
          out += this.ascii[c] ?? text[i];
          continue;
        }
        const ch = c >= 0xd800 && c <= 0xdbff && (text.charCodeAt(i + 1) & 0xfc00) === 0xdc00 ? text.slice(i, ++i + 1) : text[i];
        out += this.rule(ch) ?? ch;
      }
      return out;
    }
    this.segmenter ??= new Intl.Segmenter(undefined, { granularity: 'grapheme' });
    for (const { segment } of this.segmenter.segment(text)) {
      if (segment.length > 1 && Buffer.byteLength(segment, 'utf8') < 6) {
        const whole = this.rule(segment);
        if (whole !== null) {
          out += whole;
          continue;
        }
      }
      for (const ch of segment) out += this.rule(ch) ?? ch;
    }
    return out;
  }
}

/**
 * A superset of the characters that can join a grapheme cluster to the character before or after
 * them (Grapheme_Cluster_Break Extend, ZWJ, SpacingMark, Prepend, Regional_Indicator, CR, Hangul
 * jamo): a text without any is one grapheme per code point, and needs no segmenter.
 */
const PREPEND = /^[\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u0d4e\u{110bd}\u{110cd}\u{111c2}\u{111c3}\u{1193f}\u{11941}\u{11a3a}\u{11a84}-\u{11a89}\u{11d46}\u{11f02}\u{113d1}]$/u;

const MAY_JOIN =
  /[\p{M}\r\u200c\u200d\u0600-\u0605\u06dd\u070f\u0890\u0891\u08e2\u0d4e\u0e33\u0eb3\u1100-\u11ff\ua960-\ua97f\ud7b0-\ud7ff\uff9e\uff9f\u{1f1e6}-\u{1f1ff}\u{1f3fb}-\u{1f3ff}\u{e0000}-\u{e0fff}\u{110bd}\u{110cd}\u{111c2}\u{111c3}\u{1193f}\u{11941}\u{11a3a}\u{11a84}-\u{11a89}\u{11d46}\u{11f02}\u{113d1}]/u;

/** Units checked between two checkpoints. */
const CHECK_SLICE = 1 << 16;

/**
 * Every state a lookup can reach is the root's or the one a labelled unit (a byte 1..255, leaf
 * bit clear) leads to; so checking every labelled unit, reachable or not, covers them all in one
 * pass: the state it leads to needs its whole block of 256 children slots inside the array (a
 * lookup reads `state ^ byte` for any byte), and its value (when it has one) an offset within the
 * normalized strings on a UTF-8 boundary.
 */
function* checkTrieSteps(units: Uint32Array, normalized: Uint8Array, bad: (what: string, details?: { found?: unknown }) => never): Steps<void> {
  if ((offsetOf(units[0]) | 0xff) >= units.length) bad('the trie root\'s children lie outside the array', { found: offsetOf(units[0]) });
  // A plain function per slice: V8 compiles its loop, never one in a generator.
  for (let from = 0; from < units.length; from += CHECK_SLICE) {
    checkUnits(units, normalized, from, Math.min(units.length, from + CHECK_SLICE), bad);
    yield;
  }
}

function checkUnits(units: Uint32Array, normalized: Uint8Array, from: number, to: number, bad: (what: string, details?: { found?: unknown }) => never): void {
  const n = units.length;
  for (let q = from; q < to; q++) {
    const u = units[q];
    if (u >>> 31 !== 0 || (u & 0xff) === 0) continue;
    const next = q ^ offsetOf(u);
    if ((next | 0xff) >= n) bad('a trie state lies outside the array', { found: next });
    if (((u >>> 8) & 1) === 1) {
      const v = units[next] & 0x7fffffff;
      if (v > normalized.length || (v < normalized.length && (normalized[v] & 0xc0) === 0x80)) bad('a rule points outside the normalized strings or into a character', { found: v });
    }
  }
}

/** Parsed charsmaps by their base64 text (a tokenizer built twice, or unpacked, parses once). */
const parsed = new Map<string, PrecompiledCharsmap>();

/** The charsmap of a tokenizer.json `Precompiled` entry (base64), parsed and checked. */
export function precompiledFromBase64(base64: unknown, where: string): PrecompiledCharsmap {
  if (typeof base64 !== 'string') {
    throw new WeightFormatError('BAD_HEADER', 'precompiled_charsmap is not a base64 string', { path: where, found: base64 === null ? 'null' : typeof base64 });
  }
  const hit = parsed.get(base64);
  if (hit) return hit;
  if (!/^[A-Za-z0-9+/]*={0,2}$/.test(base64) || base64.length % 4 !== 0) {
    throw new WeightFormatError('BAD_HEADER', 'precompiled_charsmap is not valid base64', { path: where });
  }
  const charsmap = PrecompiledCharsmap.parse(Buffer.from(base64, 'base64'), where);
  if (parsed.size >= 8) parsed.delete(parsed.keys().next().value!);
  parsed.set(base64, charsmap);
  return charsmap;
}
