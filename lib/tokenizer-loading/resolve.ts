/**
 * The tokenizer of a model, as loadModel, loadMoondream and loadEmbedder find it. One precedence:
 *
 *   1. the caller's (options.tokenizer): a tokenizer file or folder (loadTokenizer), or a Tokenizer;
 *   2. the vocabulary the format reader found in or beside the weights (EMBD's, GGUF metadata, an
 *      ajc1 `.tokenizer`, llama2.c's tokenizer.bin, the one a sepweight config.json names, an HF
 *      BERT folder's vocab.txt);
 *   3. the tokenizer files of the model's folder (the folder itself, or the file's parent), in
 *      loadTokenizer's folder order: tokenizer.json, vocab.json + merges.txt, vocab.txt +
 *      merges.txt (TLLM), vocab.txt (BERT), tokenizer.bin, a single *.tokenizer;
 *   4. none: undefined (MOON and TLLM files carry no vocabulary, FORMATS.md §1.6, §2): a language
 *      model then runs on token ids, an embedder refuses.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import type { ModelWeights } from '../addon/weights';
import { hasTokenizerFiles, loadTokenizer, loadWeightsTokenizer } from './load';
import type { Tokenizer } from '../tokenizers/types';
import type { TokenizerPrefetch } from './prefetch';

/** The folder a model lives in: the path itself for a folder, else its parent. */
export function modelFolder(path: string): string {
  return fs.statSync(path).isDirectory() ? path : nodePath.dirname(path);
}

/** `prefetch`: the cache read prefetchWeightsTokenizer started for the weights' own vocabulary, if any. */
export async function resolveTokenizer(weights: ModelWeights, given: string | Tokenizer | undefined, prefetch?: TokenizerPrefetch): Promise<Tokenizer | undefined> {
  if (given !== undefined) {
    if (typeof given === 'string') return loadTokenizer(given);
    if (typeof given === 'object' && given !== null && typeof given.encode === 'function') return given;
    throw new TypeError('tokenizer must be a path or a Tokenizer');
  }
  if (weights.tokenizer) return loadWeightsTokenizer(weights, weights.tokenizer, prefetch);
  const folder = modelFolder(weights.path);
  return hasTokenizerFiles(folder) ? loadTokenizer(folder) : undefined;
}
