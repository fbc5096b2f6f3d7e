/**
 * Pair table of a BPE model: (left id, right id) -> (rank, merged id), open addressing over
 * typed arrays (a JS Map keyed by pairs is several times slower on the encode hot path).
 */
export interface MergeTableArrays {
  /** [left, right] per slot (2 × capacity, a power of two); left = -1 marks an empty slot. */
  keys: Int32Array;
  /** Rank per slot. */
  ranks: Int32Array;
  /** Merged id per slot. */
  merged: Int32Array;
}

export class MergeTable {
  private mask: number;
  /** [left, right] per slot; left = -1 marks an empty slot. */
  private keys: Int32Array;
  private ranks: Int32Array;
  private merged: Int32Array;
  private count = 0;

  constructor(expected: number) {
    let cap = 16;
    while (cap < expected * 2) cap *= 2;
    this.mask = cap - 1;
    this.keys = new Int32Array(cap * 2).fill(-1);
    this.ranks = new Int32Array(cap);
    this.merged = new Int32Array(cap);
  }

  /** A table over arrays `arrays()` returned (a packed tokenizer's; packed.ts checks them first). */
  static fromArrays(arrays: MergeTableArrays, count: number): MergeTable {
    const table = new MergeTable(0);
    table.mask = arrays.ranks.length - 1;
    table.keys = arrays.keys;
    table.ranks = arrays.ranks;
    table.merged = arrays.merged;
    table.count = count;
    return table;
  }

  /** The slots, in a table of the smallest capacity that holds them. */
  arrays(): MergeTableArrays {
    const compact = new MergeTable(this.count);
    for (let i = 0; i <= this.mask; i++) {
      if (this.keys[i * 2] !== -1) compact.add(this.keys[i * 2], this.keys[i * 2 + 1], this.ranks[i], this.merged[i]);
    }
    return { keys: compact.keys, ranks: compact.ranks, merged: compact.merged };
  }

  get size(): number {
    return this.count;
  }

  private slot(a: number, b: number): number {
    let h = (Math.imul(a, 0x9e3779b1) ^ Math.imul(b + 0x7f4a7c15, 0x85ebca77)) >>> 0;
    h = (h ^ (h >>> 15)) & this.mask;
    const keys = this.keys;
    for (;;) {
      const k = keys[h * 2];
      if (k === -1 || (k === a && keys[h * 2 + 1] === b)) return h;
      h = (h + 1) & this.mask;
    }
  }

  /** Adds a pair; an existing pair keeps its first (lowest) rank. */
  add(a: number, b: number, rank: number, merged: number): void {
    if ((this.count + 1) * 2 > this.mask + 1) this.grow();
    const h = this.slot(a, b);
    if (this.keys[h * 2] !== -1) return;
    this.keys[h * 2] = a;
    this.keys[h * 2 + 1] = b;
    this.ranks[h] = rank;
    this.merged[h] = merged;
    this.count++;
  }

  /** Rank of the pair, or -1. */
  rank(a: number, b: number): number {
    const h = this.slot(a, b);
    return this.keys[h * 2] === -1 ? -1 : this.ranks[h];
  }

  /** Merged id of a pair known to exist. */
  mergedId(a: number, b: number): number {
    return this.merged[this.slot(a, b)];
  }

  /** Every pair as [left, right, rank, merged id], in slot order. */
  *entries(): Generator<[number, number, number, number]> {
    for (let h = 0; h <= this.mask; h++) {
      if (this.keys[h * 2] !== -1) yield [this.keys[h * 2], this.keys[h * 2 + 1], this.ranks[h], this.merged[h]];
    }
  }

  private grow(): void {
    const oldKeys = this.keys;
    const oldRanks = this.ranks;
    const oldMerged = this.merged;
    const cap = (this.mask + 1) * 2;
    this.mask = cap - 1;
    this.keys = new Int32Array(cap * 2).fill(-1);
    this.ranks = new Int32Array(cap);
    this.merged = new Int32Array(cap);
    this.count = 0;
    for (let i = 0; i < oldRanks.length; i++) {
      if (oldKeys[i * 2] !== -1) this.add(oldKeys[i * 2], oldKeys[i * 2 + 1], oldRanks[i], oldMerged[i]);
    }
  }
}
