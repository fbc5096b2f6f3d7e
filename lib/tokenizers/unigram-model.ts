/**
 * The Unigram model of Hugging Face's tokenizers (models/unigram/model.rs, itself sentencepiece's
 * EncodeOptimized): the best-scoring segmentation of a word into vocabulary pieces by Viterbi,
 * with HF's exact rules: a candidate replaces the best path ending at a position only when its
 * score is strictly greater (so, at equal scores, the path whose last piece starts first wins); a
 * character that starts no piece of its own length gets the unknown piece, scored min score - 10;
 * consecutive unknown pieces fuse into one, which becomes its `<0xNN>` byte pieces under byte
 * fallback (all of them present) or the unknown id. A piece listed twice is found as its last id
 * (HF's token -> id map), with that id's score.
 *
 * The pieces are found with a trie over UTF-16 code units (a piece is valid UTF-16, so its
 * UTF-16 prefixes are HF's UTF-8 ones) kept as flat arrays, so that a packed tokenizer (packed.ts)
 * uses it as it lies.
 */
import { UnsupportedError } from '../base/errors';
import type { BpeVocab } from './bpe-vocab';
import type { Steps } from '../base/steps';

/** The trie: node n's edges are [first[n], first[n+1]), sorted by label; term[n] is the id of the piece ending there or -1. Node 0 is the root. */
export interface UnigramTrieArrays {
  trieFirst: Int32Array;
  trieTerm: Int32Array;
  edgeLabel: Uint16Array;
  edgeNext: Int32Array;
}

export const K_UNK_PENALTY = 10;

/** Pieces inserted between two checkpoints. */
const SLICE = 4096;

/**
 * Builds the trie of `vocab`'s pieces: each string once, with the id the vocabulary gives it; or,
 * with `inTrie`, the pieces of the ids it accepts, a string listed twice with its last such id
 * (llama.cpp's UGM token matcher).
 */
export function* buildUnigramTrieSteps(vocab: BpeVocab, inTrie?: (id: number) => boolean): Steps<UnigramTrieArrays> {
  let keys: [string, number][] = [];
  if (inTrie) {
    const last = new Map<string, number>();
    for (let id = 0; id < vocab.size; id++) {
      const piece = vocab.tokenOf(id);
      if (piece !== undefined && piece.length > 0 && inTrie(id)) last.set(piece, id);
      if (id % SLICE === SLICE - 1) yield;
    }
    keys = [...last];
  } else {
    const seen = new Set<string>();
    for (const [piece] of vocab.entries()) {
      if (piece.length === 0 || seen.has(piece)) continue;
      seen.add(piece);
      keys.push([piece, vocab.get(piece)!]);
      if (keys.length % SLICE === 0) yield;
    }
  }
  keys.sort((a, b) => (a[0] < b[0] ? -1 : a[0] > b[0] ? 1 : 0));
  yield;
  // Breadth first: node n covers keys[lo[n], hi[n]) sharing their first depth[n] units, and its
  // edges are reserved when it is taken from the queue, in node order.
  const lo: number[] = [0];
  const hi: number[] = [keys.length];
  const depth: number[] = [0];
  const term: number[] = [];
  const first: number[] = [];
  const labels: number[] = [];
  const next: number[] = [];
  for (let n = 0; n < lo.length; n++) {
    let a = lo[n];
    const b = hi[n];
    const d = depth[n];
    term.push(a < b && keys[a][0].length === d ? keys[a++][1] : -1);
    first.push(labels.length);
    while (a < b) {
      const c = keys[a][0].charCodeAt(d);
      let e = a + 1;
      while (e < b && keys[e][0].charCodeAt(d) === c) e++;
      labels.push(c);
      next.push(lo.length);
      lo.push(a);
      hi.push(e);
      depth.push(d + 1);
      a = e;
    }
    if (n % SLICE === SLICE - 1) yield;
  }
  first.push(labels.length);
  return { trieFirst: Int32Array.from(first), trieTerm: Int32Array.from(term), edgeLabel: Uint16Array.from(labels), edgeNext: Int32Array.from(next) };
}

export interface UnigramModelSpec {
  vocab: BpeVocab;
  /** Score by id. */
  scores: Float64Array;
  trie: UnigramTrieArrays;
  unkId: number | undefined;
  byteFallback: boolean;
  /** The unknown piece's score (default: the lowest score - 10). */
  unkScore?: number;
  /** A run of unknown pieces is the unknown id outright (llama.cpp's UGM), not looked up as one piece first (HF). */
  unkRunIsUnk?: boolean;
}

const CACHE_LIMIT = 100_000;
const CACHE_MAX_WORD = 256;

