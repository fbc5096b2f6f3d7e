/**
 * A packed tokenizer served from the cache is a view of the cache file mapped into memory, not a
 * copy of it (lib/tokenizers/cache.ts): seen in /proc/self/smaps (Linux) and in the tokenizer's
 * recipe. A cache file cut short or emptied is rebuilt over, never read past its end.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { loadTokenizer, loadTokenizerSync } from '../../lib/tokenizer-loading';
import { recipeOf } from '../../lib/tokenizers/recipes';
import { fixture, tempDir } from '../helpers/fixtures';

const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin.tokenizer');
const TEXTS = ['Hello, world!', 'naïve café 東京 🙂', '  two  spaces\tand a tab\n', ''];

let cache: ReturnType<typeof tempDir>;
const savedCache = process.env.WEIGHTMAP_CACHE;
beforeEach(() => {
  cache = tempDir('weightmap-tokmap-');
  process.env.WEIGHTMAP_CACHE = cache.dir;
});
afterEach(() => {
  cache.cleanup();
  if (savedCache === undefined) delete process.env.WEIGHTMAP_CACHE;
  else process.env.WEIGHTMAP_CACHE = savedCache;
});

function cacheFile(): string {
  const dir = nodePath.join(cache.dir, 'tokenizers');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.wmtok'));
  expect(files).toHaveLength(1);
  return nodePath.join(dir, files[0]);
}

/** Whether this process maps `file` (a line of /proc/self/smaps naming it). */
function isMapped(file: string): boolean {
  const real = fs.realpathSync(file);
  return fs.readFileSync('/proc/self/smaps', 'utf8').split('\n').some((line) => /^[0-9a-f]+-[0-9a-f]+ /.test(line) && line.trimEnd().endsWith(` ${real}`));
}

const linux = process.platform === 'linux' ? test : test.skip;

linux('a warm load maps the cache file and the tokenizer reads its arrays from that mapping', async () => {
  const reference = loadTokenizerSync(AJC1);
  await loadTokenizer(AJC1); // built in the worker, stored
  const file = cacheFile();
  expect(isMapped(file)).toBe(false);
  const warm = await loadTokenizer(AJC1);
  expect(isMapped(file)).toBe(true);
  const packed = (recipeOf(warm)?.recipe as { packed: Uint8Array }).packed;
  expect(packed).toBeInstanceOf(Uint8Array);
  expect(packed.byteLength).toBe(fs.statSync(file).size);
  // The mapping outlives the file's name: a rebuild renames a new file over it.
  fs.rmSync(file);
  for (const text of TEXTS) expect(warm.encode(text)).toEqual(reference.encode(text));
});

test.each([
  ['cut short', (bytes: Buffer) => bytes.subarray(0, bytes.length >> 1)],
  ['emptied', () => Buffer.alloc(0)],
  ['cut inside its header', (bytes: Buffer) => bytes.subarray(0, 10)],
])('a cache file %s is rebuilt over', async (_name, damage) => {
  const reference = loadTokenizerSync(AJC1);
  await loadTokenizer(AJC1);
  const file = cacheFile();
  const whole = fs.readFileSync(file);
  fs.writeFileSync(file, damage(whole));
  const loaded = await loadTokenizer(AJC1);
  for (const text of TEXTS) expect(loaded.encode(text)).toEqual(reference.encode(text));
  expect(fs.readFileSync(file).equals(whole)).toBe(true); // rewritten whole
});
