/**
 * The exact surface of the native addon (native/napi/*.cc). lib/native.ts loads it and every
 * facade module is type-checked against these declarations.
 */

export type MadviseAdvice = 'normal' | 'sequential' | 'random' | 'willneed' | 'dontneed';

/** A read-only memory mapping of one file (native/napi/mapped_file.cc). */
export declare class MappedFile {
  /** Maps `path`; throws an Error with a POSIX `code` (ENOENT, EACCES, EISDIR, ...). */
  constructor(path: string);
  /** Size of the file in bytes (0 once closed). */
  readonly byteLength: number;
  readonly path: string | null;
  readonly closed: boolean;
  /** A zero-copy external ArrayBuffer over the whole mapping (the same one on every call). */
  buffer(): ArrayBuffer;
  /** madvise() over [offset, offset+length); a hint only. */
  advise(offset: number, length: number, advice: MadviseAdvice): void;
  /** Bytes of [offset, offset+length) resident in RAM (mincore), or -1 where unknown. */
  residentBytes(offset?: number, length?: number): number;
  /** Detaches the ArrayBuffer (views become empty) and drops this handle's reference to the pages. */
  close(): void;
}

export interface NativeBinding {
  MappedFile: typeof MappedFile;
}
