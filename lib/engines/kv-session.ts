/**
 * The session wrapper every language engine shares (decoder, TLLM, Moondream text): one native
 * session (binding.d.ts NativeSession) with its KV cache and its token ids, calls queued and run one
 * after another in call order, sampling steps in one native call, truncate / abort / dispose with
 * typed errors. Different sessions run concurrently.
 */
import type { NativeSamplingParams, NativeSession, Sampler } from '../addon/binding';
import { AbortError, DisposedError, rangeError } from '../base/errors';
import type { StepOptions } from '../generation/generate';
import { fromNativeError } from './native-errors';

/** The positions a session holds unless the caller says: the model's maximum, capped at 4096. */
export function defaultContextLength(maxSeqLen: number): number {
  return Math.min(maxSeqLen, 4096);
}

export interface KvSessionNames {
  /** The class name used in errors. */
  name: string;
  /** The weights' path, for format errors. */
  weightsPath?: string;
  /** How the model's documentation names its position limit: set, calls are checked against it before anything is fed. */
  limitName?: string;
  /**
   * Every call waits for the next microtask before it reaches the native session, even on an idle
   * session (a dispose() right after the call then rejects it with DisposedError, the decoder's
   * contract); otherwise an idle session starts it at once (a dispose() then aborts it).
   */
  deferStart?: boolean;
}

export abstract class KvSession<S extends NativeSession = NativeSession> {
  private native: S | undefined;
  /** The last queued call: the next one starts when it settles. */
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;
  /** Bumped by abort(): calls queued before it reject instead of starting. */
  private abortEpoch = 0;

  protected constructor(
    session: S,
    private readonly names: KvSessionNames,
    private readonly onDispose: () => void = () => undefined,
  ) {
    this.native = session;
  }

  /** Positions held in the KV cache (the position the next call starts at). */
  get position(): number {
    return this.native?.position ?? 0;
  }

  /** Positions the session can hold. */
  get contextLength(): number {
    return this.native?.contextLength ?? 0;
  }

  /** Bytes of the KV cache (binding.d.ts NativeSession.cacheBytes). */
  get cacheBytes(): number {
    return this.native?.cacheBytes ?? 0;
  }

  /** Bytes of the KV cache allocated now (binding.d.ts NativeSession.allocatedCacheBytes). */
  get allocatedCacheBytes(): number {
    return this.native?.allocatedCacheBytes ?? 0;
  }

  /** The token ids the KV cache holds, oldest first (kept by the native session). */
  get tokens(): Int32Array {
    return this.native?.tokens ?? new Int32Array(0);
  }

  get disposed(): boolean {
    return this.native === undefined || this.native.disposed;
  }

  /** Calls not yet settled (running or queued). */
  get queued(): number {
    return this.pending;
  }

  /**
   * One generation step in one native call: feeds `ids`, then picks the next token from the last
   * position's logits with `sampler` (its generator state carries over between steps), the
   * penalties looking at every token the session holds. Resolves to the token id; the token is
   * not fed yet (pass it to the next step). A Sampler serves one step at a time. `params` is read
   * once per Sampler and object (pass the same object at every step of a generation);
   * `options.allowedTokens` is this step's allowed-token bitset.
   */
  step(ids: ArrayLike<number>, sampler: Sampler, params?: NativeSamplingParams, options: StepOptions = {}): Promise<number> {
    const input = ids instanceof Int32Array ? ids : Int32Array.from(ids);
    return this.enqueue(options.signal, (session) => {
      this.checkFits(session, input.length, 'step: no token ids');
      return session.step(input, sampler, params, options.allowedTokens);
    });
  }

  /**
   * Forgets every position from `n` on (reusing a prompt prefix). Only between calls: throws
   * (code ERR_WEIGHTMAP_BUSY) while one is running or queued.
   */
  truncate(n: number): void {
    const session = this.live();
    if (this.pending > 0) {
      const busy = new Error('truncate() while calls are running or queued on this session; await them first');
      throw Object.assign(busy, { code: 'ERR_WEIGHTMAP_BUSY' });
    }
    try {
      session.truncate(n);
    } catch (error) {
      throw fromNativeError(error, this.names.name);
    }
  }

  /** Stops the running call at its next layer and rejects every queued one with AbortError. */
  abort(): void {
    this.abortEpoch++;
    this.native?.abort();
  }

  /** Frees the KV cache. A running call stops at its next layer; queued calls reject with DisposedError. */
  dispose(): void {
    if (!this.native) return;
    this.native.dispose();
    this.native = undefined;
    this.onDispose();
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.dispose();
  }

  /**
   * @internal For a call over several sessions (DecoderEngine.stepBatch): the native session, held
   * (as if a call ran on it) until `until` settles. Throws ERR_WEIGHTMAP_BUSY unless it is idle.
   */
  holdFor(until: Promise<void>): S {
    const session = this.live();
    if (this.pending > 0) {
      const busy = new Error('a batched step needs idle sessions; this one has calls running or queued');
      throw Object.assign(busy, { code: 'ERR_WEIGHTMAP_BUSY' });
    }
    this.pending++;
    this.tail = until.finally(() => this.pending--);
    return session;
  }

  protected live(): S {
    if (!this.native) throw new DisposedError(this.names.name);
    return this.native;
  }

  /** With a limitName: RangeError (nothing fed) for no positions or a sequence past the context. */
  protected checkFits(session: S, n: number, emptyMessage: string): void {
    if (this.names.limitName === undefined) return;
    if (n === 0) throw rangeError(emptyMessage);
    if (session.position + n > session.contextLength) {
      throw rangeError(`the sequence would hold ${session.position + n} positions, past this model's ${this.names.limitName} ${session.contextLength}`);
    }
  }

  /** Queues `run` after the calls before it, with `signal` wired to the session's abort and native errors typed. */
  protected enqueue<T>(signal: AbortSignal | undefined, run: (session: S) => Promise<T>): Promise<T> {
    const epoch = this.abortEpoch;
    this.pending++;
    const start = async (): Promise<T> => {
      try {
        if (signal?.aborted || epoch !== this.abortEpoch) throw new AbortError(undefined, { cause: signal?.reason });
        const session = this.live();
        const onAbort = () => session.abort();
        signal?.addEventListener('abort', onAbort, { once: true });
        try {
          return await run(session);
        } catch (error) {
          throw fromNativeError(error, this.names.name, this.names.weightsPath);
        } finally {
          signal?.removeEventListener('abort', onAbort);
        }
      } finally {
        this.pending--;
      }
    };
    const result = this.pending === 1 && !this.names.deferStart ? start() : this.tail.then(start, start);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
