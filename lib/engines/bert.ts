/**
 * The native BERT encoder (native/engines/bert.h) seen from TS: builds the tensor-view spec from
 * ModelWeights, loads the encoder (with a cross-encoder's classification head when the config has
 * one), runs packed batches with AbortSignal support and turns native failures into weightmap's
 * error classes.
 */
import type { BertEncoder as NativeBertEncoder, BertEncoderInfo } from '../addon/binding';
import { architectureOf, runsOn } from '../architectures';
import { DisposedError, rangeError, UnsupportedError } from '../base/errors';
import { native } from '../addon/native';
import type { ModelWeights } from '../addon/weights';
import type { BertClassifierConfig, BertConfig } from '../architectures/bert';
import { fromNativeError, withAbort } from './native-errors';
import { nativeWeightsSpec } from './native-spec';

/** How token vectors become a sentence vector: 'mean' (over the attention mask), 'cls' or 'max'. */
export type Pooling = BertConfig['pooling'];

/**
 * How the linear layers run: 'f32' (default: f32 weights, f16 used in place), or quantized once
 * at load with activations quantized on the fly: 'int8' (one scale per output channel and per
 * token: int8 dot products only, the fast path) or 'q8_0' (groups of 32 with a scale each).
 */
export type EmbedderQuant = 'f32' | 'int8' | 'q8_0';
export const EMBEDDER_QUANTS: readonly EmbedderQuant[] = ['f32', 'int8', 'q8_0'];

export interface BertEngineOptions {
  /** Worker threads of the encoder (the calling thread counts); default: the physical cores. */
  threads?: number;
  quant?: EmbedderQuant;
}

export interface EncodeBatchOptions {
  pooling: Pooling;
  normalize: boolean;
  signal?: AbortSignal;
}

/** The configs the BERT engine runs: an embedder's, or a cross-encoder's (with its head). */
export type BertEngineConfig = BertConfig | BertClassifierConfig;

/** A loaded native encoder. One instance serves any number of concurrent calls. */
export class BertEngine {
  private constructor(
    private readonly encoder: NativeBertEncoder,
    readonly config: BertEngineConfig,
    private readonly owner: string,
  ) {}

  static async load(weights: ModelWeights, options: BertEngineOptions = {}): Promise<BertEngine> {
    if (!runsOn(weights.config, 'bert')) {
      throw new UnsupportedError(`${weights.path} holds a ${weights.architecture} model, not a BERT encoder`);
    }
    const config = weights.config as BertEngineConfig;
    const owner = architectureOf(config)!.modelClass;
    const transposed = weights.tensors.find((t) => t.transposed);
    if (transposed) throw new UnsupportedError(`tensor ${transposed.name} is stored [in,out]; the BERT engine takes HF [out,in] matrices`);
    if (options.threads !== undefined && !(Number.isInteger(options.threads) && options.threads >= 0)) {
      throw rangeError(`threads must be a non-negative integer, got ${options.threads}`);
    }
    if (options.quant !== undefined && !EMBEDDER_QUANTS.includes(options.quant)) {
      throw rangeError(`quant must be one of ${EMBEDDER_QUANTS.join(', ')}, got ${String(options.quant)}`);
    }
    try {
      const encoder = await native().BertEncoder.load(nativeWeightsSpec(weights), config, {
        ...(options.threads !== undefined ? { threads: options.threads } : {}),
        ...(options.quant !== undefined ? { quant: options.quant } : {}),
      });
      return new BertEngine(encoder, config, owner);
    } catch (error) {
      throw fromNativeError(error, owner, weights.path);
    }
  }

  get info(): BertEncoderInfo {
    if (this.encoder.disposed) throw new DisposedError(this.owner);
    return this.encoder.info;
  }

  get disposed(): boolean {
    return this.encoder.disposed;
  }

  /**
   * Encodes a packed batch: sequence i is ids[offset_i .. offset_i + lengths[i]). Resolves to
   * Float32Array [lengths.length, hiddenSize].
   */
  async encode(ids: Int32Array, lengths: Int32Array, options: EncodeBatchOptions): Promise<Float32Array> {
    let job: ReturnType<NativeBertEncoder['encode']> | undefined;
    return withAbort(
      () => {
        job = this.encoder.encode(ids, lengths, options.pooling, options.normalize);
        return job.promise;
      },
      () => job?.abort(),
      options.signal,
      this.owner,
    );
  }

  /**
   * A cross-encoder's head on a packed batch (as encode), with one token type per id (null: all
   * 0). Resolves to Float32Array [lengths.length, numLabels] logits.
   */
  async classify(ids: Int32Array, types: Int32Array | null, lengths: Int32Array, signal?: AbortSignal): Promise<Float32Array> {
    let job: ReturnType<NativeBertEncoder['classify']> | undefined;
    return withAbort(
      () => {
        job = this.encoder.classify(ids, types, lengths);
        return job.promise;
      },
      () => job?.abort(),
      signal,
      this.owner,
    );
  }

  /** Releases this handle; calls already running finish, later ones throw DisposedError. */
  dispose(): void {
    this.encoder.dispose();
  }
}
