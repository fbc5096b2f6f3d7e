/**
 * loadTokenizer(path): finds and reads a tokenizer from
 *  - a tokenizer.json (with tokenizer_config.json beside it, if any),
 *  - a folder holding tokenizer.json, vocab.json + merges.txt, vocab.txt + merges.txt (TLLM),
 *    vocab.txt (BERT), tokenizer.bin, a single *.tokenizer, or a SentencePiece Unigram model
 *    (sentencepiece.bpe.model, spiece.model: converted as tokenizers/sentencepiece-model.ts says),
 *  - an ajc1 `.tokenizer`, a llama2.c tokenizer.bin, a GGUF file (its tokenizer.ggml.* metadata),
 *    a SentencePiece `.model`.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { WeightFormatError } from '../base/errors';
import { fail } from '../formats/containers/bytes';
import { readCachedTokenizer, tokenizerCacheDir, tokenizerSource } from '../tokenizers/cache';
import { unpackTokenizer } from '../tokenizers/packed';
import { runNow, runYielding, type Steps } from '../base/steps';
import type { ModelWeights, TokenizerData } from '../addon/weights';
import type { Tokenizer } from '../tokenizers/types';
import { withRecipe } from '../tokenizers/recipes';
import { loadInWorker } from './worker-client';
import { lazy } from '../base/lazy';
import type { TokenizerPrefetch } from './prefetch';

// The readers and builders of tokenizers on this thread, each loaded by the first load that needs
// it: a tokenizer read packed from the cache (loadModel's usual case) needs none of them.
const ajc1Module = lazy(() => require('../formats/containers/ajc1') as typeof import('../formats/containers/ajc1'));
const llama2cTokenizerModule = lazy(() => require('../formats/vocabulary/llama2c-tokenizer') as typeof import('../formats/vocabulary/llama2c-tokenizer'));
const fromDataModule = lazy(() => require('../tokenizers/from-data') as typeof import('../tokenizers/from-data'));
const ggufVocabModule = lazy(() => require('../formats/vocabulary/gguf-vocab') as typeof import('../formats/vocabulary/gguf-vocab'));
const hfJsonModule = lazy(() => require('../tokenizers/hf-json') as typeof import('../tokenizers/hf-json'));
const spmModelModule = lazy(() => require('../tokenizers/sentencepiece-model') as typeof import('../tokenizers/sentencepiece-model'));

/** The names XLM-R- and T5-style folders give their SentencePiece Unigram model (read when no tokenizer.json is there). */
export const SENTENCEPIECE_MODEL_NAMES = ['sentencepiece.bpe.model', 'spiece.model'];
const tllmModule = lazy(() => require('../tokenizers/tllm') as typeof import('../tokenizers/tllm'));
const tokenizerFromData: typeof import('../tokenizers/from-data').tokenizerFromData = (...args) => fromDataModule().tokenizerFromData(...args);
const tokenizerFromDataSteps: typeof import('../tokenizers/from-data').tokenizerFromDataSteps = (...args) => fromDataModule().tokenizerFromDataSteps(...args);

function readJson(path: string): any {
  const text = fs.readFileSync(path, 'utf8');
  try {
    return JSON.parse(text);
  } catch (e) {
    return fail('BAD_HEADER', `not valid JSON: ${(e as Error).message}`, { path });
  }
}

function optionalJson(path: string): any {
  return fs.existsSync(path) ? readJson(path) : undefined;
}

/** Number of `f32 score, u32 len, bytes` entries after the 12-byte header of a `.tokenizer`. */
function countAjc1Entries(bytes: Buffer, path: string): number {
  if (bytes.length < 12) fail('TRUNCATED', 'the file ends inside the .tokenizer header', { path, offset: 0, expected: '12 bytes', found: `${bytes.length} bytes` });
  let at = 12;
  let n = 0;
  while (at < bytes.length) {
    const end = at + 8 > bytes.length ? at + 8 : at + 8 + bytes.readUInt32LE(at + 4);
    if (end > bytes.length) {
      fail('TRUNCATED', `the file ends inside token ${n}`, { path, offset: at, expected: `${end - at} bytes`, found: `${bytes.length - at} bytes` });
    }
    at = end;
    n++;
  }
  return n;
}

