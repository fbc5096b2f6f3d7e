/** Paths into ../shared/fixtures (read at run time, never copied into the repo). */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const FIXTURES = path.resolve(__dirname, '..', '..', '..', 'shared', 'fixtures');

export function fixture(...parts: string[]): string {
  return path.join(FIXTURES, ...parts);
}

export function readJson<T = any>(...parts: string[]): T {
  return JSON.parse(fs.readFileSync(fixture(...parts), 'utf8')) as T;
}

/** A .f32 fixture file as a Float32Array (copied, so alignment never matters). */
export function readF32(...parts: string[]): Float32Array {
  const buf = fs.readFileSync(fixture(...parts));
  return new Float32Array(buf.buffer.slice(buf.byteOffset, buf.byteOffset + buf.byteLength));
}

/** A fresh temporary folder, removed by the returned cleanup. */
export function tempDir(prefix = 'weightmap-test-'): { dir: string; cleanup: () => void } {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  return { dir, cleanup: () => fs.rmSync(dir, { recursive: true, force: true }) };
}
