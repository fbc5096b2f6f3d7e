/**
 * Sequential, buffered, asynchronous file output for writers: weights stream from the source
 * mapping to disk in bounded chunks, so converting a multi-GB model never holds it in memory
 * and never blocks the event loop on a write.
 */
import * as fs from 'node:fs/promises';
import { crc32 } from '../../addon/checksums';

const CHUNK = 4 << 20;

export class FileSink {
  private buffer = Buffer.allocUnsafe(CHUNK);
  private used = 0;
  /** Bytes written so far (= offset of the next byte). */
  position = 0;
  /** Running CRC-32 of everything written, when started with trackCrc(). */
  private crcState: number | undefined;

  private constructor(private readonly handle: fs.FileHandle, readonly path: string) {}

  static async create(path: string): Promise<FileSink> {
    return new FileSink(await fs.open(path, 'w'), path);
  }

  /** Starts (or restarts) a CRC-32 over the bytes written from now on. */
  trackCrc(): void {
    this.crcState = 0;
  }

  /** The CRC-32 of the bytes written since trackCrc(). */
  crc(): number {
    if (this.crcState === undefined) throw new Error('trackCrc() was not called');
    return this.crcState;
  }

  async write(data: Uint8Array): Promise<void> {
    if (this.crcState !== undefined) this.crcState = crc32(data, this.crcState);
    this.position += data.length;
    let offset = 0;
    while (offset < data.length) {
      const n = Math.min(CHUNK - this.used, data.length - offset);
      this.buffer.set(data.subarray(offset, offset + n), this.used);
      this.used += n;
      offset += n;
      if (this.used === CHUNK) await this.flush();
    }
  }

  async zeros(n: number): Promise<void> {
    if (n > 0) await this.write(new Uint8Array(n));
  }

  /** Zero padding up to the next multiple of `alignment`. */
  async align(alignment: number): Promise<void> {
    await this.zeros((alignment - (this.position % alignment)) % alignment);
  }

  async u8(v: number): Promise<void> {
    await this.write(Uint8Array.of(v));
  }
  async u16(v: number): Promise<void> {
    const b = Buffer.allocUnsafe(2);
    b.writeUInt16LE(v);
    await this.write(b);
  }
  async u32(v: number): Promise<void> {
    const b = Buffer.allocUnsafe(4);
    b.writeUInt32LE(v >>> 0);
    await this.write(b);
  }
  async i32(v: number): Promise<void> {
    const b = Buffer.allocUnsafe(4);
    b.writeInt32LE(v);
    await this.write(b);
  }
  async f32(v: number): Promise<void> {
    const b = Buffer.allocUnsafe(4);
    b.writeFloatLE(v);
    await this.write(b);
  }
  async u64(v: number | bigint): Promise<void> {
    const b = Buffer.allocUnsafe(8);
    b.writeBigUInt64LE(BigInt(v));
    await this.write(b);
  }

  private async flush(): Promise<void> {
    let off = 0;
    while (off < this.used) {
      const { bytesWritten } = await this.handle.write(this.buffer, off, this.used - off);
      off += bytesWritten;
    }
    this.used = 0;
  }

  /** Overwrites bytes already written (header fields known only at the end). Flushes first. */
  async patch(position: number, data: Uint8Array): Promise<void> {
    await this.flush();
    await this.handle.write(data, 0, data.length, position);
  }

  /** Flushes, fsyncs and closes: the bytes are on disk before the file is renamed into place. */
  async close(): Promise<void> {
    await this.flush();
    await this.handle.sync();
    await this.handle.close();
  }

  /** Closes and deletes the partial file (after a failed write). */
  async abandon(): Promise<void> {
    await this.handle.close().catch(() => undefined);
    await fs.rm(this.path, { force: true });
  }
}