/** An ajc1 `.tokenizer` read on its own (no checkpoint to give vocab_size). */
export function loadAjc1Tokenizer(path: string): Tokenizer {
  return tokenizerFromData(readAjc1TokenizerData(path), path);
}

function readAjc1TokenizerData(path: string): TokenizerData {
  const bytes = fs.readFileSync(path);
  return ajc1Module().parseAjc1Tokenizer(bytes, path, countAjc1Entries(bytes, path));
}

/** BERT vocab.txt: one token per line, id = line index (HF WordPiece::read_file trims line ends). */
export function wordPieceFromVocabTxt(path: string, config?: any): Tokenizer {
  const lines = fs.readFileSync(path, 'utf8').split('\n');
  if (lines[lines.length - 1] === '') lines.pop();
  const tokens = lines.map((l) => l.replace(/\s+$/u, ''));
  const find = (name: string) => {
    const i = tokens.lastIndexOf(name);
    return i < 0 ? undefined : i;
  };
  const unk = find('[UNK]');
  if (unk === undefined) fail('BAD_HEADER', 'vocab.txt has no [UNK] token', { path });
  return tokenizerFromData(
    {
      kind: 'wordpiece',
      tokens,
      specialIds: { pad: find('[PAD]')!, unk, cls: find('[CLS]')!, sep: find('[SEP]')!, mask: find('[MASK]')! },
      doLowerCase: config?.do_lower_case !== false,
    },
    path,
  );
}

/** Whether a folder holds tokenizer files fromFolder reads (the same cases, in its order). */
export function hasTokenizerFiles(dir: string): boolean {
  const names = new Set(fs.readdirSync(dir));
  return names.has('tokenizer.json') || (names.has('vocab.json') && names.has('merges.txt')) || names.has('vocab.txt') || names.has('tokenizer.bin') ||
    [...names].filter((f) => f.endsWith('.tokenizer')).length === 1;
}

function* fromFolder(dir: string): Steps<Tokenizer> {
  const at = (name: string) => nodePath.join(dir, name);
  const has = (name: string) => fs.existsSync(at(name));
  const config = optionalJson(at('tokenizer_config.json'));
  if (has('tokenizer.json')) return yield* hfJsonModule().tokenizerFromJsonSteps(readJson(at('tokenizer.json')), at('tokenizer.json'), config);
  if (has('vocab.json') && has('merges.txt')) {
    const vocab = readJson(at('vocab.json'));
    yield;
    return yield* hfJsonModule().tokenizerFromVocabMergesSteps(vocab, fs.readFileSync(at('merges.txt'), 'utf8'), config, dir);
  }
  if (has('vocab.txt') && has('merges.txt')) return new (tllmModule().TllmTokenizer)(fs.readFileSync(at('vocab.txt')), fs.readFileSync(at('merges.txt')));
  if (has('vocab.txt')) return wordPieceFromVocabTxt(at('vocab.txt'), config);
  if (has('tokenizer.bin')) return tokenizerFromData(llama2cTokenizerModule().readLlama2cTokenizer(at('tokenizer.bin')), at('tokenizer.bin'));
  const ajc1 = fs.readdirSync(dir).filter((f) => f.endsWith('.tokenizer'));
  if (ajc1.length === 1) return yield* tokenizerFromDataSteps(readAjc1TokenizerData(at(ajc1[0])), at(ajc1[0]));
  const spm = SENTENCEPIECE_MODEL_NAMES.find(has);
  if (spm !== undefined) return yield* spmModelModule().tokenizerFromSentencePieceModelSteps(fs.readFileSync(at(spm)), at(spm), config);
  throw new WeightFormatError('BAD_HEADER', 'no tokenizer files found (tokenizer.json, vocab.json + merges.txt, vocab.txt, tokenizer.bin, *.tokenizer, a SentencePiece Unigram .model)', { path: dir });
}

function startsWithGguf(path: string): boolean {
  const fd = fs.openSync(path, 'r');
  try {
    const head = Buffer.alloc(4);
    return fs.readSync(fd, head, 0, 4, 0) === 4 && head.toString('latin1') === 'GGUF';
  } finally {
    fs.closeSync(fd);
  }
}

