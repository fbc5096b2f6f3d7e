/**
 * The tokenizer worker thread: builds tokenizers (packing the BPE and WordPiece ones, and storing
 * them in the cache folder), encodes long texts, converts vocabularies for the writers
 * (vocabulary-jobs.ts) and writes the readers' converted tensors (conversion-jobs.ts), so that
 * none of it holds the JS thread (worker-client.ts).
 */
import { parentPort } from 'node:worker_threads';
import { writeCachedTokenizer } from '../tokenizers/cache';
import { packTokenizer, unpackTokenizer } from '../tokenizers/packed';
import type { Tokenizer } from '../tokenizers/types';
import { MISSING_RECIPE, sendError, type Recipe, type Reply, type Request } from '../tokenizers/worker-protocol';
import { runVocabularyJob, type VocabularyReply, type VocabularyRequest } from './vocabulary-jobs';
import { runConversionJob, type ConversionReply, type ConversionRequest } from './conversion-jobs';

/** Tokenizers made for encode requests, most recently used last. */
const made = new Map<number, Tokenizer>();
const MADE_LIMIT = 4;

/** The builders (and the format readers they use), loaded when first needed: a cache hit needs none. */
function builders() {
  /* eslint-disable @typescript-eslint/no-require-imports */
  return {
    ...(require('./load') as typeof import('./load')),
    ...(require('../tokenizers/from-data') as typeof import('../tokenizers/from-data')),
  };
  /* eslint-enable @typescript-eslint/no-require-imports */
}

function load(path: string, cacheDir: string | undefined, source: object): SharedArrayBuffer | undefined {
  const packed = packTokenizer(builders().loadTokenizerSync(path), source);
  if (cacheDir !== undefined) writeCachedTokenizer(cacheDir, source, packed);
  return packed;
}

function make(recipe: Recipe): Tokenizer {
  if ('packed' in recipe) return unpackTokenizer(recipe.packed);
  if ('path' in recipe) return builders().loadTokenizerSync(recipe.path);
  return builders().tokenizerFromData(recipe.data, recipe.where);
}

function tokenizerFor(key: number, recipe: Recipe | undefined): Tokenizer {
  let tokenizer = made.get(key);
  if (tokenizer) {
    made.delete(key);
  } else {
    if (!recipe) throw Object.assign(new Error(`the tokenizer worker has no tokenizer ${key}`), { code: MISSING_RECIPE });
    tokenizer = make(recipe);
    if (made.size >= MADE_LIMIT) made.delete(made.keys().next().value!);
  }
  made.set(key, tokenizer);
  return tokenizer;
}

function handle(request: Request): { reply: Reply; transfer: ArrayBuffer[] } {
  try {
    if (request.op === 'load') return { reply: { id: request.id, packed: load(request.path, request.cacheDir, request.source) }, transfer: [] };
    const tokenizer = tokenizerFor(request.key, request.recipe);
    const ids = request.texts.map((text) => Int32Array.from(tokenizer.encode(text, request.options)));
    return { reply: { id: request.id, ids }, transfer: ids.map((a) => a.buffer as ArrayBuffer) };
  } catch (error) {
    return { reply: { id: request.id, error: sendError(error) }, transfer: [] };
  }
}

/** A vocabulary or conversion job: each reads and writes files asynchronously, so it answers when done (encodes run between its steps). */
async function handleJob(request: VocabularyRequest | ConversionRequest): Promise<{ reply: VocabularyReply | ConversionReply | Reply; transfer: ArrayBuffer[] }> {
  try {
    if (request.op === 'conversion') {
      await runConversionJob(request.job);
      return { reply: { id: request.id, written: true }, transfer: [] };
    }
    const { result, transfer } = await runVocabularyJob(request.job);
    return { reply: { id: request.id, vocabulary: result }, transfer };
  } catch (error) {
    return { reply: { id: request.id, error: sendError(error) }, transfer: [] };
  }
}

parentPort!.on('message', (request: Request | VocabularyRequest | ConversionRequest) => {
  if (request.op === 'vocabulary' || request.op === 'conversion') {
    void handleJob(request).then(({ reply, transfer }) => parentPort!.postMessage(reply, transfer));
    return;
  }
  const { reply, transfer } = handle(request);
  parentPort!.postMessage(reply, transfer);
});
