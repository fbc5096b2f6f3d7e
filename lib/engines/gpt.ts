/**
 * The TLLM engine (native/engines/gpt.h) behind a promise API: a GptEngine holds the mapped
 * weights and a thread pool, each GptEngineSession one sequence with its KV cache.
 */
import type { GptModel, GptSession, NativeSamplingParams, Sampler } from '../../binding';
import { DisposedError, UnsupportedError } from '../errors';
import { native } from '../native';
import type { ModelWeights, TllmConfig } from '../weights';
import { tllmTensorSpecs } from '../architectures/tllm';
import { fromNativeError, withAbort } from './native-errors';
import { nativeWeightsSpec } from './native-spec';
import { requireOrientation } from './orientation';

export interface EngineOptions {
  /** Worker threads (the calling thread included); default: physical cores. */
  threads?: number;
}

export interface EvalOptions {
  /** Logits of every fed position ([n, V]) instead of the last one only ([V]). */
  allLogits?: boolean;
  signal?: AbortSignal;
}

export class GptEngine {
  readonly config: TllmConfig;
  private model: GptModel | undefined;

  private constructor(config: TllmConfig, model: GptModel) {
    this.config = config;
    this.model = model;
  }

  /** Checks every tensor of `weights` against the config (WeightFormatError) and binds them. */
  static load(weights: ModelWeights, options: EngineOptions = {}): GptEngine {
    if (weights.config.architecture !== 'tllm') {
      throw new UnsupportedError(`the gpt engine runs TLLM weights, not ${weights.config.architecture}`);
    }
    const config = weights.config;
    const linears = tllmTensorSpecs(config).filter((t) => t.linear).map((t) => t.name);
    requireOrientation(weights, linears, true, 'the gpt engine');
    try {
      const model = new (native().GptModel)(nativeWeightsSpec(weights), config, { threads: options.threads ?? 0 });
      return new GptEngine(config, model);
    } catch (error) {
      throw fromNativeError(error, 'GptEngine', weights.path);
    }
  }

  get vocabSize(): number {
    return this.config.vocabSize;
  }

  get maxSeqLen(): number {
    return this.config.maxSeqLen;
  }

  get threads(): number {
    return this.model?.threads ?? 0;
  }

  get disposed(): boolean {
    return this.model === undefined;
  }

  createSession(): GptEngineSession {
    if (!this.model) throw new DisposedError('GptEngine');
    return new GptEngineSession(new (native().GptSession)(this.model), this.config.maxSeqLen);
  }

  /** Releases the weights once every session is disposed too. */
  dispose(): void {
    this.model?.dispose();
    this.model = undefined;
  }
}

export class GptEngineSession {
  private session: GptSession | undefined;
  readonly maxSeqLen: number;

  constructor(session: GptSession, maxSeqLen: number) {
    this.session = session;
    this.maxSeqLen = maxSeqLen;
  }

  /** Positions held in the KV cache. */
  get position(): number {
    return this.session?.position ?? 0;
  }

  /**
   * Feeds `ids` after the current position. Throws RangeError when the sequence would pass the
   * model's max_sequence_length (nothing is fed then).
   */
  async eval(ids: ArrayLike<number>, options: EvalOptions = {}): Promise<Float32Array> {
    const session = this.live();
    this.checkLength(session, ids.length);
    const input = Int32Array.from(ids);
    return withAbort(() => session.eval(input, options.allLogits ?? false), () => session.abort(), options.signal, 'GptEngineSession');
  }

  /**
   * Feeds `ids` and picks the next token in the same native call with `sampler` (its generator
   * state carries over), `recent` being the penalty window. Resolves to the token id.
   */
  async step(
    ids: ArrayLike<number>,
    params: NativeSamplingParams,
    sampler: Sampler,
    recent: Int32Array | undefined,
    options: { signal?: AbortSignal } = {},
  ): Promise<number> {
    const session = this.live();
    this.checkLength(session, ids.length);
    const input = Int32Array.from(ids);
    return withAbort(() => session.step(input, sampler, params, recent), () => session.abort(), options.signal, 'GptEngineSession');
  }

  /** Forgets every position from `n` on. */
  truncate(n: number): void {
    try {
      this.live().truncate(n);
    } catch (error) {
      throw fromNativeError(error, 'GptEngineSession');
    }
  }

  /** Stops a running eval at its next layer (it rejects with AbortError). */
  abort(): void {
    this.session?.abort();
  }

  dispose(): void {
    this.session?.dispose();
    this.session = undefined;
  }

  /** RangeError (nothing fed) for no ids or a sequence past max_sequence_length. */
  private checkLength(session: GptSession, n: number): void {
    if (n === 0) throw new RangeError('eval: no token ids');
    if (session.position + n > this.maxSeqLen) {
      throw new RangeError(`the sequence would hold ${session.position + n} tokens, past this model's max_sequence_length ${this.maxSeqLen}`);
    }
  }

  private live(): GptSession {
    if (!this.session) throw new DisposedError('GptEngineSession');
    return this.session;
  }
}
