/**
 * A file mapped read-only into memory, seen from JS as a zero-copy Buffer. Readers parse and
 * validate through `bytes`; engines receive `file` and keep the pages mapped for as long as
 * they run, whatever happens to this handle.
 */
import type { MappedFile } from './binding';
import { native } from './native';

/** A file mapped read-only into memory (`mapFile()`); readers take tensor views into it. Unmapped by `close()`. */
export class MappedSource {
  readonly path: string;
  readonly file: MappedFile;
  /** The whole file, zero-copy. Empty after close(). */
  readonly bytes: Buffer;

  constructor(filePath: string) {
    const { MappedFile } = native();
    this.path = filePath;
    this.file = new MappedFile(filePath);
    this.bytes = this.file.byteLength === 0 ? Buffer.alloc(0) : Buffer.from(this.file.buffer());
  }

  get byteLength(): number {
    return this.bytes.length;
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
