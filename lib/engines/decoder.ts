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
import type {
  DecoderLoadInfo,
  DecoderModel as NativeDecoderModel,
  DecoderNativeConfig,
  DecoderSession as NativeDecoderSession,
  NativeSamplingParams,
  Sampler,
} from '../../binding';
import { DECODER_NAMES, DECODER_VARIANTS, decoderTensorShapes, isDecoderConfig } from '../architectures/decoder';
import { AbortError, DisposedError, UnsupportedError, WeightFormatError } from '../errors';
import { native } from '../native';
import type { DecoderConfig, ModelWeights } from '../weights';
import { fromNativeError } from './native-errors';
import { nativeWeightsSpec } from './native-spec';

export type { DecoderLoadInfo } from '../../binding';

export interface DecoderLoadOptions {
  /** Worker threads of the model (the calling thread counts as one). Default: physical cores. */
  threads?: number;
  /**
   * What to do with the weights at load. Default 'none': use them as stored (Q8_0 with int8
   * kernels and runq-style Q8_0 activations, f32/f16 with the float kernels; bf16 becomes f32;
   * GGUF block types, Q8_0 included, run in place against 8-bit activations). 'q8_0': quantize f32/f16/bf16 matrices to Q8_0 (faster,
   * approximate). 'f32': dequantize everything to f32 (the exact path: no activation quantization).
   */
  quant?: 'none' | 'q8_0' | 'f32';
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
   * Element type of the KV cache. 'f32' (default) is exact; 'f16' halves the cache and the bytes
   * read per decoded token (which grow with the context), rounding keys and values to f16.
   */
  kvCache?: 'f32' | 'f16';
}

export interface EvalOptions {
  /** Return the logits of every new position [n, vocab] instead of only the last [vocab]. */
  allLogits?: boolean;
  signal?: AbortSignal;
}

/** One row of DecoderEngine.stepBatch. */
export interface BatchStepRow {
  session: DecoderEngineSession;
  /** The token fed at the session's position. */
  token: number;
  sampler: Sampler;
  params?: NativeSamplingParams;
  /** Aborts this row alone: aborted before the step, the row is left out; during it, not committed. */
  signal?: AbortSignal;
}

const DEFAULT_CONTEXT = 4096;

/** The config fields the native engine reads. */
function nativeConfig(c: DecoderConfig): DecoderNativeConfig {
  const { hiddenSize, intermediateSize, numLayers, numHeads, numKvHeads, headDim, vocabSize, maxSeqLen } = c;
  const { rmsNormEps, ropeTheta, ropePairing, tieWordEmbeddings, qkNorm, qkvBias, ropeFreqFactors } = c;
  return {
    hiddenSize, intermediateSize, numLayers, numHeads, numKvHeads, headDim, vocabSize, maxSeqLen, rmsNormEps, ropeTheta, ropePairing, tieWordEmbeddings, qkNorm,
    qkvBias: qkvBias ?? false,
    ...(ropeFreqFactors ? { ropeFreqFactors } : {}),
  };
}

/** The tensors of `weights` the decoder reads, as native views (the native side checks them all again). */
export function decoderWeightsSpec(weights: ModelWeights) {
  const c = weights.config;
  if (!isDecoderConfig(c)) {
    throw new UnsupportedError(`the decoder engine runs ${Object.keys(DECODER_VARIANTS).join(', ')} models, not '${c.architecture}'`);
  }
  const needed = new Set(decoderTensorShapes(c).map((t) => t.name));
  if (c.tieWordEmbeddings) needed.delete(DECODER_NAMES.lmHead);
  // Matrices stored transposed (Fortran-order .npy) are transposed once at load (loadInfo.converted).
  return { spec: nativeWeightsSpec(weights, (name) => needed.has(name), true), config: nativeConfig(c) };
}

export class DecoderEngine {
  readonly config: DecoderConfig;
  /** What preparing the weights cost (time, bytes copied, matrices converted), and the ISA and threads. */
  readonly loadInfo: DecoderLoadInfo;
  private native: NativeDecoderModel | undefined;
  private readonly sessions = new Set<DecoderEngineSession>();

  private constructor(model: NativeDecoderModel, config: DecoderConfig, private readonly weightsPath: string) {
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
    return new DecoderEngine(model, weights.config as DecoderConfig, weights.path);
  }

  get disposed(): boolean {
    return this.native === undefined;
  }

  createSession(options: SessionOptions = {}): DecoderEngineSession {
    if (!this.native) throw new DisposedError('DecoderEngine');
    const contextLength = options.contextLength ?? Math.min(this.config.maxSeqLen, DEFAULT_CONTEXT);
    let session: NativeDecoderSession;
    try {
      session = this.native.createSession({ contextLength, ...(options.kvCache ? { kvCache: options.kvCache } : {}) });
    } catch (error) {
      throw fromNativeError(error, 'DecoderEngine', this.weightsPath);
    }
    const wrapped = new DecoderEngineSession(session, this.config.vocabSize, this.weightsPath, () => this.sessions.delete(wrapped));
    this.sessions.add(wrapped);
    return wrapped;
  }

