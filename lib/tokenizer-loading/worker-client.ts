/**
 * The JS thread's side of the tokenizer worker (worker.ts): one worker per process, started on
 * the first request and ended after a few idle seconds; it never keeps the process alive. It also
 * runs the formats' jobs: the writers' vocabulary conversions and the readers' converted files.
 */
import * as nodePath from 'node:path';
import type { Worker } from 'node:worker_threads';
import { lazy } from '../base/lazy';
import { startModuleWorker } from '../base/worker-boot';
import { MISSING_RECIPE, receiveError, type Recipe, type Reply, type Request } from '../tokenizers/worker-protocol';
import { recipeOf } from '../tokenizers/recipes';
import type { EncodeOptions, Tokenizer } from '../tokenizers/types';
import { setVocabularyRunner, type VocabularyResult } from '../formats/vocabulary/vocab-offload';
import type { VocabularyReply, VocabularyRequest } from './vocabulary-jobs';
import { setConversionRunner, type ConversionJob } from '../formats/containers/conversion-offload';
import type { ConversionReply, ConversionRequest } from './conversion-jobs';

const IDLE_MS = 5000;

// Loaded with the first worker (node:worker_threads costs a fresh process ~1.2 ms of require).
const workerThreads = lazy(() => require('node:worker_threads') as typeof import('node:worker_threads'));

function startWorker(): Worker {
  return startModuleWorker(__dirname, 'worker', nodePath.extname(__filename));
}

/** A request before it is numbered. */
type Unsent<T = Request | VocabularyRequest | ConversionRequest> = T extends unknown ? Omit<T, 'id'> : never;

type AnyReply = Reply | VocabularyReply | ConversionReply;

type Pending = { resolve: (reply: AnyReply) => void; reject: (error: Error) => void };

class TokenizerWorker {
  private worker: Worker | undefined;
  private readonly pending = new Map<number, Pending>();
  /** Recipe keys the running worker has been sent. */
  private readonly known = new Set<number>();
  private nextId = 1;
  private idle: NodeJS.Timeout | undefined;

  request(message: Unsent): Promise<AnyReply> {
    const worker = this.running();
    const id = this.nextId++;
    clearTimeout(this.idle);
    worker.ref();
    return new Promise<AnyReply>((resolve, reject) => {
      this.pending.set(id, { resolve, reject });
      worker.postMessage({ ...message, id });
    });
  }

  /**
   * Sends an encode request, with the recipe the first time; the worker keeps a few tokenizers,
   * so one it has let go gets its recipe again.
   */
  async encode(key: number, recipe: Recipe, texts: string[], options: EncodeOptions | undefined): Promise<Int32Array[]> {
    for (let resend = !this.known.has(key); ; resend = true) {
      this.known.add(key);
      try {
        const reply = await this.request({ op: 'encode', key, recipe: resend ? recipe : undefined, texts, options });
        if (!('ids' in reply)) throw new Error('the tokenizer worker replied to an encode request with no ids');
        return reply.ids;
      } catch (error) {
        if (resend || (error as { code?: unknown }).code !== MISSING_RECIPE) throw error;
      }
    }
  }

  private running(): Worker {
    if (this.worker) return this.worker;
    const worker = startWorker();
    worker.on('message', (reply: AnyReply) => {
      const p = this.pending.get(reply.id);
      this.pending.delete(reply.id);
      if (this.pending.size === 0) this.rest(worker);
      if ('error' in reply) p?.reject(receiveError(reply.error));
      else p?.resolve(reply);
    });
    const fail = (error: Error) => {
      if (this.worker !== worker) return;
      this.worker = undefined;
      this.known.clear();
      for (const p of this.pending.values()) p.reject(error);
      this.pending.clear();
    };
    worker.on('error', fail);
    worker.on('exit', (code) => fail(new Error(`the tokenizer worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  /** Lets the process exit while the worker waits, and ends it when it stays idle. */
  private rest(worker: Worker): void {
    worker.unref();
    this.idle = setTimeout(() => {
      if (this.worker !== worker || this.pending.size > 0) return;
      this.worker = undefined;
      this.known.clear();
      void worker.terminate();
    }, IDLE_MS).unref();
  }
}

let shared: TokenizerWorker | undefined;

function tokenizerWorker(): TokenizerWorker {
  return (shared ??= new TokenizerWorker());
}

/** Builds `path` in the worker: the packed tokenizer, or undefined when its kind does not pack. */
export async function loadInWorker(path: string, cacheDir: string | undefined, source: object): Promise<SharedArrayBuffer | undefined> {
  const reply = await tokenizerWorker().request({ op: 'load', path, cacheDir, source });
  return 'packed' in reply ? reply.packed : undefined;
}

/** Texts shorter than this in all (UTF-16 units; ~5 ms of encoding) are encoded on the calling thread. */
export const WORKER_MIN_CHARS = 32768;

/**
 * The ids of each text, as tokenizer.encode gives them, encoded in the worker when the texts are
 * long and the tokenizer is one weightmap loaded (else on the calling thread).
 */
export async function encodeAsync(tokenizer: Tokenizer, texts: readonly string[], options?: EncodeOptions): Promise<number[][]> {
  const entry = recipeOf(tokenizer);
  let chars = 0;
  for (const t of texts) chars += t.length;
  if (!entry || chars < WORKER_MIN_CHARS) return texts.map((t) => tokenizer.encode(t, options));
  const ids = await tokenizerWorker().encode(entry.key, entry.recipe, [...texts], options);
  return ids.map(toArray);
}

/** A plain array of the ids (a loop: Array.from walks a typed array several times slower). */
function toArray(ids: Int32Array): number[] {
  const out = new Array<number>(ids.length);
  for (let i = 0; i < ids.length; i++) out[i] = ids[i];
  return out;
}

/** Converts a weights file's vocabulary in the worker (lib/formats/vocabulary/vocab-offload.ts). */
export async function vocabularyInWorker(job: VocabularyRequest['job']): Promise<VocabularyResult> {
  // The worker itself loads this module too: there (and in any other worker thread) the
  // conversions run in place, which vocab-offload does when the runner throws.
  if (!workerThreads().isMainThread) throw new Error('not on the main thread: the vocabulary is converted in place');
  const reply = await tokenizerWorker().request({ op: 'vocabulary', job });
  if (!('vocabulary' in reply)) throw new Error('the tokenizer worker replied to a vocabulary request with no vocabulary');
  return reply.vocabulary;
}

setVocabularyRunner(vocabularyInWorker);

/** Writes a reader's converted file in the worker (lib/formats/containers/converted-file.ts); 'here' in any other worker thread. */
export async function conversionInWorker(job: ConversionJob): Promise<'written' | 'here'> {
  if (!workerThreads().isMainThread) return 'here';
  const reply = await tokenizerWorker().request({ op: 'conversion', job });
  if (!('written' in reply)) throw new Error('the tokenizer worker replied to a conversion request with no file written');
  return 'written';
}

setConversionRunner(conversionInWorker);
