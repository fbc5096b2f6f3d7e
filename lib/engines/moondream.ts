/**
 * Moondream's engines (native/engines/phi.h, vit.h) behind a promise API: the text model with
 * its sessions, and the vision encoder + projection. Both bind the same mapped MOON weights.
 */
import type { PhiModel, PhiSession, VitModel } from '../addon/binding';
import { runsOn } from '../architectures';
import { DisposedError, rangeError, UnsupportedError } from '../base/errors';
import { native } from '../addon/native';
import type { ModelWeights } from '../addon/weights';
import type { EngineOptions } from './gpt';
import { moondreamTensorSpecs, type MoondreamConfig } from '../architectures/moondream';
import { fromNativeError, withAbort } from './native-errors';
import { nativeWeightsSpec } from './native-spec';
import { KvSession } from './kv-session';
import { requireOrientation } from './orientation';

export type LogitsRows = 'none' | 'last' | 'all';

export interface MoondreamEvalOptions {
  /** Which logits to return: none, the last row's [V] (default), or every row's [n, V]. */
  logits?: LogitsRows;
  /**
   * Positions [0, prefix) attend to each other bidirectionally (upstream Moondream uses 730 =
   * BOS + 729 image positions); default 0, plain causal attention (moondream-zig, the MOON source).
   */
  prefixAttention?: number;
  /** The token ids that name embedding rows in the session's tokens (the penalty history); default -1, none. */
  ids?: ArrayLike<number>;
  signal?: AbortSignal;
}

export interface EncodeOptions {
  /** Also return the post-LN vision features [patches, visionHidden]. */
  features?: boolean;
  signal?: AbortSignal;
}

export interface EncodedImage {
  /** Image embeddings [patches, textHidden], rows of the text model's input. */
  embeddings: Float32Array;
  features?: Float32Array;
}

export class MoondreamEngine {
  readonly config: MoondreamConfig;
  private text: PhiModel | undefined;
  private vision: VitModel | undefined;
  private encoding: Promise<unknown> = Promise.resolve();

  private constructor(config: MoondreamConfig, text: PhiModel, vision: VitModel, private readonly weightsPath: string) {
    this.config = config;
    this.text = text;
    this.vision = vision;
  }

  static async load(weights: ModelWeights, options: EngineOptions = {}): Promise<MoondreamEngine> {
    if (!runsOn(weights.config, 'moondream')) {
      throw new UnsupportedError(`the Moondream engines run Moondream weights, not ${weights.config.architecture}`);
    }
    const config = weights.config;
    // Linear weights are the 2-D `.weight` tensors other than the embeddings.
    const linears = moondreamTensorSpecs(config).filter((t) => t.name.endsWith('.weight') && t.shape.length === 2 && t.name !== 'model.text.wte');
    requireOrientation(weights, linears.filter((t) => !t.visionLinear).map((t) => t.name), false, 'the Moondream text engine');
    requireOrientation(weights, linears.filter((t) => t.visionLinear).map((t) => t.name), true, 'the Moondream vision engine');
    const threads = { threads: options.threads ?? 0 };
    let text: PhiModel | undefined;
    try {
      text = await native().PhiModel.load(nativeWeightsSpec(weights, (n) => n.startsWith('model.text.')), config.text, threads);
      const vision = await native().VitModel.load(
        nativeWeightsSpec(weights, (n) => n.startsWith('model.vision.')),
        { ...config.vision, textHiddenSize: config.text.hiddenSize },
        threads,
      );
      return new MoondreamEngine(config, text, vision, weights.path);
    } catch (error) {
      text?.dispose();
      throw fromNativeError(error, 'MoondreamEngine', weights.path);
    }
  }

  get vocabSize(): number {
    return this.config.text.vocabSize;
  }

  get maxSeqLen(): number {
    return this.config.text.maxSeqLen;
  }

  get threads(): number {
    return this.text?.threads ?? 0;
  }

  get disposed(): boolean {
    return this.text === undefined;
  }

  /** A session; `_contextLength` is the model's context length (its cache grows to it). */
  createSession(_contextLength?: number): MoondreamSession {
    if (!this.text) throw new DisposedError('MoondreamEngine');
    return new MoondreamSession(this.text.createSession(), this.config.text.hiddenSize, this.weightsPath);
  }

  /** Word-embedding rows of `ids` as f32 [ids.length, textHidden]. */
  embed(ids: ArrayLike<number>): Float32Array {
    if (!this.text) throw new DisposedError('MoondreamEngine');
    try {
      return this.text.embed(Int32Array.from(ids));
    } catch (error) {
      throw fromNativeError(error, 'MoondreamEngine');
    }
  }

  /**
   * Encodes RGB bytes already at the encoder's size ([imageSize, imageSize, 3], row-major).
   * Calls queue: one image is encoded at a time.
   */
  encodeRgb(rgb: Uint8Array, options: EncodeOptions = {}): Promise<EncodedImage> {
    const size = this.config.vision.imageSize;
    if (rgb.length !== size * size * 3) {
      throw rangeError(`the vision encoder takes ${size}x${size} RGB (${size * size * 3} bytes), got ${rgb.length} bytes`);
    }
    const run = async (): Promise<EncodedImage> => {
      const vision = this.vision;
      if (!vision) throw new DisposedError('MoondreamEngine');
      return withAbort(() => vision.encode(rgb, options.features ?? false), () => vision.abort(), options.signal, 'MoondreamEngine');
    };
    const result = this.encoding.then(run, run);
    this.encoding = result.catch(() => undefined);
    return result;
  }

  dispose(): void {
    this.text?.dispose();
    this.vision?.dispose();
    this.text = undefined;
    this.vision = undefined;
  }
}

/** Float32Array from any realm (the addon's arrays are not `instanceof` a vm context's). */
function isFloat32Array(x: unknown): x is Float32Array {
  return ArrayBuffer.isView(x) && Object.prototype.toString.call(x) === '[object Float32Array]';
}

export class MoondreamSession extends KvSession<PhiSession> {
  /** @internal Made by MoondreamEngine.createSession. */
  constructor(session: PhiSession, readonly hiddenSize: number, weightsPath: string) {
    super(session, { name: 'MoondreamSession', weightsPath, limitName: 'context length' });
  }

  /**
   * Feeds token ids, or embedding rows (Float32Array [n, textHidden]), after the current position;
   * `ids` names embedding rows in the session's tokens (-1 when absent).
   */
  eval(input: ArrayLike<number> | Float32Array, options: MoondreamEvalOptions = {}): Promise<Float32Array> {
    const rows = isFloat32Array(input) ? input : Int32Array.from(input);
    const n = isFloat32Array(rows) ? rows.length / this.hiddenSize : rows.length;
    if (!Number.isInteger(n)) return Promise.reject(rangeError(`eval: embedding rows must be a whole number of ${this.hiddenSize}-float rows`));
    const prefix = options.prefixAttention ?? 0;
    if (!Number.isInteger(prefix) || prefix < 0) return Promise.reject(rangeError('prefixAttention must be a non-negative integer'));
    const ids = options.ids === undefined ? undefined : Int32Array.from(options.ids);
    return this.enqueue(options.signal, (session) => {
      this.checkFits(session, n, 'eval: no token ids or embedding rows');
      return session.eval(rows, options.logits ?? 'last', { prefix, ...(ids ? { ids } : {}) });
    });
  }
}
