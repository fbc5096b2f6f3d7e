/**
 * The cache of packed tokenizers (packed.ts): one file per tokenizer source, in
 * `$WEIGHTMAP_CACHE/tokenizers/` (default ~/.cache/weightmap; WEIGHTMAP_CACHE=off turns it off).
 * A file is used only when it passes checkPacked and records the same sizes and modification
 * times of the source files as they have now; otherwise the tokenizer is built and the file
 * rewritten (temporary file, then rename) by the tokenizer worker. A cached file is mapped, not
 * read into fresh memory (13.7 MB for Qwen3: ~9 ms of copying and page faults at every load), and
 * the tokenizer's arrays are views of that mapping, which lives as long as they do; it is
 * checksummed and its arrays checked off the calling thread (libuv: the native CRC and
 * checkPackedTables). The rename keeps a mapped file's bytes as they were when a new one is written.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { crc32Native } from '../addon/checksums';
import { cacheDir, cacheKey } from '../base/cache-key';
import { mapFile, type MappedSource } from '../addon/mapping';
import { checkPackedOffThread, packedCrcRange, packedSource } from './packed';

/** Bumped whenever the packed layout or the tokenizer builders change what they produce. */
const CACHE_VERSION = 4;

/** The cache folder the environment names (read on the calling thread), or undefined when off. */
export function tokenizerCacheDir(): string | undefined {
  return cacheDir('tokenizers');
}

/** The files a load of `path` may read (see tokenizer-loading/load.ts), each as [name, size, mtimeMs]: the cache key and its validity. */
export function tokenizerSource(path: string): { version: number; path: string; files: [string, number, number][] } {
  const real = fs.realpathSync(path);
  const dir = fs.statSync(real).isDirectory() ? real : nodePath.dirname(real);
  const names = new Set(['tokenizer.json', 'tokenizer_config.json', 'vocab.json', 'merges.txt', 'vocab.txt', 'tokenizer.bin', 'sentencepiece.bpe.model', 'spiece.model']);
  for (const name of fs.readdirSync(dir)) if (name.endsWith('.tokenizer')) names.add(name);
  if (dir !== real) names.add(nodePath.basename(real));
  const files: [string, number, number][] = [];
  for (const name of [...names].sort()) {
    const stat = fs.statSync(nodePath.join(dir, name), { throwIfNoEntry: false });
    if (stat) files.push([name, stat.size, stat.mtimeMs]);
  }
  return { version: CACHE_VERSION, path: real, files };
}

/** `<key>.wmtok` holds a packed tokenizer; `<key>.none` says (with its source as JSON) that the source's kind does not pack. */
function cacheFile(dir: string, source: { path: string }, ext: '.wmtok' | '.none'): string {
  return nodePath.join(dir, cacheKey(`${CACHE_VERSION}\0${source.path}`) + ext);
}

/**
 * What the cache holds for `source`: the packed tokenizer (a view of its mapped file), `'none'` when the
 * source is of a kind that does not pack (so it is built on the calling thread without asking the
 * worker), or undefined (absent, stale or damaged).
 */
export async function readCachedTokenizer(dir: string, source: object): Promise<Uint8Array | 'none' | undefined> {
  const packed = await readPacked(cacheFile(dir, source as { path: string }, '.wmtok'), source);
  if (packed) return packed;
  try {
    return (await fs.promises.readFile(cacheFile(dir, source as { path: string }, '.none'), 'utf8')) === JSON.stringify(source) ? 'none' : undefined;
  } catch {
    return undefined;
  }
}

async function readPacked(file: string, source: object): Promise<Uint8Array | undefined> {
  let mapped: MappedSource;
  try {
    mapped = mapFile(file);
  } catch {
    return undefined;
  }
  try {
    const bytes = new Uint8Array(mapped.bytes.buffer, mapped.bytes.byteOffset, mapped.bytes.byteLength);
    if (JSON.stringify(packedSource(bytes)) !== JSON.stringify(source)) throw new Error('another source');
    const crc = await crc32Native(packedCrcRange(bytes), 0, { file: mapped.file });
    await checkPackedOffThread(bytes, file, crc);
    return bytes; // not closed: closing would detach the views the tokenizer keeps
  } catch {
    // A damaged or foreign file is rebuilt over, like a stale one.
    mapped.close();
    return undefined;
  }
}

/** Stores a packed tokenizer, or (undefined) that the source does not pack; a cache that cannot be written is skipped (it only saves time). */
export function writeCachedTokenizer(dir: string, source: object, packed: SharedArrayBuffer | undefined): void {
  const file = cacheFile(dir, source as { path: string }, packed ? '.wmtok' : '.none');
  const tmp = `${file}.${process.pid}.${(require('node:crypto') as typeof import('node:crypto')).randomBytes(4).toString('hex')}.tmp`;
  try {
    fs.mkdirSync(dir, { recursive: true });
    fs.writeFileSync(tmp, packed ? new Uint8Array(packed) : JSON.stringify(source));
    fs.renameSync(tmp, file);
  } catch {
    fs.rmSync(tmp, { force: true });
  }
}
