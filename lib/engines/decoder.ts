/**
 * The Llama/Qwen2/Qwen3 decoder engine (native/engines/decoder*): loads ModelWeights into the native
 * engine with the tensors used in place from their mappings, and runs sessions (one KV cache
 * each). Calls on one session run one after another, in call order; different sessions and models
 * run concurrently.
 *
 *   const engine = await DecoderEngine.load(weights, { threads: 2 });
 *   const session = engine.createSession({ contextLength: 2048 });
 *   const logits = await session.eval(promptIds);        // Float32Array [vocab], last position
 */
import type { DecoderLoadInfo, DecoderModel as NativeDecoderModel, DecoderSession as NativeDecoderSession, NativeSamplingParams, Sampler } from '../addon/binding';
import {
  DECODER_NAMES,
  DECODER_TENSOR_ROLES,
  DECODER_VARIANTS,
  decoderTensorShapes,
  expertCountsProblem,
  isDecoderConfig,
  MAX_EXPERTS,
  type DecoderConfig,
  type DecoderQuant,
  type KvCacheType,
} from '../architectures/decoder';
import { AbortError, DisposedError, rangeError, UnsupportedError, WeightFormatError } from '../base/errors';
import { native } from '../addon/native';
import type { ModelWeights } from '../addon/weights';
import { DecodeLoop, type BatchStepRow } from './decode-loop';
import type { StepOptions } from '../generation/generate';
import { defaultContextLength, KvSession } from './kv-session';
import { fromNativeError, withAbort } from './native-errors';
import { nativeWeightsSpec } from './native-spec';

export type { DecoderLoadInfo } from '../addon/binding';

export interface DecoderLoadOptions {
  /** Worker threads of the model (the calling thread counts as one). Default: physical cores. */
  threads?: number;
  /**
   * What to do with the weights at load. Default 'none': use them as stored (Q8_0 with int8
   * kernels and runq-style Q8_0 activations, f32/f16 with the float kernels; bf16 becomes f32;
   * GGUF block types, Q8_0 included, run in place against 8-bit activations). 'q8_0': quantize f32/f16/bf16 matrices to Q8_0 (faster,
   * approximate). 'f32': dequantize everything to f32 (the exact path: no activation quantization).
   */
  quant?: DecoderQuant;
  /** Q8_0 group size for quant 'q8_0' (matrices whose rows it does not divide stay as stored). Default 32. */
  groupSize?: number;
  /**
   * A pipeline stage (lib/pipeline): only layers [first, end) run; `weights` need hold only their
   * tensors (the embedding when first is 0, the final norm and lm_head when end is numLayers).
   */
  layers?: readonly [first: number, end: number];
}

export interface SessionOptions {
  /** Positions the KV cache holds. Default: the model's maximum, capped at 4096. */
  contextLength?: number;
  /**
   * Element type of the KV cache. 'f16' halves the cache and the bytes read per decoded token
   * (which grow with the context) against 'f32', which is exact; 'q8_0' stores int8 keys and values
   * with one f32 scale per 32 (per row when headDim is not a multiple of 32; 0.56 of f16's bytes at
   * headDim 128): the smallest and the least exact. Default: 'f16' when the weights run with 8-bit
   * activations (Q8_0 and GGUF block matrices: f16's rounding is far below theirs), else 'f32' (the
   * exact path stays exact).
   */
  kvCache?: KvCacheType;
  /**
   * One-token steps of this session run together with those of the engine's other batched sessions
   * (continuous batching, lib/engines/decode-loop.ts): each weight block is read once per step for all.
   */
  batched?: boolean;
}

export interface EvalOptions {
  /** Return the logits of every new position [n, vocab] instead of only the last [vocab]. */
  allLogits?: boolean;
  signal?: AbortSignal;
}

