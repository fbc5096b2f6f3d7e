/**
 * Continuous batching for one DecoderEngine: the one-token steps that its sessions ask for while a
 * batched step runs wait, and run together as the next one (DecoderEngine.stepBatch), so the
 * weights are read once per step for every decoding sequence. Sequences join and leave between
 * steps; a sequence that is aborted leaves without disturbing the others.
 *
 *   const loop = new DecodeLoop(engine);
 *   const next = await loop.step(session, token, sampler, params, signal);
 */
import type { NativeSamplingParams, Sampler } from '../addon/binding';
import { AbortError, DisposedError, rangeError } from '../base/errors';

/** What the loop reads of a session to fail a row that cannot run alone, and how it stops one. */
export interface LoopSession {
  readonly disposed: boolean;
  readonly vocabSize: number;
  readonly position: number;
  readonly contextLength: number;
  abort(): void;
}

/** One row of a batched step (DecoderEngine.stepBatch). */
export interface BatchStepRow<S extends LoopSession> {
  session: S;
  /** The token fed at the session's position. */
  token: number;
  sampler: Sampler;
  /** Read once per Sampler and object (NativeSession.step). */
  params?: NativeSamplingParams;
  /** This step's allowed-token bitset. */
  allowedTokens?: Uint32Array;
  /** Aborts this row alone: aborted before the step, the row is left out; during it, not committed. */
  signal?: AbortSignal;
}

/** The engine the loop batches for (DecoderEngine): each row's next token, or AbortError for a row aborted. */
export interface BatchStepper<S extends LoopSession> {
  stepBatch(rows: readonly BatchStepRow<S>[]): Promise<(number | AbortError)[]>;
}

interface Waiting<S extends LoopSession> {
  session: S;
  token: number;
  sampler: Sampler;
  params: NativeSamplingParams | undefined;
  allowedTokens: Uint32Array | undefined;
  signal: AbortSignal | undefined;
  resolve(token: number): void;
  reject(error: unknown): void;
  /** Removes the waiting entry's abort listener. */
  detach(): void;
}

function abortError(signal: AbortSignal | undefined): AbortError {
  return new AbortError(undefined, { cause: signal?.reason });
}

export class DecodeLoop<S extends LoopSession> {
  private waiting: Waiting<S>[] = [];
  private running = false;
  private scheduled = false;
  private readonly stepListeners = new Set<(rows: number) => void>();

  constructor(private readonly engine: BatchStepper<S>) {}

  /** Calls `listener` with the row count of each batched step as it starts (a server's batch-size metric); returns the unsubscribe. */
  onStep(listener: (rows: number) => void): () => void {
    this.stepListeners.add(listener);
    return () => this.stepListeners.delete(listener);
  }

  /**
   * Feeds `token` to `session` and resolves to the next token, drawn with `sampler` as
   * `session.step([token], sampler, params)` draws it, in the next batched step.
   */
  step(session: S, token: number, sampler: Sampler, params: NativeSamplingParams | undefined, signal?: AbortSignal, allowedTokens?: Uint32Array): Promise<number> {
    if (signal?.aborted) return Promise.reject(abortError(signal));
    return new Promise<number>((resolve, reject) => {
      const entry: Waiting<S> = { session, token, sampler, params, allowedTokens, signal, resolve, reject, detach: () => {} };
      if (signal) {
        // While waiting, an abort takes the entry out at once.
        const onAbort = () => this.cancelEntry(entry, abortError(signal));
        signal.addEventListener('abort', onAbort, { once: true });
        entry.detach = () => signal.removeEventListener('abort', onAbort);
      }
      this.waiting.push(entry);
      this.schedule();
    });
  }

  /** Rejects the waiting steps of `session` with AbortError (its running step stops through session.abort()). */
  cancel(session: S): void {
    for (const entry of this.waiting.filter((e) => e.session === session)) this.cancelEntry(entry, abortError(entry.signal));
  }

  private cancelEntry(entry: Waiting<S>, error: unknown): void {
    const i = this.waiting.indexOf(entry);
    if (i < 0) return;
    this.waiting.splice(i, 1);
    entry.detach();
    entry.reject(error);
  }

  /** Starts the next step after the current macrotask, so that every sequence resumed by the last step can join it. */
  private schedule(): void {
    if (this.running || this.scheduled) return;
    this.scheduled = true;
    setImmediate(() => {
      this.scheduled = false;
      void this.run();
    });
  }

  private async run(): Promise<void> {
    if (this.running || this.waiting.length === 0) return;
    this.running = true;
    const rows = this.waiting;
    this.waiting = [];
    const ready: Waiting<S>[] = [];
    for (const row of rows) {
      row.detach();
      // A row that cannot run fails alone rather than failing the step of every row.
      if (row.session.disposed) row.reject(new DisposedError('DecoderEngineSession'));
      else if (!Number.isInteger(row.token) || row.token < 0 || row.token >= row.session.vocabSize) row.reject(rangeError(`token id ${row.token} is outside the vocabulary [0, ${row.session.vocabSize})`))
      else if (row.session.position >= row.session.contextLength) row.reject(rangeError(`the session holds ${row.session.position} of ${row.session.contextLength} positions; 1 more does not fit`));
      else ready.push(row);
    }
    const onAborts = ready.map((row) => {
      const onAbort = () => row.session.abort();
      row.signal?.addEventListener('abort', onAbort, { once: true });
      return onAbort;
    });
    try {
      if (ready.length > 0) {
        for (const listener of this.stepListeners) listener(ready.length);
        const tokens = await this.engine.stepBatch(ready);
        ready.forEach((row, i) => {
          const token = tokens[i];
          if (typeof token === 'number') row.resolve(token);
          else row.reject(abortError(row.signal));
        });
      }
    } catch (error) {
      for (const row of ready) row.reject(error);
    } finally {
      ready.forEach((row, i) => row.signal?.removeEventListener('abort', onAborts[i]));
      this.running = false;
      this.schedule();
    }
  }
}
