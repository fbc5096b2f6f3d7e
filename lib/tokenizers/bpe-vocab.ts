/**
 * The vocabulary of a byte-level BPE model, two ways: over a Map (as the builders make it) or over
 * flat arrays (a packed tokenizer, packed.ts), which need no per-token work to come into use.
 */

export interface BpeVocab {
  /** One past the largest id. */
  readonly size: number;
  get(token: string): number | undefined;
  /** The token string of `id` (the last entry naming it), or undefined. */
  tokenOf(id: number): string | undefined;
  /** (token, id) in the order the vocabulary was built. */
  entries(): Iterable<[string, number]>;
}

export class MapVocab implements BpeVocab {
  readonly size: number;
  private readonly tokens: (string | undefined)[];
  /** Built from a list by id (fromTokens): its entries are every id's, a repeated string's included. */
  private readonly byIdList: boolean;

  constructor(private readonly map: ReadonlyMap<string, number>, byId?: readonly (string | undefined)[]) {
    this.byIdList = byId !== undefined;
    this.tokens = byId ? byId.slice() : [];
    if (byId) {
      this.size = byId.length;
      return;
    }
    let size = 0;
    for (const [token, id] of map) {
      this.tokens[id] = token;
      if (id + 1 > size) size = id + 1;
    }
    this.size = size;
  }

  /**
   * Token strings by id (a vocab.txt, llama.cpp's token list): a string that repeats maps to its
   * last id, as in HF's WordPiece::read_file, and every id keeps its own string.
   */
  static fromTokens(tokens: readonly (string | undefined)[]): MapVocab {
    const map = new Map<string, number>();
    tokens.forEach((t, id) => t !== undefined && map.set(t, id));
    return new MapVocab(map, tokens);
  }

  get(token: string): number | undefined {
    return this.map.get(token);
  }

  tokenOf(id: number): string | undefined {
    return this.tokens[id];
  }

  *entries(): Iterable<[string, number]> {
    if (!this.byIdList) return yield* this.map.entries();
    for (let id = 0; id < this.tokens.length; id++) if (this.tokens[id] !== undefined) yield [this.tokens[id]!, id];
  }
}

/**
 * Entries as arrays: entry e is the UTF-8 bytes[offsets[e] .. offsets[e+1]) with id ids[e];
 * byId[id] is the entry that names id last (-1: none); index is an open-addressing table
 * (capacity a power of two) of entry numbers by FNV-1a of the bytes, -1 marking empty slots.
 */
export interface PackedVocabArrays {
  bytes: Uint8Array;
  offsets: Uint32Array;
  ids: Int32Array;
  byId: Int32Array;
  index: Int32Array;
}

const utf8 = new TextDecoder('utf-8', { ignoreBOM: true });
/** A lone surrogate: such strings have no UTF-8 of their own, so they never pack. */
const LONE_SURROGATE = /\p{Cs}/u;
const encoder = new TextEncoder();

export function fnv1a(bytes: Uint8Array, start: number, end: number): number {
  let h = 0x811c9dc5;
  for (let i = start; i < end; i++) h = Math.imul(h ^ bytes[i], 0x01000193);
  return h >>> 0;
}

function sameBytes(bytes: Uint8Array, offsets: Uint32Array, a: number, b: number): boolean {
  const n = offsets[a + 1] - offsets[a];
  if (offsets[b + 1] - offsets[b] !== n) return false;
  for (let i = 0; i < n; i++) if (bytes[offsets[a] + i] !== bytes[offsets[b] + i]) return false;
  return true;
}

export class PackedVocab implements BpeVocab {
  readonly size: number;
  private scratch = new Uint8Array(256);

  constructor(readonly arrays: PackedVocabArrays) {
    this.size = arrays.byId.length;
  }

  /** Packs (token, id) entries; undefined when a token is no well-formed UTF-16. */
  static pack(entries: Iterable<[string, number]>, size: number): PackedVocab | undefined {
    const list = [...entries];
    const offsets = new Uint32Array(list.length + 1);
    for (let e = 0; e < list.length; e++) {
      if (LONE_SURROGATE.test(list[e][0])) return undefined;
      offsets[e + 1] = offsets[e] + Buffer.byteLength(list[e][0], 'utf8');
    }
    const bytes = new Uint8Array(offsets[list.length]);
    const view = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
    const ids = new Int32Array(list.length);
    const byId = new Int32Array(size).fill(-1);
    let cap = 16;
    while (cap < list.length * 2) cap *= 2;
    const index = new Int32Array(cap).fill(-1);
    for (let e = 0; e < list.length; e++) {
      view.write(list[e][0], offsets[e], 'utf8');
      ids[e] = list[e][1];
      byId[list[e][1]] = e;
      let h = fnv1a(bytes, offsets[e], offsets[e + 1]) & (cap - 1);
      while (index[h] !== -1 && !sameBytes(bytes, offsets, index[h], e)) h = (h + 1) & (cap - 1);
      // A string that repeats is found as its last entry (a Map's last set); the earlier entry keeps its id's string.
      index[h] = e;
    }
    return new PackedVocab({ bytes, offsets, ids, byId, index });
  }

  get(token: string): number | undefined {
    if (LONE_SURROGATE.test(token)) return undefined;
    if (this.scratch.length < token.length * 3) this.scratch = new Uint8Array(token.length * 3);
    const n = encoder.encodeInto(token, this.scratch).written;
    const { bytes, offsets, ids, index } = this.arrays;
    const mask = index.length - 1;
    for (let h = fnv1a(this.scratch, 0, n) & mask; ; h = (h + 1) & mask) {
      const e = index[h];
      if (e === -1) return undefined;
      const start = offsets[e];
      if (offsets[e + 1] - start !== n) continue;
      let i = 0;
      while (i < n && bytes[start + i] === this.scratch[i]) i++;
      if (i === n) return ids[e];
    }
  }

  tokenOf(id: number): string | undefined {
    const e = id >= 0 && id < this.size ? this.arrays.byId[id] : -1;
    return e < 0 ? undefined : this.entry(e);
  }

  *entries(): Iterable<[string, number]> {
    for (let e = 0; e < this.arrays.ids.length; e++) yield [this.entry(e), this.arrays.ids[e]];
  }

  private entry(e: number): string {
    return utf8.decode(this.arrays.bytes.subarray(this.arrays.offsets[e], this.arrays.offsets[e + 1]));
  }
}
