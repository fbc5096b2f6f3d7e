/**
 * loadTokenizer builds in the tokenizer worker and hands BPE and WordPiece vocabularies back packed
 * (from the cache folder when it holds them), and the tokenizer is the one loadTokenizerSync builds
 * on this thread. How long the event loop waits meanwhile is measured by scripts/bench/load.js
 * (a test must not depend on timing the shared machine decides).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import type { Tokenizer } from '../../lib/tokenizers';
import { encodeAsync, loadTokenizer, loadTokenizerSync } from '../../lib/tokenizer-loading';
import { recipeOf } from '../../lib/tokenizers/recipes';
import { fixture, tempDir } from '../helpers/fixtures';
import { makeCorpus } from './corpus';

const QWEN3 = fixture('tokenizers', 'qwen3');
const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin.tokenizer');
const GGUF = fixture('gguf-quants', 'qwen2-bias', 'qwen2-bias.Q4_1.gguf');
const MINILM = fixture('tokenizers', 'minilm', 'tokenizer.json');
const BERT_GGUF = fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf');

const TEXTS = [
  ...makeCorpus(60, 7),
  'Hello, world!',
  '  leading spaces and\ttabs\n',
  'naïve café 東京 🙂',
  '<|im_start|>user\nhi<|im_end|>',
  '',
];

let cache: ReturnType<typeof tempDir>;
const savedCache = process.env.WEIGHTMAP_CACHE;
beforeEach(() => {
  cache = tempDir('weightmap-tokcache-');
  process.env.WEIGHTMAP_CACHE = cache.dir;
});
afterEach(() => {
  cache.cleanup();
  if (savedCache === undefined) delete process.env.WEIGHTMAP_CACHE;
  else process.env.WEIGHTMAP_CACHE = savedCache;
});

function cacheFiles(ext = '.wmtok'): string[] {
  const dir = nodePath.join(cache.dir, 'tokenizers');
  return fs.existsSync(dir) ? fs.readdirSync(dir).filter((f) => f.endsWith(ext)).map((f) => nodePath.join(dir, f)) : [];
}

/** Same ids, texts, pieces and special ids as the reference, token for token. */
function expectSameTokenizer(actual: Tokenizer, expected: Tokenizer): void {
  expect(actual.kind).toBe(expected.kind);
  expect(actual.vocabSize).toBe(expected.vocabSize);
  expect(actual.specialIds).toEqual(expected.specialIds);
  for (const text of TEXTS) {
    const ids = expected.encode(text);
    expect(actual.encode(text)).toEqual(ids);
    expect(actual.encode(text, { addSpecialTokens: false })).toEqual(expected.encode(text, { addSpecialTokens: false }));
    expect(actual.decode(ids)).toBe(expected.decode(ids));
    expect(actual.decode(ids, { skipSpecialTokens: true })).toBe(expected.decode(ids, { skipSpecialTokens: true }));
  }
  for (let id = 0; id < expected.vocabSize; id += 997) {
    const token = expected.idToToken(id);
    expect(actual.idToToken(id)).toBe(token);
    expect(actual.isSpecial(id)).toBe(expected.isSpecial(id));
    if (token !== undefined) expect(actual.tokenToId(token)).toBe(expected.tokenToId(token));
  }
  expect(actual.idToToken(expected.vocabSize)).toBeUndefined();
  expect(actual.tokenToId('no such token \u0000')).toBeUndefined();
}


describe.each([
  ['Qwen3 vocab.json + merges.txt', QWEN3],
  ['Qwen3 ajc1 .tokenizer', AJC1],
])('%s (151k tokens)', (_name, PATH) => {
  test('loads off the JS thread, then from the cache, as the tokenizer loadTokenizerSync builds', async () => {
    const sync = loadTokenizerSync(PATH);
    // The worker built and packed it (the cache file is its output); the warm load reads that file.
    // How long the loop waits meanwhile is measured by scripts/bench/load.js, not here.
    const cold = await loadTokenizer(PATH);
    expect(cacheFiles()).toHaveLength(1);
    const warm = await loadTokenizer(PATH);
    expectSameTokenizer(cold, sync);
    expectSameTokenizer(warm, sync);
  });
});

/** A folder holding MiniLM's vocab.txt alone (beside its tokenizer.json, loadTokenizer would read that). */
function vocabTxtFolder(): string {
  const dir = nodePath.join(cache.dir, 'bert-vocab-txt');
  fs.mkdirSync(dir);
  fs.copyFileSync(fixture('tokenizers', 'minilm', 'vocab.txt'), nodePath.join(dir, 'vocab.txt'));
  return dir;
}

test('a GGUF byte-level vocabulary packs too, and so do WordPiece ones: tokenizer.json, vocab.txt, a GGUF BERT vocabulary', async () => {
  const paths = [GGUF, MINILM, vocabTxtFolder(), BERT_GGUF];
  for (const path of paths) {
    const tokenizer = await loadTokenizer(path);
    expect(recipeOf(tokenizer)?.recipe).toHaveProperty('packed'); // unpacked from the worker's buffer
    expectSameTokenizer(tokenizer, loadTokenizerSync(path));
  }
  expect(cacheFiles()).toHaveLength(paths.length);
  expect(cacheFiles('.none')).toHaveLength(0);
  for (const path of paths) expectSameTokenizer(await loadTokenizer(path), loadTokenizerSync(path)); // from the cache
});

