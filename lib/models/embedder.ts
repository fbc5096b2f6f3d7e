/**
 * Sentence embeddings: `loadEmbedder(path)` for EMBD files and Hugging Face sentence-transformers
 * folders, `embedder.embed(texts)`, `similarity(a, b)`.
 *
 *   const embedder = await loadEmbedder('all-MiniLM-L6-v2.embd');
 *   const [a, b] = await embedder.embed(['first sentence', 'second one']);
 *   similarity(a, b);
 *
 * Texts are tokenized (truncated to the model's max_seq_length), sorted by length and cut into
 * batches of `batchSize`; each batch runs natively as one packed GEMM batch (no padding rows),
 * so a text's vector does not depend on the batch it lands in. The activations of the largest
 * batch stay allocated for the next call (one set per call running at once) until dispose().
 */
import { BertEngine, type EmbedderQuant, type Pooling } from '../engines/bert';
import { AbortError, DisposedError, rangeError, UnsupportedError } from '../base/errors';
import { readWeights } from '../formats';
import type { Tokenizer } from '../tokenizers';
import { encodeAsync } from '../tokenizer-loading';
import { modelFolder, resolveTokenizer } from '../tokenizer-loading/resolve';
import { closeWeights, type FormatName, type ModelWeights } from '../addon/weights';
import { bertMaxSequence, type BertConfig } from '../architectures/bert';
import { architectureOf, runsOn, type EngineName } from '../architectures';

/** The engines of loadEmbedder by registry name (the entry's engine, for an entry whose model class is Embedder). */
const EMBEDDER_ENGINES: Partial<Record<EngineName, (weights: ModelWeights, options: LoadEmbedderOptions) => Promise<BertEngine>>> = {
  bert: (weights, options) => BertEngine.load(weights, { threads: options.threads, quant: options.quant }),
};

export type { EmbedderQuant, Pooling } from '../engines/bert';

/** Options of `loadEmbedder()`. */
export interface LoadEmbedderOptions {
  /** Encoder threads (the calling thread counts); default: the physical cores. */
  threads?: number;
  /** 'int8' (fastest) or 'q8_0': int8 linear layers quantized once at load; default 'f32'. See EmbedderQuant. */
  quant?: EmbedderQuant;
  /** Truncation length in tokens, [CLS]/[SEP] included; default the model's max_seq_length. */
  maxSeqLength?: number;
  /** A tokenizer file/folder or a Tokenizer, instead of the one in or beside the weights. */
  tokenizer?: string | Tokenizer;
  /** Input format (default: detected). */
  format?: FormatName;
  /** Verify the file's checksums where the format has them (EMBD); default true. */
  verifyChecksums?: boolean;
}

/** Options of `embedder.embed()` and `embedTokens()`. */
export interface EmbedOptions {
  /** Texts per native call; default 32. */
  batchSize?: number;
  /** L2-normalize each vector (norm clamped at 1e-12); default: the model's setting (true for EMBD and MiniLM). */
  normalize?: boolean;
  /** 'mean' over the tokens ([CLS] and [SEP] included), 'cls' (first token) or 'max'; default: the model's. */
  pooling?: Pooling;
  /**
   * Matryoshka truncation: keep the first `dimensions` components of each vector (1 to
   * `embedder.dimension`), L2-normalized again when `normalize` is on; default: all of them.
   */
  dimensions?: number;
  signal?: AbortSignal;
}

/** What a loaded embedder is and how it runs (`embedder.info`). */
export interface EmbedderInfo {
  path: string;
  format: FormatName;
  threads: number;
  quant: EmbedderQuant;
  /** The kernel set in use ("avx2", "avx512", ...). */
  isa: string;
  /** Bytes the engine copied at load (biases and norms; all the linear layers when quantized). */
  copiedBytes: number;
  loadMs: number;
}

const DEFAULT_BATCH = 32;
/**
 * Most tokens in one native call: its activations take ~(6·H + I)·4 bytes per token (~16 MB per
 * 1,000 tokens for MiniLM), so a batch past this is cut in two (vectors do not depend on the cut).
 */
const MAX_BATCH_TOKENS = 16384;

function abortError(signal: AbortSignal): AbortError {
  return new AbortError(undefined, { cause: signal.reason });
}

/** `vector` scaled in place to unit L2 norm (the norm clamped at 1e-12, as the engine's normalization). */
function l2Normalized(vector: Float32Array): Float32Array {
  let sum = 0;
  for (const x of vector) sum += x * x;
  const scale = 1 / Math.max(Math.sqrt(sum), 1e-12);
  for (let i = 0; i < vector.length; i++) vector[i] *= scale;
  return vector;
}

/** A loaded BERT sentence embedder (`loadEmbedder()`): `embed(texts)` gives one Float32Array per text. */
export class Embedder {
  /** Length of every vector. */
  readonly dimension: number;
  /** Truncation length in tokens ([CLS] and [SEP] included). */
  readonly maxSeqLength: number;
  private closed = false;

  constructor(
    private readonly engine: BertEngine,
    private readonly weights: ModelWeights,
    readonly tokenizer: Tokenizer,
    readonly config: BertConfig,
    maxSeqLength: number,
  ) {
    this.dimension = config.hiddenSize;
    this.maxSeqLength = maxSeqLength;
  }

  get info(): EmbedderInfo {
    this.assertOpen();
    const i = this.engine.info;
    return {
      path: this.weights.path,
      format: this.weights.format,
      threads: i.threads,
      quant: i.quant,
      isa: i.isa,
      copiedBytes: i.copiedBytes,
      loadMs: i.loadMs,
    };
  }

