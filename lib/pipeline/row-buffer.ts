/** Rows of a fixed width appended at the end and cut back from it: the inputs a session sent a stage, kept for replay. */
import { rangeError } from '../base/errors';

export class RowBuffer<T extends Int32Array | Float32Array> {
  private data: T;
  private count = 0;

  /** @param make  a zeroed array of n elements; `maxRows` bounds the growth */
  constructor(
    private readonly make: (n: number) => T,
    readonly width: number,
    private readonly maxRows: number,
  ) {
    this.data = make(Math.min(maxRows, 64) * width);
  }

  get rows(): number {
    return this.count;
  }

  /** Keeps the first `rows` rows. */
  truncate(rows: number): void {
    this.count = Math.min(this.count, rows);
  }

  /** Appends whole rows (values.length a multiple of width, the total at most maxRows). */
  append(values: T): void {
    const rows = values.length / this.width;
    if (!Number.isInteger(rows) || this.count + rows > this.maxRows) throw rangeError(`${rows} rows do not fit`);
    if ((this.count + rows) * this.width > this.data.length) {
      let capacity = this.data.length / this.width;
      while (capacity < this.count + rows) capacity *= 2;
      const grown = this.make(Math.min(capacity, this.maxRows) * this.width);
      grown.set(this.data.subarray(0, this.count * this.width));
      this.data = grown;
    }
    this.data.set(values, this.count * this.width);
    this.count += rows;
  }

  /** Rows [from, to) as a view (valid until the next append or truncate). */
  view(from: number, to: number): T {
    return this.data.subarray(from * this.width, to * this.width) as T;
  }
}