describe.each([
  ['with the cache', undefined],
  ['with WEIGHTMAP_CACHE=off', 'off'],
])('a WordPiece tokenizer.json is never parsed on this thread (%s)', (_name, setting) => {
  test('the worker builds it; this thread parses only the packed header', async () => {
    if (setting) process.env.WEIGHTMAP_CACHE = setting;
    const size = fs.statSync(MINILM).size;
    const parse = jest.spyOn(JSON, 'parse');
    const loaded: Tokenizer[] = [];
    let longest = 0;
    try {
      for (let pass = 0; pass < 2; pass++) loaded.push(await loadTokenizer(MINILM)); // cold then warm (or twice uncached)
      longest = Math.max(0, ...parse.mock.calls.map(([text]) => String(text).length));
    } finally {
      parse.mockRestore();
    }
    expect(longest).toBeLessThan(size / 20);
    for (const tokenizer of loaded) expectSameTokenizer(tokenizer, loadTokenizerSync(MINILM));
    expect(cacheFiles()).toHaveLength(setting === 'off' ? 0 : 1);
  });
});

test('a damaged cache file is rebuilt over, and a changed source is not served from the cache', async () => {
  const copy = nodePath.join(cache.dir, 'qwen3');
  fs.mkdirSync(copy);
  for (const f of fs.readdirSync(QWEN3)) fs.copyFileSync(nodePath.join(QWEN3, f), nodePath.join(copy, f));
  const reference = loadTokenizerSync(copy);
  await loadTokenizer(copy);
  const [file] = cacheFiles();
  const bytes = fs.readFileSync(file);
  bytes[bytes.length >> 1] ^= 0x10;
  fs.writeFileSync(file, bytes);
  expectSameTokenizer(await loadTokenizer(copy), reference);
  expect(fs.readFileSync(file).equals(bytes)).toBe(false); // rewritten

  // A new added token in tokenizer_config.json changes what the folder tokenizes to.
  const configPath = nodePath.join(copy, 'tokenizer_config.json');
  const config = JSON.parse(fs.readFileSync(configPath, 'utf8'));
  config.added_tokens_decoder['151669'] = { content: 'zzqqzz', lstrip: false, normalized: false, rstrip: false, single_word: false, special: true };
  fs.writeFileSync(configPath, JSON.stringify(config));
  const changed = await loadTokenizer(copy);
  expect(changed.encode('zzqqzz')).toEqual([151669]);
  expectSameTokenizer(changed, loadTokenizerSync(copy));
});

test('WEIGHTMAP_CACHE=off loads without a cache', async () => {
  process.env.WEIGHTMAP_CACHE = 'off';
  expectSameTokenizer(await loadTokenizer(AJC1), loadTokenizerSync(AJC1));
  expect(cacheFiles()).toHaveLength(0);
});

test('loadTokenizer errors are the ones loadTokenizerSync throws', async () => {
  const missing = nodePath.join(cache.dir, 'nothing-here');
  fs.mkdirSync(missing);
  expect(() => loadTokenizerSync(missing)).toThrow(/no tokenizer files found/);
  await expect(loadTokenizer(missing)).rejects.toMatchObject({ name: 'WeightFormatError', code: 'BAD_HEADER', path: missing });
  const broken = nodePath.join(cache.dir, 'tokenizer.json');
  fs.writeFileSync(broken, '{"model": ');
  await expect(loadTokenizer(broken)).rejects.toMatchObject({ name: 'WeightFormatError', code: 'BAD_HEADER', path: broken });
  await expect(loadTokenizer(nodePath.join(cache.dir, 'absent.json'))).rejects.toMatchObject({ code: 'ENOENT' });
});

describe('encodeAsync', () => {
  // ~400 KB of mixed text: tens of milliseconds to encode on this thread.
  const LONG = makeCorpus(4000, 11).join('\n');

  test.each([
    ['packed Qwen3', QWEN3],
    ['WordPiece', MINILM],
  ])('encodes a long text (%s) in the worker, id for id', async (_name, path) => {
    const tokenizer = await loadTokenizer(path);
    const expected = tokenizer.encode(LONG, { maxLength: Infinity });
    const onThisThread = jest.spyOn(tokenizer, 'encode');
    const [ids, short] = await encodeAsync(tokenizer, [LONG, 'short'], { maxLength: Infinity });
    expect(onThisThread.mock.calls.filter(([text]) => text === LONG)).toEqual([]); // the worker encoded it
    onThisThread.mockRestore();
    expect(ids).toEqual(expected);
    expect(short).toEqual(tokenizer.encode('short', { maxLength: Infinity }));
  });

  test('a tokenizer the worker let go (it keeps a few) is sent to it again', async () => {
    const paths = [MINILM, GGUF, fixture('tokenizers', 'llama2c', 'tok512.bin'), fixture('tokenizers', 'llama2c', 'tokenizer.bin'), fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf')];
    const tokenizers = paths.map((p) => loadTokenizerSync(p));
    const text = LONG.slice(0, 40000);
    for (const t of [...tokenizers, tokenizers[0]]) expect((await encodeAsync(t, [text]))[0]).toEqual(t.encode(text));
  });

  test('short texts, and tokenizers weightmap did not load, encode on this thread', async () => {
    const tokenizer = loadTokenizerSync(MINILM);
    const own: Tokenizer = Object.create(tokenizer);
    expect(await encodeAsync(own, [LONG.slice(0, 50000)])).toEqual([tokenizer.encode(LONG.slice(0, 50000))]);
    expect(await encodeAsync(tokenizer, ['a b c'])).toEqual([tokenizer.encode('a b c')]);
  });
});