export class UnigramModel {
  private readonly unkScore: number;
  private readonly byteIds = new Int32Array(256).fill(-1);
  private readonly cache = new Map<string, Int32Array>();
  private score = new Float64Array(256);
  private from = new Int32Array(256);
  private node = new Int32Array(256);

  constructor(private readonly spec: UnigramModelSpec) {
    let min = Infinity;
    for (let i = 0; i < spec.scores.length; i++) if (spec.scores[i] < min) min = spec.scores[i];
    this.unkScore = spec.unkScore ?? min - K_UNK_PENALTY;
    for (let b = 0; b < 256; b++) {
      const id = spec.vocab.get(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
      if (id !== undefined) this.byteIds[b] = id;
    }
  }

  /** Appends the ids of one pre-tokenized word. */
  encodeWord(word: string, out: number[]): void {
    if (word.length === 0) return;
    const cached = this.cache.get(word);
    if (cached !== undefined) {
      for (let i = 0; i < cached.length; i++) out.push(cached[i]);
      return;
    }
    const ids = this.viterbi(word);
    for (let i = 0; i < ids.length; i++) out.push(ids[i]);
    if (word.length <= CACHE_MAX_WORD) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(word, Int32Array.from(ids));
    }
  }

  private viterbi(word: string): number[] {
    const size = word.length;
    if (this.score.length < size + 1) {
      this.score = new Float64Array(size * 2 + 1);
      this.from = new Int32Array(size * 2 + 1);
      this.node = new Int32Array(size * 2 + 1);
    }
    const { score, from, node } = this;
    const { trieFirst, trieTerm, edgeLabel, edgeNext } = this.spec.trie;
    const scores = this.spec.scores;
    const unkId = this.spec.unkId;
    score[0] = 0;
    from.fill(-1, 0, size + 1);
    for (let start = 0; start < size; ) {
      const base = score[start];
      const hiUnit = word.charCodeAt(start);
      const charLen = hiUnit >= 0xd800 && hiUnit <= 0xdbff && start + 1 < size && (word.charCodeAt(start + 1) & 0xfc00) === 0xdc00 ? 2 : 1;
      let single = false;
      let n = 0;
      for (let at = start; at < size; ) {
        const c = word.charCodeAt(at);
        let a = trieFirst[n];
        let b = trieFirst[n + 1] - 1;
        let found = -1;
        while (a <= b) {
          const mid = (a + b) >>> 1;
          const l = edgeLabel[mid];
          if (l === c) {
            found = mid;
            break;
          }
          if (l < c) a = mid + 1;
          else b = mid - 1;
        }
        if (found < 0) break;
        n = edgeNext[found];
        at++;
        const id = trieTerm[n];
        if (id < 0) continue;
        const candidate = scores[id] + base;
        if (from[at] === -1 || candidate > score[at]) {
          score[at] = candidate;
          from[at] = start;
          node[at] = id;
        }
        if (at - start === charLen) single = true;
      }
      if (!single) {
        if (unkId === undefined) throw new UnsupportedError(`the Unigram vocabulary has no unk_id, and ${JSON.stringify(word.slice(start, start + charLen))} starts no piece`);
        const at = start + charLen;
        const candidate = this.unkScore + base;
        if (from[at] === -1 || candidate > score[at]) {
          score[at] = candidate;
          from[at] = start;
          node[at] = unkId;
        }
      }
      start += charLen;
    }
    // Backtrack: pieces by their text, a run of unknown pieces as one text.
    const pieces: { text: string; id: number }[] = [];
    let unkEnd = -1;
    for (let end = size; end > 0; end = from[end]) {
      const id = node[end];
      if (id === unkId) {
        if (unkEnd < 0) unkEnd = end;
        continue;
      }
      if (unkEnd >= 0) pieces.push({ text: word.slice(end, unkEnd), id: -1 });
      unkEnd = -1;
      pieces.push({ text: '', id });
    }
    if (unkEnd >= 0) pieces.push({ text: word.slice(0, unkEnd), id: -1 });
    const ids: number[] = [];
    for (let i = pieces.length - 1; i >= 0; i--) {
      const p = pieces[i];
      if (p.id >= 0) {
        ids.push(p.id);
        continue;
      }
      const known = this.spec.unkRunIsUnk ? undefined : this.spec.vocab.get(p.text);
      if (known !== undefined) {
        ids.push(known);
        continue;
      }
      if (this.spec.byteFallback) {
        const bytes = Buffer.from(p.text, 'utf8');
        let all = true;
        for (const byte of bytes) if (this.byteIds[byte] < 0) all = false;
        if (all) {
          for (const byte of bytes) ids.push(this.byteIds[byte]);
          continue;
        }
      }
      ids.push(unkId!);
    }
    return ids;
  }
}
