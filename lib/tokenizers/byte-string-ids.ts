/**
 * Token ids by byte string, answering "which token is bytes[start, end) of this other token?"
 * without building the substring: a polynomial hash of every prefix of a token gives the hash of
 * any of its substrings in O(1) (H(s[i, n)) = H(s[0, n)) − H(s[0, i))·P^(n−i), mod 2^32), looked up
 * in an open-addressing table over typed arrays and confirmed byte by byte against one contiguous
 * copy of all the tokens' bytes (not 151k separate arrays: a candidate then costs one cache line,
 * not a pointer chase). Rebuilding a BPE's merges from its tokens splits every token at every
 * position, which with JS substrings and a Map cost most of a second for a 151k vocabulary.
 */

import { runNow, type Steps } from '../base/steps';

const P = 0x01000193;

/** Tokens between two checkpoints of ByteStringIds.buildSteps (well under a millisecond; see steps.ts). */
const STEP = 2048;

export class ByteStringIds {
  private mask = 0;
  private slots = new Int32Array(0); // [id, hash] per slot (one cache line per probe); id -1: empty
  private bytes = new Uint8Array(0); // every token's bytes, one after another
  private starts = new Int32Array(1); // token id -> its first byte in `bytes`; [n] = the end
  private powers = new Uint32Array([1]);

  private constructor() {}

  /** The ids for which `include(id)` holds; of equal byte strings the lowest id is kept. */
  static of(tokens: readonly Uint8Array[], include: (id: number) => boolean): ByteStringIds {
    return runNow(ByteStringIds.buildSteps(tokens, include));
  }

  /** ByteStringIds.of in slices (steps.ts): a 151k vocabulary takes tens of milliseconds. */
  static *buildSteps(tokens: readonly Uint8Array[], include: (id: number) => boolean): Steps<ByteStringIds> {
    const t = new ByteStringIds();
    t.starts = new Int32Array(tokens.length + 1);
    for (let id = 0; id < tokens.length; id++) t.starts[id + 1] = t.starts[id] + tokens[id].length;
    t.bytes = new Uint8Array(t.starts[tokens.length]);
    for (let id = 0; id < tokens.length; id++) {
      if (id % STEP === STEP - 1) yield;
      t.bytes.set(tokens[id], t.starts[id]);
    }
    let cap = 16;
    while (cap < tokens.length * 2) cap *= 2;
    t.mask = cap - 1;
    t.slots = new Int32Array(cap * 2).fill(-1);
    for (let id = 0; id < tokens.length; id++) {
      if (id % STEP === STEP - 1) yield;
      if (include(id)) t.insert(id, tokens[id]);
    }
    return t;
  }

  private insert(id: number, bytes: Uint8Array): void {
    const h = this.hashOf(bytes);
    let slot = this.home(h);
    for (; this.slots[slot * 2] >= 0; slot = (slot + 1) & this.mask) {
      if (this.slots[slot * 2 + 1] === (h | 0) && this.equal(this.slots[slot * 2], bytes, 0, bytes.length)) return;
    }
    this.slots[slot * 2] = id;
    this.slots[slot * 2 + 1] = h;
  }

  /**
   * prefix[i] = H(bytes[0, i)) for i in [0, bytes.length] (`prefix` must hold length + 1 values);
   * returns H(bytes).
   */
  prefixHashes(bytes: Uint8Array, prefix: Uint32Array): number {
    let h = 0;
    prefix[0] = 0;
    for (let i = 0; i < bytes.length; i++) {
      h = (Math.imul(h, P) + bytes[i]) >>> 0;
      prefix[i + 1] = h;
    }
    return h;
  }

  /** H(bytes[i, n)) from the prefix hashes of bytes (n = bytes.length). */
  suffixHash(prefix: Uint32Array, i: number, n: number): number {
    return (prefix[n] - Math.imul(prefix[i], this.power(n - i))) >>> 0;
  }

  /** The id of the token equal to bytes[start, end), whose hash is `h`, or -1. */
  find(bytes: Uint8Array, start: number, end: number, h: number): number {
    const slots = this.slots;
    for (let slot = this.home(h); ; slot = (slot + 1) & this.mask) {
      const id = slots[slot * 2];
      if (id < 0) return -1;
      if (slots[slot * 2 + 1] === (h | 0) && this.equal(id, bytes, start, end)) return id;
    }
  }

  private hashOf(bytes: Uint8Array): number {
    let h = 0;
    for (let i = 0; i < bytes.length; i++) h = (Math.imul(h, P) + bytes[i]) >>> 0;
    return h;
  }

  private home(h: number): number {
    return (Math.imul(h ^ (h >>> 16), 0x45d9f3b) >>> 0) & this.mask;
  }

  private equal(id: number, bytes: Uint8Array, start: number, end: number): boolean {
    const from = this.starts[id];
    if (this.starts[id + 1] - from !== end - start) return false;
    const all = this.bytes;
    for (let i = 0; i < end - start; i++) if (all[from + i] !== bytes[start + i]) return false;
    return true;
  }

  /** P^k mod 2^32. */
  private power(k: number): number {
    if (k >= this.powers.length) {
      const grown = new Uint32Array(Math.max(k + 1, this.powers.length * 2));
      grown.set(this.powers);
      for (let i = this.powers.length; i < grown.length; i++) grown[i] = Math.imul(grown[i - 1], P) >>> 0;
      this.powers = grown;
    }
    return this.powers[k];
  }
}
