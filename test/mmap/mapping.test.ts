import * as fs from 'node:fs';
import * as path from 'node:path';
import { mapFile } from '../../lib/addon/mapping';
import { tempDir } from '../helpers/fixtures';

describe('mapFile', () => {
  const tmp = tempDir();
  afterAll(() => tmp.cleanup());

  test('exposes the file bytes without copying', () => {
    const file = path.join(tmp.dir, 'bytes.bin');
    const data = Buffer.from(Array.from({ length: 10000 }, (_, i) => (i * 7) & 0xff));
    fs.writeFileSync(file, data);
    const m = mapFile(file);
    expect(m.byteLength).toBe(10000);
    expect(m.bytes.equals(data)).toBe(true);
    // Zero copy: the Buffer is a view of the mapping's one external ArrayBuffer.
    expect(m.bytes.buffer).toBe(m.file.buffer());
    expect(m.bytes.buffer.byteLength).toBe(10000);
    m.close();
  });

  test('close() detaches the views: reads afterwards see no bytes, never unmapped memory', () => {
    const file = path.join(tmp.dir, 'close.bin');
    fs.writeFileSync(file, Buffer.alloc(8192, 1));
    const m = mapFile(file);
    const view = new Uint8Array(m.file.buffer(), 100, 10);
    expect(view[0]).toBe(1);
    m.close();
    expect(m.closed).toBe(true);
    expect(view.length).toBe(0);
    expect(m.bytes.length).toBe(0);
    expect(() => m.file.buffer()).toThrow(expect.objectContaining({ code: 'ERR_WEIGHTMAP_CLOSED' }));
    m.close(); // idempotent
  });

  test('pages are touched only when read (a sparse 64 MiB file maps with almost nothing resident)', () => {
    const file = path.join(tmp.dir, 'sparse.bin');
    const fd = fs.openSync(file, 'w');
    fs.ftruncateSync(fd, 64 << 20);
    fs.closeSync(fd);
    const m = mapFile(file);
    const before = m.residentBytes();
    if (before >= 0) {
      expect(before).toBeLessThan(1 << 20);
      let sum = 0;
      for (let i = 0; i < 16; i++) sum += m.bytes[i * 4096];
      expect(sum).toBe(0);
      const after = m.residentBytes(0, 16 * 4096);
      expect(after).toBe(16 * 4096);
    }
    m.close();
  });

  test('empty files map to an empty buffer', () => {
    const file = path.join(tmp.dir, 'empty.bin');
    fs.writeFileSync(file, '');
    const m = mapFile(file);
    expect(m.byteLength).toBe(0);
    m.close();
  });

  test('I/O failures are Node-style errors with a code', () => {
    expect(() => mapFile(path.join(tmp.dir, 'missing.bin'))).toThrow(expect.objectContaining({ code: 'ENOENT' }));
    expect(() => mapFile(tmp.dir)).toThrow(expect.objectContaining({ code: 'EISDIR' }));
  });

  test('advise validates its range', () => {
    const file = path.join(tmp.dir, 'advise.bin');
    fs.writeFileSync(file, Buffer.alloc(4096));
    const m = mapFile(file);
    expect(() => m.file.advise(0, 4096, 'willneed')).not.toThrow();
    expect(() => m.file.advise(4000, 200, 'random')).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    // (jest runs tests in another realm, so native TypeErrors are matched by code, not instanceof)
    expect(() => m.file.advise(0, 10, 'bogus' as never)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    m.close();
  });
});
