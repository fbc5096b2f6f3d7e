/**
 * Vocabulary conversions off the JS thread. Rebuilding a 151k-token byte-level vocabulary for
 * another format (ajc1 `.tokenizer` <-> GGUF `tokenizer.ggml.*`) makes some 30 MB of strings and
 * small arrays that outlive the young generation: run on the JS thread, even in slices, the
 * collections that copy them stop the event loop for tens of milliseconds. The writers ask here
 * first: when a worker is registered (lib/tokenizer-loading registers the tokenizer worker's on
 * the main thread), it reads the weights' file again, converts and encodes the vocabulary, and
 * hands back the bytes the writer stores; otherwise (no worker, or it failed) the writer converts
 * on this thread as before. The bytes are the same either way.
 */
import * as fs from 'node:fs';
import type { ModelWeights, TokenizerData } from '../../addon/weights';

/** A GGUF array of strings already encoded: `payload` is what follows the ARRAY type code (element type, count, strings). */
export interface EncodedStrings {
  encodedCount: number;
  payload: Uint8Array;
}

export function isEncodedStrings(value: unknown): value is EncodedStrings {
  return typeof value === 'object' && value !== null && (value as EncodedStrings).payload instanceof Uint8Array;
}

type Gguf = Extract<TokenizerData, { kind: 'gguf' }>;

/** A GGUF vocabulary whose long string arrays come encoded (the GGUF writer stores them as they are). */
export type EncodedGgufVocabulary = Omit<Gguf, 'tokens' | 'merges'> & { tokens: EncodedStrings; merges?: EncodedStrings };

/** What the worker is asked: convert the vocabulary of the weights at `path` (read as `format`). */
export type VocabularyJob =
  | { path: string; format: 'ajc1' | 'gguf'; target: 'gguf'; vocabSize: number }
  | { path: string; format: 'ajc1' | 'gguf'; target: 'tokenizer.json'; maxSeqLen: number }
  | { path: string; format: 'ajc1' | 'gguf'; target: 'ajc1'; vocabSize: number; bos: number | undefined; eos: number | undefined };

/** The worker's answer: undefined when the source has no vocabulary of that kind. */
export type VocabularyResult =
  | { gguf: EncodedGgufVocabulary }
  | { ajc1: { bytes: Uint8Array; entries: number } }
  | { files: [string, Uint8Array][] }
  | undefined;

type Runner = (job: VocabularyJob) => Promise<VocabularyResult>;

let runner: Runner | undefined;

/** Registers the worker that runs vocabulary jobs (lib/tokenizer-loading, on the main thread), or none. */
export function setVocabularyRunner(run: Runner | undefined): void {
  runner = run;
}

/** What the worker reads again: the weights file, and an ajc1 checkpoint's `.tokenizer` beside it. */
function filesOf(weights: ModelWeights): string[] {
  return weights.format === 'ajc1' ? [weights.path, `${weights.path}.tokenizer`] : [weights.path];
}

/** Device, inode, size and modification time of each file ('' for one that is absent). */
function identity(files: string[]): string {
  return files
    .map((f) => {
      const s = fs.statSync(f, { throwIfNoEntry: false, bigint: true });
      return s ? `${s.dev}:${s.ino}:${s.size}:${s.mtimeNs}` : '';
    })
    .join('|');
}

/** Weights as readWeights returned them: their path, format, vocabulary and files then. */
const asRead = new WeakMap<ModelWeights, { path: string; format: string; tokenizer: TokenizerData | undefined; files: string }>();

/** Records `weights` as read (formats/index.ts calls it for ajc1 and GGUF files, the formats the worker can read again). */
export function rememberAsRead(weights: ModelWeights): void {
  if (weights.format !== 'ajc1' && weights.format !== 'gguf') return;
  asRead.set(weights, { path: weights.path, format: weights.format, tokenizer: weights.tokenizer, files: identity(filesOf(weights)) });
}

/**
 * Whether the worker, reading the weights' path again, finds the vocabulary these weights hold:
 * only for weights as readWeights returned them (not a vocabulary or path set since), from files
 * unchanged since.
 */
function offloadable(weights: ModelWeights): weights is ModelWeights & { format: 'ajc1' | 'gguf' } {
  const read = asRead.get(weights);
  if (!read || weights.tokenizer === undefined) return false;
  return read.path === weights.path && read.format === weights.format && read.tokenizer === weights.tokenizer && read.files === identity(filesOf(weights));
}

/**
 * The source's vocabulary converted by the worker, or `'here'` when the caller must convert it on
 * this thread (no worker, a source it cannot read again, or a worker error: the conversion here
 * then reports the error, if it is the data's).
 */
async function run(weights: ModelWeights, job: (path: string, format: 'ajc1' | 'gguf') => VocabularyJob): Promise<VocabularyResult | 'here'> {
  if (!runner || !offloadable(weights)) return 'here';
  try {
    return await runner(job(weights.path, weights.format));
  } catch {
    return 'here';
  }
}

/** GGUF `tokenizer.ggml.*` of the source, encoded in the worker; 'here' as above. */
export async function ggufVocabularyOffThread(weights: ModelWeights, vocabSize: number): Promise<EncodedGgufVocabulary | undefined | 'here'> {
  const r = await run(weights, (path, format) => ({ path, format, target: 'gguf', vocabSize }));
  return r === 'here' ? r : r && 'gguf' in r ? r.gguf : undefined;
}

/** The source's vocabulary as the bytes of an ajc1 `.tokenizer` (and its entry count), made in the worker; 'here' as above. */
export async function ajc1TokenizerOffThread(
  weights: ModelWeights,
  vocabSize: number,
  bos: number | undefined,
  eos: number | undefined,
): Promise<{ bytes: Uint8Array; entries: number } | undefined | 'here'> {
  const r = await run(weights, (path, format) => ({ path, format, target: 'ajc1', vocabSize, bos, eos }));
  return r === 'here' ? r : r && 'ajc1' in r ? r.ajc1 : undefined;
}

/** The HF tokenizer files (tokenizer.json, tokenizer_config.json) of the source's SentencePiece vocabulary, made in the worker; 'here' as above. */
export async function hfSentencePieceFilesOffThread(weights: ModelWeights, maxSeqLen: number): Promise<[string, Uint8Array][] | undefined | 'here'> {
  const r = await run(weights, (path, format) => ({ path, format, target: 'tokenizer.json', maxSeqLen }));
  return r === 'here' ? r : r && 'files' in r ? r.files : undefined;
}
