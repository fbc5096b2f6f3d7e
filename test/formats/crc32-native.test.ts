import * as crypto from 'node:crypto';
import * as zlib from 'node:zlib';
import * as fs from 'node:fs';
import { crc32Combine, crc32Native, type NativeCrc32Options } from '../../lib/addon/checksums';
import { mapFile } from '../../lib/addon/mapping';
import { native } from '../../lib/addon/native';
import { watchEventLoop } from '../helpers/event-loop';
import { tempDir } from '../helpers/fixtures';

// The reference: zlib's own CRC-32 (Node >= 20.15), an implementation independent of the addon's.
const zlibCrc32 = (zlib as unknown as { crc32: (data: Uint8Array, value?: number) => number }).crc32;

const IMPLS: NativeCrc32Options['impl'][] = ['table', 'pclmul', 'auto'];
// Around the fold's thresholds (16-byte blocks, 128-byte steps, 256-byte minimum) and beyond the
// 1 MiB piece size of the threaded split.
const SIZES = [101, 127, 128, 129, 143, 255, 256, 257, 271, 383, 384, 385, 1000, 4095, 4096, 65537, (1 << 20) + 13, (3 << 20) + 5];

describe('crc32Native', () => {
  const pool = crypto.randomBytes((3 << 20) + 64);

  test('reports whether the CPU path exists', () => {
    expect(typeof native().crc32HasPclmul()).toBe('boolean');
    if (process.arch === 'x64') console.log(`crc32: PCLMULQDQ path ${native().crc32HasPclmul() ? 'available' : 'absent (table only)'}`);
  });

  test('the check value of "123456789"', async () => {
    for (const impl of IMPLS) expect(await crc32Native(Buffer.from('123456789'), 0, { impl })).toBe(0xcbf43926);
  });

  test.each(IMPLS)('%s: every length 0..100 at every alignment 0..15 equals zlib.crc32', async (impl) => {
    for (let length = 0; length <= 100; length++) {
      for (let start = 0; start < 16; start++) {
        const view = pool.subarray(start, start + length);
        expect(await crc32Native(view, 0, { impl })).toBe(zlibCrc32(view));
      }
    }
  });

  test.each(IMPLS)('%s: sizes up to 3 MiB at every alignment 0..15 equal zlib.crc32', async (impl) => {
    for (const length of SIZES) {
      for (let start = 0; start < 16; start++) {
        const view = pool.subarray(start, start + length);
        const got = await crc32Native(view, 0, { impl, threads: 1 });
        if (got !== zlibCrc32(view)) throw new Error(`${impl}: length ${length} at ${start}: ${got} vs ${zlibCrc32(view)}`);
      }
    }
  });

  test.each(IMPLS)('%s: `previous` continues a CRC like zlib.crc32(data, previous)', async (impl) => {
    for (const length of [0, 1, 7, 64, 255, 256, 300, 5000, (1 << 20) + 3]) {
      for (const previous of [0, 1, 0xffffffff, 0x80000000, crypto.randomInt(2 ** 32)]) {
        const view = pool.subarray(3, 3 + length);
        expect(await crc32Native(view, previous, { impl, threads: 1 })).toBe(zlibCrc32(view, previous));
      }
    }
    // Split anywhere: crc(A||B) = crc(B, crc(A)).
    const whole = pool.subarray(0, 70001);
    for (const cut of [0, 1, 15, 16, 17, 4096, 70000, 70001]) {
      const a = await crc32Native(whole.subarray(0, cut), 0, { impl });
      expect(await crc32Native(whole.subarray(cut), a, { impl })).toBe(zlibCrc32(whole));
    }
  });

  test.each(IMPLS)('%s: split over 2 and 3 threads (pieces joined by the native combine) equals zlib.crc32', async (impl) => {
    const big = pool.subarray(5, 5 + (3 << 20) + 7);
    const expected = zlibCrc32(big, 0x12345678);
    for (const threads of [1, 2, 3]) expect(await crc32Native(big, 0x12345678, { impl, threads })).toBe(expected);
  });

  test('crc32Combine joins two native CRCs into zlib.crc32 of the concatenation', async () => {
    for (const [la, lb] of [[0, 0], [0, 10], [10, 0], [1, 1], [300, 1], [1000, 100000], [(1 << 20) + 1, 999]]) {
      const a = pool.subarray(0, la);
      const b = pool.subarray(la, la + lb);
      const joined = crc32Combine(await crc32Native(a), await crc32Native(b), lb);
      expect(joined).toBe(zlibCrc32(pool.subarray(0, la + lb)));
    }
  });

  test('WEIGHTMAP_CRC=table is read at call time and gives the same CRC', async () => {
    const view = pool.subarray(1, 1 + 100003);
    const saved = process.env.WEIGHTMAP_CRC;
    process.env.WEIGHTMAP_CRC = 'table';
    try {
      expect(await crc32Native(view, 7, { impl: 'pclmul' })).toBe(zlibCrc32(view, 7));
    } finally {
      if (saved === undefined) delete process.env.WEIGHTMAP_CRC;
      else process.env.WEIGHTMAP_CRC = saved;
    }
  });

  test('the event loop turns while a large buffer is checksummed', async () => {
    const big = Buffer.alloc(96 << 20, 0xa5);
    const watch = watchEventLoop();
    // The table walk (~2 GB/s) on one thread takes tens of milliseconds, in the native worker: the
    // loop turns meanwhile. (How long it waits is a benchmark's figure, not this test's.)
    const crc = await crc32Native(big, 0, { impl: 'table', threads: 1 });
    const { ticks } = watch.stop();
    expect(crc).toBe(zlibCrc32(big));
    expect(ticks).toBeGreaterThan(0);
  });

  test('a mapped file named as options.file stays mapped while its CRC runs, even when closed meanwhile', async () => {
    const tmp = tempDir('weightmap-crc-');
    try {
      const file = `${tmp.dir}/data.bin`;
      const bytes = crypto.randomBytes(24 << 20);
      fs.writeFileSync(file, bytes);
      const src = mapFile(file);
      const running = crc32Native(src.bytes, 0, { impl: 'table', threads: 1, file: src.file });
      src.close(); // detaches the buffer; the worker's own hold keeps the pages
      expect(await running).toBe(zlibCrc32(bytes));
    } finally {
      tmp.cleanup();
    }
  });

  test('options.file must hold the view', () => {
    const tmp = tempDir('weightmap-crc-');
    try {
      const file = `${tmp.dir}/small.bin`;
      fs.writeFileSync(file, Buffer.alloc(100, 7));
      const src = mapFile(file);
      expect(() => crc32Native(Buffer.alloc(10), 0, { file: src.file })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
      src.close();
      expect(() => crc32Native(Buffer.alloc(10), 0, { file: src.file })).toThrow(expect.objectContaining({ code: 'ERR_WEIGHTMAP_CLOSED' }));
    } finally {
      tmp.cleanup();
    }
  });

  test('bad arguments get typed errors', () => {
    const crc32 = native().crc32 as unknown as (...args: unknown[]) => Promise<number>;
    expect(() => crc32(new Uint16Array(4))).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => crc32('abc')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => crc32(new Uint8Array(4), -1)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => crc32(new Uint8Array(4), 2 ** 32)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => crc32(new Uint8Array(4), 1.5)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => crc32(new Uint8Array(4), 0, { impl: 'fast' })).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => crc32(new Uint8Array(4), 0, { threads: 0 })).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
  });
});
