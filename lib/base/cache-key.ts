/**
 * weightmap's caches (packed tokenizers, converted tensors): their folder, `$WEIGHTMAP_CACHE`
 * (default ~/.cache/weightmap; `off` or `0` turns the caches off), and their file names, a short
 * hash of what a file was made from.
 */
import * as os from 'node:os';
import * as nodePath from 'node:path';

/** The folder `sub` of the cache the environment names (read on the calling thread), or undefined when off. */
export function cacheDir(sub: string): string | undefined {
  const setting = process.env.WEIGHTMAP_CACHE;
  if (setting === 'off' || setting === '0') return undefined;
  return nodePath.join(setting || nodePath.join(os.homedir(), '.cache', 'weightmap'), sub);
}

/**
 * 32 hex digits of `text`: 53-bit multiplicative hashes (cyrb53) under three seeds. Not
 * node:crypto's sha256, whose module costs a fresh process ~2 ms of require; a collision costs
 * only a rebuild, since a file is used only where it records the same source.
 */
export function cacheKey(text: string): string {
  const hash = (seed: number) => {
    let h1 = 0xdeadbeef ^ seed;
    let h2 = 0x41c6ce57 ^ seed;
    for (let i = 0; i < text.length; i++) {
      const c = text.charCodeAt(i);
      h1 = Math.imul(h1 ^ c, 2654435761);
      h2 = Math.imul(h2 ^ c, 1597334677);
    }
    h1 = Math.imul(h1 ^ (h1 >>> 16), 2246822507) ^ Math.imul(h2 ^ (h2 >>> 13), 3266489909);
    h2 = Math.imul(h2 ^ (h2 >>> 16), 2246822507) ^ Math.imul(h1 ^ (h1 >>> 13), 3266489909);
    return (4294967296 * (2097151 & h2) + (h1 >>> 0)).toString(16).padStart(14, '0');
  };
  return (hash(1) + hash(2) + hash(3)).slice(0, 32);
}
