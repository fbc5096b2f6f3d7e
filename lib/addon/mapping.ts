/**
 * A file mapped read-only into memory, seen from JS as zero-copy Buffers. Readers parse and
 * validate headers through `bytes` (the file's first 4 GiB: one JS buffer holds no more under
 * Node 20) and read tensor data through `range()`, which reaches anywhere in the file; engines
 * receive `file` and keep the pages mapped for as long as they run, whatever happens to this handle.
 */
import type { MappedFile } from './binding';
import { native } from './native';
import { rangeError } from '../base/errors';

/** The most bytes one zero-copy buffer of a mapping holds (Node 20's ArrayBuffer limit). */
export const MAX_BUFFER_BYTES = 2 ** 32;

/** A file mapped read-only into memory (`mapFile()`); readers take tensor views into it. Unmapped by `close()`. */
export class MappedSource {
  readonly path: string;
  readonly file: MappedFile;
  /** The file's head, zero-copy: all of it up to MAX_BUFFER_BYTES. Empty after close(). */
  readonly bytes: Buffer;

  constructor(filePath: string) {
    const { MappedFile } = native();
    this.path = filePath;
    this.file = new MappedFile(filePath);
    this.bytes = this.file.byteLength === 0 ? Buffer.alloc(0) : Buffer.from(this.file.buffer());
  }

  /** The file's size (0 after close()). */
  get byteLength(): number {
    return this.file.byteLength;
  }

  /** [offset, offset+length) of the file, zero-copy, wherever it lies; RangeError outside the file or past MAX_BUFFER_BYTES long. */
  range(offset: number, length: number): Buffer {
    if (!(Number.isSafeInteger(offset) && Number.isSafeInteger(length) && offset >= 0 && length >= 0 && offset + length <= this.byteLength)) {
      throw rangeError(`bytes ${offset}+${length} lie outside ${this.path} (${this.byteLength} bytes)`);
    }
    if (offset + length <= this.bytes.length) return this.bytes.subarray(offset, offset + length);
    if (length > MAX_BUFFER_BYTES) throw rangeError(`a ${length}-byte range of ${this.path} is longer than one buffer holds (${MAX_BUFFER_BYTES})`);
    return Buffer.from(this.file.window(offset, length));
  }

  get closed(): boolean {
    return this.file.closed;
  }

  /** Bytes of the range resident in RAM (-1 where the OS cannot tell). */
  residentBytes(offset = 0, length = this.byteLength - offset): number {
    return this.file.residentBytes(offset, length);
  }

  private readonly closing: (() => void)[] = [];

  /** Runs `copy` once, just before close() unmaps `bytes`: for a reader that keeps views of the file it may need after that. */
  beforeClose(copy: () => void): void {
    if (this.closed) throw new Error('beforeClose on a closed MappedSource');
    this.closing.push(copy);
  }

  /** Unmaps the file (views into it must no longer be read). Calling it again does nothing. */
  close(): void {
    for (const copy of this.closing.splice(0)) copy();
    this.file.close();
  }

  /** dispose() for `using`: the file is released at the end of the block. */
  [Symbol.dispose](): void {
    this.close();
  }

  /** dispose() for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.close();
  }
}

/** Maps `filePath`. Throws Node-style errors (code ENOENT, EACCES, EISDIR) for I/O failures. */
export function mapFile(filePath: string): MappedSource {
  return new MappedSource(filePath);
}
