/**
 * What every language-model session wrapper shares (TLLM, Moondream text): one native session
 * with its KV cache, a context limit checked before anything is fed, sampling steps in one
 * native call, truncate / abort / dispose with typed errors.
 */
import type { NativeSamplingParams, Sampler } from '../../binding';
import { DisposedError, rangeError } from '../errors';
import { fromNativeError, withAbort } from './native-errors';

/** The native calls a KV-cached session offers. */
export interface NativeKvSession {
  readonly position: number;
  step(ids: Int32Array, sampler: Sampler, params: NativeSamplingParams, recent?: Int32Array): Promise<number>;
  truncate(n: number): void;
  abort(): void;
  dispose(): void;
}

export abstract class KvSession<S extends NativeKvSession> {
  private session: S | undefined;

  /**
   * @param name       the class name used in errors
   * @param maxSeqLen  positions the model can hold
   * @param limitName  how the model's documentation names that limit, for error messages
   */
  protected constructor(
    session: S,
    private readonly name: string,
    readonly maxSeqLen: number,
    private readonly limitName: string,
  ) {
    this.session = session;
  }

  /** Positions held in the KV cache. */
  get position(): number {
    return this.session?.position ?? 0;
  }

  /**
   * Feeds token ids and picks the next token in the same native call with `sampler` (its
   * generator state carries over), `recent` being the penalty window. Resolves to the token id.
   */
  async step(
    ids: ArrayLike<number>,
    params: NativeSamplingParams,
    sampler: Sampler,
    recent: Int32Array | undefined,
    options: { signal?: AbortSignal } = {},
  ): Promise<number> {
    const session = this.live();
    this.checkCapacity(session, ids.length, 'step: no token ids');
    const input = Int32Array.from(ids);
    return this.run(session, () => session.step(input, sampler, params, recent), options.signal);
  }

  /** Forgets every position from `n` on. */
  truncate(n: number): void {
    try {
      this.live().truncate(n);
    } catch (error) {
      throw fromNativeError(error, this.name);
    }
  }

  /** Stops a running call at its next layer (it rejects with AbortError). */
  abort(): void {
    this.session?.abort();
  }

  dispose(): void {
    this.session?.dispose();
    this.session = undefined;
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.dispose();
  }

  protected live(): S {
    if (!this.session) throw new DisposedError(this.name);
    return this.session;
  }

  /** RangeError (nothing fed) for no positions or a sequence past the model's limit. */
  protected checkCapacity(session: S, n: number, emptyMessage: string): void {
    if (n === 0) throw rangeError(emptyMessage);
    if (session.position + n > this.maxSeqLen) {
      throw rangeError(`the sequence would hold ${session.position + n} positions, past this model's ${this.limitName} ${this.maxSeqLen}`);
    }
  }

  /** Runs a native call with `signal` wired to the session's abort flag and native errors typed. */
  protected run<T>(session: S, call: () => Promise<T>, signal: AbortSignal | undefined): Promise<T> {
    return withAbort(call, () => session.abort(), signal, this.name);
  }
}