/** The tensors of `weights` the decoder reads, as native views (the native side checks them all again). */
export function decoderWeightsSpec(weights: ModelWeights) {
  const c = weights.config;
  if (!isDecoderConfig(c)) {
    throw new UnsupportedError(`the decoder engine runs ${Object.keys(DECODER_VARIANTS).join(', ')} models, not '${c.architecture}'`);
  }
  // Counts a reader would have refused, before the expert table is listed for them.
  const problem = c.numExperts === undefined ? undefined : expertCountsProblem(c);
  if (problem) throw new WeightFormatError('CONFIG_MISMATCH', `numExperts must be in 1..${MAX_EXPERTS}, numExpertsPerToken in 1..numExperts: ${problem}`, { path: weights.path, found: { numExperts: c.numExperts, numExpertsPerToken: c.numExpertsPerToken } });
  const needed = new Set(decoderTensorShapes(c).map((t) => t.name));
  if (c.tieWordEmbeddings) needed.delete(DECODER_NAMES.lmHead);
  // Matrices stored transposed (Fortran-order .npy) are transposed once at load (loadInfo.converted).
  // The config crosses as it is (native/napi/decoder_config.cc reads its fields by these names), as
  // a copy the caller may edit.
  // The native engine asks the spec for each tensor by role (DECODER_TENSOR_ROLES): it spells no name.
  return { spec: { ...nativeWeightsSpec(weights, (name) => needed.has(name), true), names: { ...DECODER_TENSOR_ROLES } }, config: { ...c } };
}

export class DecoderEngine {
  readonly config: DecoderConfig;
  /** What preparing the weights cost (time, bytes copied, matrices converted), and the ISA and threads. */
  readonly loadInfo: DecoderLoadInfo;
  private native: NativeDecoderModel | undefined;
  private readonly sessions = new Set<DecoderEngineSession>();
  private loop: DecodeLoop<DecoderEngineSession> | undefined;

  private constructor(
    model: NativeDecoderModel,
    config: DecoderConfig,
    private readonly weightsPath: string,
    /** The engine runs from layer 0 (it embeds token ids; evalHidden is a pipeline stage's). */
    private readonly embeds: boolean,
  ) {
    this.native = model;
    this.config = config;
    this.loadInfo = model.loadInfo;
  }

  static async load(weights: ModelWeights, options: DecoderLoadOptions = {}): Promise<DecoderEngine> {
    const { layers, ...rest } = options;
    const nativeOptions = layers ? { ...rest, firstLayer: layers[0], endLayer: layers[1] } : rest;
    // A last stage without the embedding reads the head from lm_head (sepweight writes it even when tied).
    const c = weights.config as DecoderConfig;
    const untie = layers && layers[0] > 0 && c.tieWordEmbeddings && weights.tensors.some((t) => t.name === DECODER_NAMES.lmHead);
    const { spec, config } = decoderWeightsSpec(untie ? { ...weights, config: { ...c, tieWordEmbeddings: false } } : weights);
    let model: NativeDecoderModel;
    try {
      model = await native().DecoderModel.load(spec, config, nativeOptions);
    } catch (error) {
      throw fromNativeError(error, 'DecoderEngine', weights.path);
    }
    return new DecoderEngine(model, weights.config as DecoderConfig, weights.path, (layers?.[0] ?? 0) === 0);
  }

  get disposed(): boolean {
    return this.native === undefined;
  }

  get vocabSize(): number {
    return this.config.vocabSize;
  }

  get threads(): number {
    return this.loadInfo.threads;
  }

  get isa(): string {
    return this.loadInfo.isa;
  }

  createSession(options: SessionOptions = {}): DecoderEngineSession {
    if (!this.native) throw new DisposedError('DecoderEngine');
    const contextLength = options.contextLength ?? defaultContextLength(this.config.maxSeqLen);
    let session: NativeDecoderSession;
    try {
      session = this.native.createSession({ contextLength, ...(options.kvCache ? { kvCache: options.kvCache } : {}) });
    } catch (error) {
      throw fromNativeError(error, 'DecoderEngine', this.weightsPath);
    }
    const loop = options.batched ? (this.loop ??= new DecodeLoop(this)) : undefined;
    const wrapped = new DecoderEngineSession(session, this.config.vocabSize, this.weightsPath, () => this.sessions.delete(wrapped), loop, this.embeds);
    this.sessions.add(wrapped);
    return wrapped;
  }

