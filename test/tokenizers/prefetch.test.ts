/**
 * loadModel starts the cache read of a GGUF's (or an ajc1 `.tokenizer`'s) vocabulary before it
 * reads the weights (prefetchWeightsTokenizer); loadWeightsTokenizer takes that read only where the
 * source files are still the ones it was started for. Whether a load was served from the read is
 * seen in the cache folder: a load that finds no packed tokenizer has the worker build and store one.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { loadTokenizer, loadTokenizerSync, loadWeightsTokenizer } from '../../lib/tokenizer-loading';
import { prefetchWeightsTokenizer } from '../../lib/tokenizer-loading/prefetch';
import type { TokenizerData } from '../../lib/addon/weights';
import { fixture, tempDir } from '../helpers/fixtures';

const GGUF = fixture('gguf-quants', 'qwen2-bias', 'qwen2-bias.Q4_1.gguf');
const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');

let tmp: ReturnType<typeof tempDir>;
const savedCache = process.env.WEIGHTMAP_CACHE;
beforeEach(() => {
  tmp = tempDir('weightmap-prefetch-');
  process.env.WEIGHTMAP_CACHE = nodePath.join(tmp.dir, 'cache');
});
afterEach(() => {
  tmp.cleanup();
  if (savedCache === undefined) delete process.env.WEIGHTMAP_CACHE;
  else process.env.WEIGHTMAP_CACHE = savedCache;
});

const cacheDir = () => nodePath.join(tmp.dir, 'cache', 'tokenizers');
const cacheFiles = () => (fs.existsSync(cacheDir()) ? fs.readdirSync(cacheDir()).filter((f) => f.endsWith('.wmtok')) : []);
const clearCache = () => fs.rmSync(cacheDir(), { recursive: true, force: true });

function copyInto(name: string, ...files: string[]): string {
  for (const f of files) fs.copyFileSync(f, nodePath.join(tmp.dir, nodePath.basename(f)));
  return nodePath.join(tmp.dir, name);
}

const TEXTS = ['Hello, world!', 'naïve café 東京 🙂', '  two  spaces\tand a tab\n', ''];

test('a GGUF: the prefetched read serves the load while the file is unchanged, and not once it changed', async () => {
  const path = copyInto(nodePath.basename(GGUF), GGUF);
  const reference = loadTokenizerSync(path);
  await loadTokenizer(path); // fills the cache
  const weights = { format: 'gguf' as const, path };
  const data = { kind: 'gguf' } as TokenizerData;

  const prefetch = prefetchWeightsTokenizer(path);
  expect(await prefetch?.cached).toBeInstanceOf(Uint8Array);
  clearCache();
  const served = await loadWeightsTokenizer(weights, data, prefetch);
  expect(cacheFiles()).toHaveLength(0); // not rebuilt: the prefetched buffer was used
  for (const text of TEXTS) expect(served.encode(text)).toEqual(reference.encode(text));

  await loadTokenizer(path);
  const stale = prefetchWeightsTokenizer(path);
  await stale?.cached;
  clearCache();
  const later = new Date(fs.statSync(path).mtimeMs + 5000);
  fs.utimesSync(path, later, later);
  const rebuilt = await loadWeightsTokenizer(weights, data, stale);
  expect(cacheFiles()).toHaveLength(1); // the worker built it again for the changed source
  for (const text of TEXTS) expect(rebuilt.encode(text)).toEqual(reference.encode(text));
});

test("an ajc1 checkpoint: the read is of the `.tokenizer` beside it; a damaged cache file is not served", async () => {
  const path = copyInto('model.bin', AJC1, `${AJC1}.tokenizer`);
  await loadTokenizer(`${path}.tokenizer`);
  const prefetch = prefetchWeightsTokenizer(path);
  expect(await prefetch?.cached).toBeInstanceOf(Uint8Array);

  const [file] = cacheFiles().map((f) => nodePath.join(cacheDir(), f));
  const bytes = fs.readFileSync(file);
  bytes[bytes.length >> 1] ^= 0x10;
  fs.writeFileSync(file, bytes);
  expect(await prefetchWeightsTokenizer(path)?.cached).toBeUndefined();
});

test('no read for weights without a vocabulary file of their own, a missing path, or with the cache off', () => {
  const path = copyInto('model.bin', AJC1); // no .tokenizer beside it, and not a GGUF
  expect(prefetchWeightsTokenizer(path)).toBeUndefined();
  expect(prefetchWeightsTokenizer(nodePath.join(tmp.dir, 'absent.gguf'))).toBeUndefined();
  process.env.WEIGHTMAP_CACHE = 'off';
  expect(prefetchWeightsTokenizer(copyInto(nodePath.basename(GGUF), GGUF))).toBeUndefined();
});
