/**
 * The TLLM engine (native/engines/gpt.h) behind a promise API: a GptEngine holds the mapped
 * weights and a thread pool, each GptEngineSession one sequence with its KV cache.
 */
import type { GptModel, GptSession } from '../addon/binding';
import { runsOn } from '../architectures';
import { DisposedError, UnsupportedError } from '../base/errors';
import { native } from '../addon/native';
import type { ModelWeights } from '../addon/weights';
import { TLLM_TENSOR_ROLES, tllmTensorSpecs, type TllmConfig } from '../architectures/tllm';
import { fromNativeError } from './native-errors';
import { nativeWeightsSpec } from './native-spec';
import { KvSession } from './kv-session';
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

  private constructor(config: TllmConfig, model: GptModel, private readonly weightsPath: string) {
    this.config = config;
    this.model = model;
  }

  /** Checks every tensor of `weights` against the config (WeightFormatError) and binds them. */
  static async load(weights: ModelWeights, options: EngineOptions = {}): Promise<GptEngine> {
    if (!runsOn(weights.config, 'gpt')) {
      throw new UnsupportedError(`the gpt engine runs TLLM weights, not ${weights.config.architecture}`);
    }
    const config = weights.config;
    const linears = tllmTensorSpecs(config).filter((t) => t.linear).map((t) => t.name);
    requireOrientation(weights, linears, true, 'the gpt engine');
    try {
      const model = await native().GptModel.load({ ...nativeWeightsSpec(weights), names: { ...TLLM_TENSOR_ROLES } }, config, { threads: options.threads ?? 0 });
      return new GptEngine(config, model, weights.path);
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

  /** A session; `_contextLength` is the model's max_sequence_length (its cache grows to it). */
  createSession(_contextLength?: number): GptEngineSession {
    if (!this.model) throw new DisposedError('GptEngine');
    return new GptEngineSession(this.model.createSession(), this.weightsPath);
  }

  /** Releases the weights once every session is disposed too. */
  dispose(): void {
    this.model?.dispose();
    this.model = undefined;
  }
}

export class GptEngineSession extends KvSession<GptSession> {
  /** @internal Made by GptEngine.createSession. */
  constructor(session: GptSession, weightsPath: string) {
    super(session, { name: 'GptEngineSession', weightsPath, limitName: 'max_sequence_length' });
  }

  /**
   * Feeds `ids` after the current position. Rejects with RangeError when the sequence would pass
   * the model's max_sequence_length (nothing is fed then).
   */
  eval(ids: ArrayLike<number>, options: EvalOptions = {}): Promise<Float32Array> {
    const input = Int32Array.from(ids);
    return this.enqueue(options.signal, (session) => {
      this.checkFits(session, input.length, 'eval: no token ids');
      return session.eval(input, options.allLogits ? 'all' : 'last');
    });
  }
}