  /** Calls `listener` with the row count of each batched step of this engine's batched sessions; returns the unsubscribe. */
  onBatchStep(listener: (rows: number) => void): () => void {
    return (this.loop ??= new DecodeLoop(this)).onStep(listener);
  }

  /**
   * One decode step of several sessions of this engine together: row i feeds `token` at its
   * session's position and picks the next token with its `sampler`, `params` and `allowedTokens`,
   * exactly as `session.step([token], sampler, params, { allowedTokens })` would, but the weights are read once for all rows.
   * The sessions must be distinct and idle (no call running or queued: ERR_WEIGHTMAP_BUSY).
   * Resolves to each row's token, or an AbortError for a row whose session or signal was aborted
   * (that session keeps its position; the other rows are unaffected).
   */
  async stepBatch(rows: readonly BatchStepRow<DecoderEngineSession>[]): Promise<(number | AbortError)[]> {
    if (!this.native) throw new DisposedError('DecoderEngine');
    const model = this.native;
    const out: (number | AbortError)[] = rows.map(() => new AbortError());
    const live = rows.flatMap((row, i) => (row.signal?.aborted ? [] : [i]));
    if (live.length === 0) return out;
    let settle!: () => void;
    const settled = new Promise<void>((resolve) => (settle = resolve));
    const unlisten: (() => void)[] = [];
    try {
      const natives = live.map((i) => rows[i].session.holdFor(settled));
      for (const i of live) {
        const { signal, session } = rows[i];
        if (!signal) continue;
        const onAbort = () => session.abort();
        signal.addEventListener('abort', onAbort, { once: true });
        unlisten.push(() => signal.removeEventListener('abort', onAbort));
      }
      const ids = Int32Array.from(live, (i) => rows[i].token);
      const tokens = await model.stepBatch(
        natives,
        ids,
        live.map((i) => rows[i].sampler),
        live.map((i) => rows[i].params),
        live.map((i) => rows[i].allowedTokens),
      );
      live.forEach((i, j) => {
        if (tokens[j] >= 0) out[i] = tokens[j];
      });
      return out;
    } catch (error) {
      throw fromNativeError(error, 'DecoderEngine', this.weightsPath);
    } finally {
      for (const off of unlisten) off();
      settle();
    }
  }

  /**
   * The embedding models' output mode (no head, no sampler): the packed sequences
   * ids[offset_i .. offset_i + lengths[i]), each from position 0 in a one-pass KV cache of its own,
   * run in one pass of the layers; resolves to the final hidden state (after the final norm) of
   * each sequence's last token ('last') or the mean of its tokens' ('mean'), Float32Array
   * [lengths.length, hiddenSize]. At most 65536 tokens in one call.
   */
  async pool(ids: Int32Array, lengths: Int32Array, pooling: 'last' | 'mean', signal?: AbortSignal): Promise<Float32Array> {
    if (!this.native) throw new DisposedError('DecoderEngine');
    const model = this.native;
    let job: ReturnType<NativeDecoderModel['pool']> | undefined;
    return withAbort(
      () => {
        job = model.pool(ids, lengths, pooling);
        return job.promise;
      },
      () => job?.abort(),
      signal,
      'DecoderEngine',
    );
  }

  /** Frees the model and every session made from it. Calls in flight stop at their next layer. */
  dispose(): void {
    for (const s of [...this.sessions]) s.dispose();
    this.native?.dispose();
    this.native = undefined;
  }
}

/** Options of DecoderEngineSession.evalRows. */
export interface RowsEvalOptions {
  /** The ids that name the rows in the session's tokens (the penalty history); default -1. */
  ids?: ArrayLike<number>;
  /** The rows attend to each other, not only to earlier positions. */
  bidirectional?: boolean;
  /** Which logits to return: none, the last row's (default) or every row's. */
  logits?: 'none' | 'last' | 'all';
  signal?: AbortSignal;
}

