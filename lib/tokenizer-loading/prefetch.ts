/**
 * The tokenizer cache read of a model's own vocabulary file, started before its weights are read:
 * loadModel reads a GGUF's metadata or an ajc1 header on this thread (~20 ms for Qwen3's 151k
 * tokens) while the cached tokenizer is read, checksummed and checked off it. Which file the
 * vocabulary comes from is only known once the weights are read (loadWeightsTokenizer), so this
 * guesses it; loadTokenizer takes the read only where its cache folder and source files
 * (tokenizerSource: real path, sizes, modification times) are the ones it finds itself, and a
 * wrong guess costs a cache lookup that finds nothing.
 */
import * as fs from 'node:fs';
import { GGUF_MAGIC } from '../formats/containers/magic';
import { readCachedTokenizer, tokenizerCacheDir, tokenizerSource } from '../tokenizers/cache';

export interface TokenizerPrefetch {
  cacheDir: string;
  source: object;
  cached: Promise<Uint8Array | 'none' | undefined>;
}

/** The file loadWeightsTokenizer reads for the weights at `path`: an ajc1 `.tokenizer` beside it, else the file itself where it is a GGUF; undefined otherwise. */
function vocabularyFileOf(path: string): string | undefined {
  if (!fs.statSync(path, { throwIfNoEntry: false })?.isFile()) return undefined;
  if (fs.statSync(`${path}.tokenizer`, { throwIfNoEntry: false })?.isFile()) return `${path}.tokenizer`;
  const head = Buffer.alloc(4);
  const fd = fs.openSync(path, 'r');
  try {
    return fs.readSync(fd, head, 0, 4, 0) === 4 && head.readUInt32LE(0) === GGUF_MAGIC ? path : undefined;
  } finally {
    fs.closeSync(fd);
  }
}

/** Starts the cache read of the vocabulary of the weights at `path`; undefined where the cache is off or the weights carry no vocabulary file of their own. Never throws. */
export function prefetchWeightsTokenizer(path: string): TokenizerPrefetch | undefined {
  try {
    const cacheDir = tokenizerCacheDir();
    const file = cacheDir === undefined ? undefined : vocabularyFileOf(path);
    if (cacheDir === undefined || file === undefined) return undefined;
    const source = tokenizerSource(file);
    return { cacheDir, source, cached: readCachedTokenizer(cacheDir, source).catch(() => undefined) };
  } catch {
    return undefined; // loadModel reads the weights and reports what is wrong with the path
  }
}