  /**
   * One decode step of several sessions of this engine together: row i feeds `token` at its
   * session's position and picks the next token with its `sampler` and `params`, exactly as
   * `session.step([token], sampler, params)` would, but the weights are read once for all rows.
   * The sessions must be distinct and idle (no call running or queued: ERR_WEIGHTMAP_BUSY).
   * Resolves to each row's token, or an AbortError for a row whose session or signal was aborted
   * (that session keeps its position; the other rows are unaffected).
   */
  async stepBatch(rows: readonly BatchStepRow[]): Promise<(number | AbortError)[]> {
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
      const tokens = await model.stepBatch(natives, ids, live.map((i) => rows[i].sampler), live.map((i) => rows[i].params));
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

  /** Frees the model and every session made from it. Calls in flight stop at their next layer. */
  dispose(): void {
    for (const s of [...this.sessions]) s.dispose();
    this.native?.dispose();
    this.native = undefined;
  }
}

export class DecoderEngineSession {
  private native: NativeDecoderSession | undefined;
  /** The last queued call: the next one starts when it settles. */
  private tail: Promise<unknown> = Promise.resolve();
  private pending = 0;
  /** Bumped by abort(): calls queued before it reject instead of starting. */
  private abortEpoch = 0;

  /** @internal Made by DecoderEngine.createSession. */
  constructor(
    session: NativeDecoderSession,
    readonly vocabSize: number,
    private readonly weightsPath: string,
    private readonly onDispose: () => void,
  ) {
    this.native = session;
  }

  /** Tokens in the KV cache (the position the next eval starts at). */
  get position(): number {
    return this.native?.position ?? 0;
  }

  get contextLength(): number {
    return this.native?.contextLength ?? 0;
  }

  /** Bytes reserved for the KV cache (pages are committed as positions fill). */
  get cacheBytes(): number {
    return this.native?.cacheBytes ?? 0;
  }

  get disposed(): boolean {
    return this.native === undefined || this.native.disposed;
  }

  /**
   * Appends `ids` at the current position and runs them through the model as one batch.
   * Resolves to the logits of the last new position [vocab], or of every new position
   * [ids.length, vocab] with `allLogits`. Rejects with AbortError when `signal` fires (the
   * session's position is then unchanged) and RangeError (code ERR_WEIGHTMAP_CONTEXT_FULL) when
   * the ids do not fit the context.
   */
  eval(ids: ArrayLike<number>, options: EvalOptions = {}): Promise<Float32Array> {
    const input = ids instanceof Int32Array ? ids : Int32Array.from(ids);
    return this.enqueue(options.signal, (session) => session.eval(input, options.allLogits === true));
  }

  /**
   * eval() for an engine loaded with `layers` starting past 0 (a pipeline stage): `hidden`
   * [n, hiddenSize] enters its first layer. An engine whose layers end before the last resolves
   * (here and from eval()) to the hidden states of every new position [n, hiddenSize].
   */
  evalHidden(hidden: Float32Array, options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    return this.enqueue(options.signal, (session) => session.evalHidden(hidden));
  }

  /**
   * One generation step in one native call: evaluates `ids` like eval(), then picks the next token
   * from the last position's logits with `sampler` (its generator state carries over between
   * steps), the penalties looking at every token the session holds. Resolves to the token id; the
   * token is not fed yet (pass it to the next step). A Sampler serves one step at a time.
   */
  step(ids: ArrayLike<number>, sampler: Sampler, params: NativeSamplingParams = {}, options: { signal?: AbortSignal } = {}): Promise<number> {
    const input = ids instanceof Int32Array ? ids : Int32Array.from(ids);
    return this.enqueue(options.signal, (session) => session.step(input, sampler, params));
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
      throw fromNativeError(error, 'DecoderEngineSession');
    }
  }

  /** Stops the running call and rejects every queued one with AbortError. */
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
   * @internal For DecoderEngine.stepBatch: the native session, held (as if a call ran on it) until
   * `until` settles. Throws ERR_WEIGHTMAP_BUSY unless the session is idle.
   */
  holdFor(until: Promise<void>): NativeDecoderSession {
    const session = this.live();
    if (this.pending > 0) {
      const busy = new Error('a batched step needs idle sessions; this one has calls running or queued');
      throw Object.assign(busy, { code: 'ERR_WEIGHTMAP_BUSY' });
    }
    this.pending++;
    this.tail = until.finally(() => this.pending--);
    return session;
  }

  /** Calls not yet settled (running or queued). */
  get queued(): number {
    return this.pending;
  }

  private live(): NativeDecoderSession {
    if (!this.native) throw new DisposedError('DecoderEngineSession');
    return this.native;
  }

  private enqueue<T>(signal: AbortSignal | undefined, run: (session: NativeDecoderSession) => Promise<T>): Promise<T> {
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
          throw fromNativeError(error, 'DecoderEngineSession', this.weightsPath);
        } finally {
          signal?.removeEventListener('abort', onAbort);
        }
      } finally {
        this.pending--;
      }
    };
    const result = this.tail.then(start, start);
    this.tail = result.then(
      () => undefined,
      () => undefined,
    );
    return result;
  }
}
