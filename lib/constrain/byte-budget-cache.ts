/** A map that keeps its entries while their bytes fit a budget, dropping the least recently used first. */
export class ByteBudgetCache<K, V> {
  private readonly entries = new Map<K, { value: V; bytes: number }>();
  private total = 0;

  constructor(
    private readonly budget: number,
    private readonly sizeOf: (value: V) => number,
  ) {}

  /** The bytes held. */
  get bytes(): number {
    return this.total;
  }

  get(key: K): V | undefined {
    const entry = this.entries.get(key);
    if (entry === undefined) return undefined;
    this.entries.delete(key);
    this.entries.set(key, entry); // now the most recently used
    return entry.value;
  }

  /** Keeps `value` (unless it alone is past the budget), dropping the least recently used entries until the rest fit. */
  set(key: K, value: V): void {
    this.delete(key);
    const bytes = this.sizeOf(value);
    if (bytes > this.budget) return;
    for (const [oldest, entry] of this.entries) {
      if (this.total + bytes <= this.budget) break;
      this.entries.delete(oldest);
      this.total -= entry.bytes;
    }
    this.entries.set(key, { value, bytes });
    this.total += bytes;
  }

  delete(key: K): void {
    const entry = this.entries.get(key);
    if (entry === undefined) return;
    this.entries.delete(key);
    this.total -= entry.bytes;
  }
}