export class DecoderEngineSession extends KvSession<NativeDecoderSession> {
  /** @internal Made by DecoderEngine.createSession; `loop`: one-token steps join its batched steps. */
  constructor(
    session: NativeDecoderSession,
    readonly vocabSize: number,
    weightsPath: string,
    onDispose: () => void,
    private readonly loop?: DecodeLoop<DecoderEngineSession>,
    private readonly embeds = true,
  ) {
    super(session, { name: 'DecoderEngineSession', weightsPath, deferStart: true }, onDispose);
  }

  /**
   * Appends `ids` at the current position and runs them through the model as one batch.
   * Resolves to the logits of the last new position [vocab], or of every new position
   * [ids.length, vocab] with `allLogits`. Rejects with AbortError when `signal` fires (the
   * session's position is then unchanged) and RangeError when the ids do not fit the context.
   */
  eval(ids: ArrayLike<number>, options: EvalOptions = {}): Promise<Float32Array> {
    const input = ids instanceof Int32Array ? ids : Int32Array.from(ids);
    return this.enqueue(options.signal, (session) => session.eval(input, options.allLogits === true ? 'all' : 'last'));
  }

  /** The logits after every one of `ids` [ids.length, vocab], each row bitwise a one-token eval's at its position (LanguageSession.evalSteps). */
  evalSteps(ids: ArrayLike<number>, options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    const input = ids instanceof Int32Array ? ids : Int32Array.from(ids);
    return this.enqueue(options.signal, (session) => session.eval(input, 'steps'));
  }

  /**
   * eval() for an engine loaded with `layers` starting past 0 (a pipeline stage): `hidden`
   * [n, hiddenSize] enters its first layer. An engine whose layers end before the last resolves
   * (here and from eval()) to the hidden states of every new position [n, hiddenSize].
   */
  evalHidden(hidden: Float32Array, options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    if (this.embeds) {
      return Promise.reject(rangeError('evalHidden: this engine starts at layer 0 and takes token ids (evalRows for embedding rows)'));
    }
    return this.enqueue(options.signal, (session) => session.eval(hidden));
  }

  /**
   * Input rows [n, hiddenSize] after the current position of an engine that starts at layer 0
   * (image embeddings): they enter the first layer as they are, without the token embeddings'
   * scale. `ids` name them in the session's tokens (default -1, no token); `bidirectional`: the
   * rows also attend to each other (Gemma 3's image tokens; one batch of at most 512 rows).
   */
  evalRows(rows: Float32Array, options: RowsEvalOptions = {}): Promise<Float32Array> {
    const ids = options.ids === undefined ? undefined : Int32Array.from(options.ids);
    return this.enqueue(options.signal, (session) =>
      session.eval(rows, options.logits ?? 'last', { ...(ids ? { ids } : {}), ...(options.bidirectional ? { bidirectional: true } : {}) }),
    );
  }

  /**
   * The bytes allocatedCacheBytes will be once the cache has room for `positions`: the decoder's
   * growth rule (binding.d.ts: to twice its positions or to those needed, whichever is more, up to
   * the context; cacheBytes is the full context's).
   */
  allocatedCacheBytesFor(positions: number): number {
    const session = this.live();
    const perPosition = session.cacheBytes / session.contextLength;
    const rows = Math.round(session.allocatedCacheBytes / perPosition);
    if (positions <= rows) return session.allocatedCacheBytes;
    return Math.min(session.contextLength, Math.max(positions, 2 * rows)) * perPosition;
  }

  /** KvSession.step; a one-token step of a session made with `batched` runs in the engine's next batched step. */
  override step(ids: ArrayLike<number>, sampler: Sampler, params?: NativeSamplingParams, options: StepOptions = {}): Promise<number> {
    if (this.loop && ids.length === 1) return this.loop.step(this, ids[0], sampler, params, options.signal, options.allowedTokens);
    return super.step(ids, sampler, params, options);
  }

  override abort(): void {
    this.loop?.cancel(this);
    super.abort();
  }
}