  get disposed(): boolean {
    return this.closed;
  }

  /** One vector per text, in the order given. */
  async embed(texts: readonly string[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    this.assertOpen();
    if (!Array.isArray(texts)) throw new TypeError('embed() takes an array of strings');
    texts.forEach((text, i) => {
      if (typeof text !== 'string') throw new TypeError(`texts[${i}] is not a string`);
    });
    // Long texts are tokenized in the tokenizer worker.
    const ids = await encodeAsync(this.tokenizer, texts, { maxLength: this.maxSeqLength });
    return this.embedTokens(ids, options);
  }

  /** embed() for texts already tokenized (each sequence with its [CLS] ... [SEP]). */
  async embedTokens(sequences: readonly ArrayLike<number>[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    this.assertOpen();
    const batchSize = options.batchSize ?? DEFAULT_BATCH;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw rangeError(`batchSize must be an integer >= 1, got ${batchSize}`);
    const pooling = options.pooling ?? this.config.pooling;
    if (pooling !== 'mean' && pooling !== 'cls' && pooling !== 'max') {
      throw rangeError(`pooling must be 'mean', 'cls' or 'max', got ${String(pooling)}`);
    }
    const normalize = options.normalize ?? this.config.normalize;
    const dimensions = options.dimensions ?? this.dimension;
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > this.dimension) {
      throw rangeError(`dimensions must be an integer from 1 to ${this.dimension}, got ${String(dimensions)}`);
    }
    const { signal } = options;
    if (signal?.aborted) throw abortError(signal);
    sequences.forEach((s, i) => {
      if (s.length < 1 || s.length > bertMaxSequence(this.config)) {
        throw rangeError(`sequence ${i} has ${s.length} tokens; the model takes 1 to ${bertMaxSequence(this.config)}`);
      }
    });

    // Longest first, so each batch holds texts of similar length; ties keep the input order.
    const order = sequences.map((_, i) => i).sort((a, b) => sequences[b].length - sequences[a].length || a - b);
    const out: Float32Array[] = new Array(sequences.length);
    const H = this.dimension;
    for (let start = 0; start < order.length; ) {
      if (signal?.aborted) throw abortError(signal);
      // Up to batchSize texts, and no more than MAX_BATCH_TOKENS tokens unless one text alone is longer.
      let end = start;
      let tokens = 0;
      while (end < order.length && end - start < batchSize && (end === start || tokens + sequences[order[end]].length <= MAX_BATCH_TOKENS)) {
        tokens += sequences[order[end]].length;
        end++;
      }
      const batch = order.slice(start, end);
      start = end;
      const lengths = Int32Array.from(batch, (i) => sequences[i].length);
      const ids = new Int32Array(tokens);
      let at = 0;
      for (const i of batch) {
        ids.set(sequences[i], at);
        at += sequences[i].length;
      }
      const vectors = await this.engine.encode(ids, lengths, { pooling, normalize, signal });
      // Copies in this realm: each vector owns its buffer.
      batch.forEach((i, j) => {
        const vector = new Float32Array(vectors.subarray(j * H, j * H + dimensions));
        out[i] = dimensions < H && normalize ? l2Normalized(vector) : vector;
      });
    }
    return out;
  }

  /**
   * Releases the encoder and unmaps the weights. Calls already running finish (the native side
   * keeps its own hold on the mapping); later calls throw DisposedError.
   */
  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.engine.dispose();
    closeWeights(this.weights);
  }

  /** dispose() for `using`: the embedder is released at the end of the block. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** dispose() for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.dispose();
  }

  private assertOpen(): void {
    if (this.closed) throw new DisposedError('Embedder');
  }
}

/** Loads a BERT sentence embedder from an EMBD file or a sentence-transformers folder. */
export async function loadEmbedder(path: string, options: LoadEmbedderOptions = {}): Promise<Embedder> {
  const weights = await readWeights(path, { format: options.format, verifyChecksums: options.verifyChecksums });
  try {
    const arch = architectureOf(weights.config);
    const load = arch?.modelClass === 'Embedder' ? EMBEDDER_ENGINES[arch.engine] : undefined;
    // The Embedder's engines take BERT configs.
    if (!load || !runsOn(weights.config, 'bert')) {
      const hint = arch?.modelClass === 'Reranker' ? ' (a cross-encoder: loadReranker)' : '';
      throw new UnsupportedError(`${path} holds a ${weights.architecture} model${hint}; loadEmbedder takes BERT encoders`);
    }
    const config = weights.config as BertConfig;
    const maxSeqLength = options.maxSeqLength ?? config.maxSeqLength;
    if (!Number.isInteger(maxSeqLength) || maxSeqLength < 2 || maxSeqLength > bertMaxSequence(config)) {
      throw rangeError(`maxSeqLength must be an integer in [2, ${bertMaxSequence(config)}], got ${maxSeqLength}`);
    }
    const tokenizer = await resolveTokenizer(weights, options.tokenizer);
    if (!tokenizer) throw new UnsupportedError(`${path} has no embedded vocabulary and no tokenizer files are in ${modelFolder(path)}; pass options.tokenizer`);
    const engine = await load(weights, options);
    return new Embedder(engine, weights, tokenizer, config, maxSeqLength);
  } catch (error) {
    closeWeights(weights);
    throw error;
  }
}

/** Cosine similarity of two vectors (0 when either is all zeros). */
export function similarity(a: ArrayLike<number>, b: ArrayLike<number>): number {
  if (a.length !== b.length) throw rangeError(`vectors of different lengths: ${a.length} and ${b.length}`);
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return na === 0 || nb === 0 ? 0 : dot / Math.sqrt(na * nb);
}
