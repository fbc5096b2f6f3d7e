/**
 * Loads that used to hold the JS thread: a GGUF carrying a Qwen3-sized vocabulary (its strings
 * are decoded on first use, and loadModel hands the file to the tokenizer worker), the
 * conversion that writes one (in slices), and a WordPiece tokenizer.json (built in slices).
 * Bounds are relative to the same work done on this thread in the same test (helpers/event-loop.ts).
 */
import * as nodePath from 'node:path';
import { convert, loadModel, loadTokenizer, loadTokenizerSync, readWeights, closeWeights } from '../../lib';
import { collectGarbage, timeOnThread, watchEventLoop } from '../helpers/event-loop';
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

async function watched<T>(work: () => Promise<T>) {
  collectGarbage();
  const watch = watchEventLoop();
  const value = await work();
  return { value, ...watch.stop() };
}

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

test('loadModel of a GGUF with a 151k vocabulary leaves the loop free while the vocabulary loads', async () => {
  // On this thread, the vocabulary alone: decoding it and building the tokenizer.
  const onThread = timeOnThread(() => loadTokenizerSync(gguf));
  const run = await watched(() => loadModel(gguf, { threads: 1 }));
  try {
    expect(run.value.tokenizer.encode('Hello, world!')).toEqual(loadTokenizerSync(`${AJC1}.tokenizer`).encode('Hello, world!'));
  } finally {
    run.value.dispose();
  }
  expect(run.busy).toBeLessThan(onThread / 2);
  expect(run.longest).toBeLessThan(onThread / 4);
}, 60_000);

test('convert(ajc1 -> gguf) rebuilds and writes the vocabulary in slices', async () => {
  // The merge table the conversion rebuilds, built in one piece on this thread: a conversion that
  // rebuilt it in one piece would block about that long. (The slices cut since, the string
  // arrays' encoding among them, are shorter than what a loaded machine adds to a gap, so this
  // bound guards against the one-piece build only; scripts/bench/load.js measures the rest.)
  const onThread = timeOnThread(() => loadTokenizerSync(`${AJC1}.tokenizer`));
  const run = await watched(() => convert(AJC1, nodePath.join(work.dir, 'again.gguf'), { to: 'gguf' }));
  expect(run.longest).toBeLessThan(onThread / 3);
}, 120_000);

test('a WordPiece tokenizer.json builds in slices, to the tokenizer loadTokenizerSync builds', async () => {
  loadTokenizerSync(MINILM); // compiled once, as the watched loads are
  const onThread = timeOnThread(() => loadTokenizerSync(MINILM));
  for (const pass of ['cold', 'warm']) {
    const run = await watched(() => loadTokenizer(MINILM));
    for (const text of TEXTS) expect(run.value.encode(text)).toEqual(loadTokenizerSync(MINILM).encode(text));
    // JSON.parse of the file is the one piece left (about a fifth of the build).
    expect({ pass, longest: run.longest < onThread / 2 }).toEqual({ pass, longest: true });
  }
}, 60_000);
