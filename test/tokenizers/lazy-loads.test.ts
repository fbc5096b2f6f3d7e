/**
 * Loads that used to hold the JS thread: a GGUF carrying a Qwen3-sized vocabulary (its strings
 * are decoded on first use, and loadModel hands the file to the tokenizer worker), the
 * conversion that writes one (in slices), and a WordPiece tokenizer.json (built and packed in the worker).
 * The results are checked here; how long the loop waits is measured by scripts/bench/load.js.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { convert, loadModel, loadTokenizer, loadTokenizerSync, readWeights, closeWeights } from '../../lib';
import { fixture, tempDir } from '../helpers/fixtures';

const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');
const MINILM = fixture('tokenizers', 'minilm', 'tokenizer.json');
const TEXTS = ['Hello, world!', 'naïve café 東京 🙂', '<|im_start|>user\nhi<|im_end|>', 'function add(a, b) {\n  return a + b;\n}'];

let work: ReturnType<typeof tempDir>;
let gguf: string;
const savedCache = process.env.WEIGHTMAP_CACHE;

beforeAll(async () => {
  work = tempDir('weightmap-evloop-');
  process.env.WEIGHTMAP_CACHE = nodePath.join(work.dir, 'cache');
  gguf = nodePath.join(work.dir, 'qwen3-tiny.gguf');
  await convert(AJC1, gguf, { to: 'gguf' });
}, 120_000);

afterAll(() => {
  work.cleanup();
  if (savedCache === undefined) delete process.env.WEIGHTMAP_CACHE;
  else process.env.WEIGHTMAP_CACHE = savedCache;
});

test('a GGUF vocabulary is decoded on first use, to the tokens of its source', async () => {
  const weights = await readWeights(gguf);
  try {
    const descriptor = Object.getOwnPropertyDescriptor(weights.metadata, 'tokenizer.ggml.tokens')!;
    expect(typeof descriptor.get).toBe('function'); // not decoded yet
    const tokens = weights.metadata['tokenizer.ggml.tokens'] as string[];
    expect(tokens).toHaveLength(151936);
    expect(weights.tokenizer?.kind === 'gguf' && weights.tokenizer.tokens).toBe(tokens); // decoded once
    expect(weights.tokenizer?.kind === 'gguf' && weights.tokenizer.merges?.length).toBeGreaterThan(150_000);
  } finally {
    closeWeights(weights);
  }
  // Decoded after the mapping is closed, the strings still encode as the source's tokenizer does.
  const source = loadTokenizerSync(`${AJC1}.tokenizer`);
  const converted = loadTokenizerSync(gguf);
  for (const text of TEXTS) expect(converted.encode(text)).toEqual(source.encode(text));
}, 60_000);

test('loadModel of a GGUF with a 151k vocabulary gets its tokenizer from the worker', async () => {
  const model = await loadModel(gguf, { threads: 1 });
  try {
    expect(model.tokenizer.encode('Hello, world!')).toEqual(loadTokenizerSync(`${AJC1}.tokenizer`).encode('Hello, world!'));
  } finally {
    model.dispose();
  }
  // The worker packed what it built into the cache folder: the vocabulary was not built on this thread.
  expect(fs.readdirSync(nodePath.join(work.dir, 'cache', 'tokenizers')).filter((f) => !f.endsWith('.none')).length).toBeGreaterThan(0);
}, 60_000);

test('a WordPiece tokenizer.json loaded asynchronously is the tokenizer loadTokenizerSync builds', async () => {
  for (let pass = 0; pass < 2; pass++) {
    const tokenizer = await loadTokenizer(MINILM);
    for (const text of TEXTS) expect(tokenizer.encode(text)).toEqual(loadTokenizerSync(MINILM).encode(text));
  }
}, 60_000);