/** Synchronous loadTokenizer (it builds on the calling thread and uses no cache). */
export function loadTokenizerSync(path: string): Tokenizer {
  return withRecipe(runNow(load(path)), { path });
}

/**
 * Reads the tokenizer at `path` (a file or a folder; see the module comment). A BPE vocabulary,
 * byte-level or with byte fallback (151k tokens for Qwen, 262k for Gemma 3: hundreds of
 * milliseconds to build), or a WordPiece one (whose tokenizer.json alone takes MiniLM 12 ms to
 * parse), is read packed from the cache folder (cache.ts), or built and packed in the tokenizer
 * worker, and is in use without further work; the other kinds, small, are built here in slices
 * that let the event loop run in between (steps.ts).
 */
export async function loadTokenizer(path: string): Promise<Tokenizer> {
  return loadTokenizerWith(path, undefined);
}

/** loadTokenizer, taking the cache read from `prefetch` where it was started for the same cache folder and the same source files as they are now. */
async function loadTokenizerWith(path: string, prefetch: TokenizerPrefetch | undefined): Promise<Tokenizer> {
  if (typeof path !== 'string' || path === '') throw new TypeError('loadTokenizer(path): path must be a non-empty string');
  const cacheDir = tokenizerCacheDir();
  const source = tokenizerSource(path);
  const early = prefetch && prefetch.cacheDir === cacheDir && JSON.stringify(prefetch.source) === JSON.stringify(source) ? prefetch.cached : undefined;
  const cached = cacheDir === undefined ? undefined : await (early ?? readCachedTokenizer(cacheDir, source));
  const packed = cached === 'none' ? undefined : (cached ?? (await loadInWorker(path, cacheDir, source)));
  if (packed) return withRecipe(unpackTokenizer(packed, path), { packed });
  return withRecipe(await runYielding(load(path)), { path });
}

/**
 * The tokenizer of weights that carry one. A vocabulary in a file of its own (an ajc1
 * `.tokenizer`, a GGUF's metadata) loads through loadTokenizer, off the JS thread and cached;
 * other data builds here in slices.
 */
export async function loadWeightsTokenizer(weights: Pick<ModelWeights, 'format' | 'path'>, data: TokenizerData, prefetch?: TokenizerPrefetch): Promise<Tokenizer> {
  const file = data.kind === 'scored' && data.style === 'ajc1' && weights.format === 'ajc1' ? `${weights.path}.tokenizer`
    : data.kind === 'gguf' && weights.format === 'gguf' ? weights.path : undefined;
  if (file !== undefined) {
    try {
      return await loadTokenizerWith(file, prefetch);
    } catch {
      // The file read alone can fail where the weights' reading succeeded (the vocabulary size
      // checks need the checkpoint): the data decides.
    }
  }
  return fromDataModule().tokenizerFromDataAsync(data, weights.path);
}

function* load(path: string): Steps<Tokenizer> {
  yield; // a checkpoint before the files are read
  const stat = fs.statSync(path);
  if (stat.isDirectory()) return yield* fromFolder(path);
  const base = nodePath.basename(path);
  if (startsWithGguf(path)) {
    return tokenizerFromData(ggufVocabModule().readGgufTokenizerData(path), path);
  }
  if (base.endsWith('.json')) {
    const json = readJson(path);
    if (json && typeof json === 'object' && 'model' in json) {
      yield;
      return yield* hfJsonModule().tokenizerFromJsonSteps(json, path, optionalJson(nodePath.join(nodePath.dirname(path), 'tokenizer_config.json')));
    }
    return yield* fromFolder(nodePath.dirname(path));
  }
  if (base.endsWith('.tokenizer')) return yield* tokenizerFromDataSteps(readAjc1TokenizerData(path), path);
  if (base.endsWith('.txt')) return yield* fromFolder(nodePath.dirname(path));
  if (base.endsWith('.bin')) return tokenizerFromData(llama2cTokenizerModule().readLlama2cTokenizer(path), path);
  if (base.endsWith('.model')) {
    return yield* spmModelModule().tokenizerFromSentencePieceModelSteps(fs.readFileSync(path), path, optionalJson(nodePath.join(nodePath.dirname(path), 'tokenizer_config.json')));
  }
  throw new WeightFormatError('BAD_HEADER', 'not a tokenizer file this library reads', { path });
}
