/**
 * Sentence embeddings: `loadEmbedder(path)` for EMBD files, Hugging Face sentence-transformers
 * folders and GGUF files, `embedder.embed(texts)`, `similarity(a, b)`.
 *
 *   const embedder = await loadEmbedder('all-MiniLM-L6-v2.embd');
 *   const [a, b] = await embedder.embed(['first sentence', 'second one']);
 *   similarity(a, b);
 *
 * BERT encoders (mean / cls / max pooling) run on the BERT engine; decoder embedders
 * (Qwen3-Embedding: DecoderConfig.pooling 'last', from a sentence-transformers folder whose
 * Pooling module says pooling_mode_lasttoken or from a GGUF with `<arch>.pooling_type` LAST) on
 * the decoder engine, which gives the final hidden state (after the final norm) of each text's
 * last token; the tokenizer appends EOS as its post-processor (tokenizer.json) or
 * `tokenizer.ggml.add_eos_token` says, and queries take their instruction as the model card
 * writes it (`instruction`, or a prompt of config_sentence_transformers.json: `promptName`).
 *
 * Texts are tokenized (truncated to the model's max_seq_length), sorted by length and cut into
 * batches of `batchSize`; each batch runs natively as one packed batch (no padding rows), so a
 * text's vector does not depend on the batch it lands in. The activations of the largest
 * batch stay allocated for the next call (one set per call running at once) until dispose().
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import type { EmbedderQuant } from '../engines/bert';
import { AbortError, DisposedError, rangeError, UnsupportedError } from '../base/errors';
import { readWeights } from '../formats';
import type { Tokenizer } from '../tokenizers';
import { encodeAsync } from '../tokenizer-loading';
import { modelFolder, resolveTokenizer } from '../tokenizer-loading/resolve';
import { closeWeights, type FormatName, type ModelWeights } from '../addon/weights';
import { bertMaxSequence, type BertConfig } from '../architectures/bert';
import type { DecoderConfig } from '../architectures/decoder';
import { architectureOf, modelClassOf, retrievalOf, runsOn, type EngineName } from '../architectures';
import { readJsonFile } from '../formats/containers/hf-config';
import { applyDense, denseOfWeights, readDenseModules, type DenseLayer } from './sentence-dense';
import { bertPoolingEngine, decoderPoolingEngine, normalizeRows, type Pooling, type PoolingEngine, type PoolingEngineOptions } from './embedding-engines';

/** The engines of loadEmbedder by registry name (the entry's engine, for a config whose model class is Embedder). */
const EMBEDDER_ENGINES: Partial<Record<EngineName, (weights: ModelWeights, options: PoolingEngineOptions) => Promise<PoolingEngine>>> = {
  bert: bertPoolingEngine,
  decoder: decoderPoolingEngine,
};

export type { EmbedderQuant } from '../engines/bert';
export type { Pooling } from './embedding-engines';

/** The longest text a decoder embedder takes by default (Qwen3-Embedding's sentence-transformers max_seq_length), within its positions. */
const DECODER_MAX_SEQ = 8192;

/** Options of `loadEmbedder()`. */
export interface LoadEmbedderOptions {
  /** Encoder threads (the calling thread counts); default: the physical cores. */
  threads?: number;
  /**
   * 'int8' (fastest) or 'q8_0': int8 linear layers quantized once at load; default 'f32'. See
   * EmbedderQuant. A decoder embedder's default runs its weights as stored (f32 exact, GGUF blocks
   * in place); 'int8' and 'q8_0' both quantize its float matrices to Q8_0.
   */
  quant?: EmbedderQuant;
  /**
   * Truncation length in tokens, special tokens included; default the model's max_seq_length (a
   * decoder's: its positions, at most 8192).
   */
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
  /**
   * BERT: 'mean' over the tokens ([CLS] and [SEP] included), 'cls' (first token) or 'max'; a
   * decoder: 'last' (last token) or 'mean'; default: the model's.
   */
  pooling?: Pooling;
  /** Text put before each text (sentence-transformers' `prompt`). */
  prompt?: string;
  /** One of the model's prompts by name (`embedder.prompts`: config_sentence_transformers.json's, e.g. 'query'). */
  promptName?: string;
  /**
   * A query's task in the model's instruction format (Qwen3-Embedding: `Instruct: {instruction}\nQuery:`
   * before the text); documents take none. Only for models with such a format (`embedder.instructionFormat`).
   */
  instruction?: string;
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

function abortError(signal: AbortSignal): AbortError {
  return new AbortError(undefined, { cause: signal.reason });
}

/** How an Embedder pools and what it puts before its texts (loadEmbedder's reading of the model). */
export interface EmbedderSettings {
  maxSeqLength: number;
  pooling: Pooling;
  normalize: boolean;
  /** Longest sequence the engine takes. */
  maxSequence: number;
  prompts: Readonly<Record<string, string>>;
  instructionFormat?: (instruction: string) => string;
  /** sentence-transformers Dense modules after the pooling (EmbeddingGemma's), applied before the normalization. */
  dense?: DenseLayer[];
}

/** A loaded sentence embedder (`loadEmbedder()`): `embed(texts)` gives one Float32Array per text. */
export class Embedder {
  /** Length of every vector. */
  readonly dimension: number;
  /** Truncation length in tokens (special tokens included). */
  readonly maxSeqLength: number;
  /** The model's prompts by name (config_sentence_transformers.json; none for other formats). */
  readonly prompts: Readonly<Record<string, string>>;
  /** The model's query format for an `instruction` (Qwen3-Embedding's), if it has one. */
  readonly instructionFormat: ((instruction: string) => string) | undefined;
  private closed = false;

  /** @internal Made by loadEmbedder. */
  constructor(
    private readonly engine: PoolingEngine,
    private readonly weights: ModelWeights,
    readonly tokenizer: Tokenizer,
    readonly config: BertConfig | DecoderConfig,
    private readonly settings: EmbedderSettings,
  ) {
    this.dimension = settings.dense?.length ? settings.dense[settings.dense.length - 1].outFeatures : config.hiddenSize;
    this.maxSeqLength = settings.maxSeqLength;
    this.prompts = settings.prompts;
    this.instructionFormat = settings.instructionFormat;
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
    const prefix = this.promptOf(options);
    // Long texts are tokenized in the tokenizer worker.
    const ids = await encodeAsync(this.tokenizer, prefix ? texts.map((t) => prefix + t) : texts, { maxLength: this.maxSeqLength });
    return this.embedTokens(ids, options);
  }

  /** The text put before each text: options.prompt, the named prompt, or the instruction in the model's format. */
  private promptOf(options: EmbedOptions): string {
    const given = [options.prompt, options.promptName, options.instruction].filter((o) => o !== undefined);
    if (given.length > 1) throw rangeError('prompt, promptName and instruction exclude each other');
    if (options.prompt !== undefined) {
      if (typeof options.prompt !== 'string') throw new TypeError('prompt must be a string');
      return options.prompt;
    }
    if (options.promptName !== undefined) {
      const prompt = Object.prototype.hasOwnProperty.call(this.prompts, options.promptName) ? this.prompts[options.promptName] : undefined;
      if (prompt === undefined) throw rangeError(`the model has no prompt '${String(options.promptName)}' (it has: ${Object.keys(this.prompts).join(', ') || 'none'})`);
      return prompt;
    }
    if (options.instruction !== undefined) {
      if (typeof options.instruction !== 'string') throw new TypeError('instruction must be a string');
      if (!this.instructionFormat) throw new UnsupportedError('this model has no instruction format; use prompt');
      return this.instructionFormat(options.instruction);
    }
    return '';
  }

  /** embed() for texts already tokenized (each sequence with its special tokens: [CLS] ... [SEP], or a decoder's EOS). */
  async embedTokens(sequences: readonly ArrayLike<number>[], options: EmbedOptions = {}): Promise<Float32Array[]> {
    this.assertOpen();
    const batchSize = options.batchSize ?? DEFAULT_BATCH;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw rangeError(`batchSize must be an integer >= 1, got ${batchSize}`);
    const pooling = options.pooling ?? this.settings.pooling;
    if (!this.engine.poolings.includes(pooling)) {
      throw rangeError(`pooling must be ${this.engine.poolings.map((p) => `'${p}'`).join(', ')}, got ${String(pooling)}`);
    }
    const normalize = options.normalize ?? this.settings.normalize;
    const dimensions = options.dimensions ?? this.dimension;
    if (!Number.isInteger(dimensions) || dimensions < 1 || dimensions > this.dimension) {
      throw rangeError(`dimensions must be an integer from 1 to ${this.dimension}, got ${String(dimensions)}`);
    }
    const { signal } = options;
    if (signal?.aborted) throw abortError(signal);
    const longest = this.settings.maxSequence;
    sequences.forEach((s, i) => {
      if (s.length < 1 || s.length > longest) throw rangeError(`sequence ${i} has ${s.length} tokens; the model takes 1 to ${longest}`);
    });

    // Longest first, so each batch holds texts of similar length; ties keep the input order.
    const order = sequences.map((_, i) => i).sort((a, b) => sequences[b].length - sequences[a].length || a - b);
    const out: Float32Array[] = new Array(sequences.length);
    const H = this.dimension;
    for (let start = 0; start < order.length; ) {
      if (signal?.aborted) throw abortError(signal);
      // Up to batchSize texts, and no more than the engine's batch tokens unless one text alone is longer.
      let end = start;
      let tokens = 0;
      while (end < order.length && end - start < batchSize && (end === start || tokens + sequences[order[end]].length <= this.engine.maxBatchTokens)) {
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
      const { dense } = this.settings;
      let vectors = await this.engine.encode(ids, lengths, pooling, normalize && !dense, signal);
      if (dense) {
        vectors = applyDense(vectors, dense);
        if (normalize) normalizeRows(vectors, H);
      }
      // Copies in this realm: each vector owns its buffer.
      batch.forEach((i, j) => {
        const vector = new Float32Array(vectors.subarray(j * H, j * H + dimensions));
        out[i] = dimensions < H && normalize ? normalizeRows(vector, dimensions) : vector;
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

/**
 * Loads a sentence embedder: a BERT encoder from an EMBD file, a sentence-transformers folder or a
 * GGUF, or a decoder embedder (Qwen3-Embedding) from a sentence-transformers folder or a GGUF.
 */
export async function loadEmbedder(path: string, options: LoadEmbedderOptions = {}): Promise<Embedder> {
  const weights = await readWeights(path, { format: options.format, verifyChecksums: options.verifyChecksums });
  try {
    const arch = architectureOf(weights.config);
    const load = arch && modelClassOf(weights.config) === 'Embedder' ? EMBEDDER_ENGINES[arch.engine] : undefined;
    if (!load) {
      const hint = modelClassOf(weights.config) === 'Reranker' ? ' (a reranker: loadReranker)' : modelClassOf(weights.config) === 'Model' ? ' (a text model: loadModel)' : '';
      throw new UnsupportedError(`${path} holds a ${weights.architecture} model${hint}; loadEmbedder takes BERT encoders and decoder embedders (Qwen3-Embedding)`);
    }
    const settings = runsOn(weights.config, 'bert') ? bertSettings(weights.config, options) : await decoderSettings(weights, path, options);
    const tokenizer = await resolveTokenizer(weights, options.tokenizer);
    if (!tokenizer) throw new UnsupportedError(`${path} has no embedded vocabulary and no tokenizer files are in ${modelFolder(path)}; pass options.tokenizer`);
    const engine = await load(weights, options);
    return new Embedder(engine, weights, tokenizer, weights.config as BertConfig | DecoderConfig, settings);
  } catch (error) {
    closeWeights(weights);
    throw error;
  }
}

function checkedMaxSeqLength(value: number, fewest: number, most: number): number {
  if (!Number.isInteger(value) || value < fewest || value > most) throw rangeError(`maxSeqLength must be an integer in [${fewest}, ${most}], got ${value}`);
  return value;
}

function bertSettings(config: BertConfig, options: LoadEmbedderOptions): EmbedderSettings {
  const most = bertMaxSequence(config);
  return {
    maxSeqLength: checkedMaxSeqLength(options.maxSeqLength ?? config.maxSeqLength, 2, most),
    maxSequence: most,
    pooling: config.pooling,
    normalize: config.normalize,
    prompts: {},
  };
}

/**
 * A decoder embedder's pooling (its config's), normalization (a folder's modules.json lists a
 * Normalize module, as Qwen3-Embedding's does; a GGUF is normalized, as llama.cpp's embeddings
 * are), prompts (config_sentence_transformers.json), query format (its family's) and Dense
 * modules (EmbeddingGemma's two projections).
 */
async function decoderSettings(weights: ModelWeights, path: string, options: LoadEmbedderOptions): Promise<EmbedderSettings> {
  const config = weights.config as DecoderConfig;
  const folder = fs.statSync(path).isDirectory() ? path : undefined;
  const modules = folder && fs.existsSync(nodePath.join(folder, 'modules.json')) ? readJsonFile(nodePath.join(folder, 'modules.json'), false) : undefined;
  const retrieval = retrievalOf(config);
  const dense = folder ? (Array.isArray(modules) ? await readDenseModules(folder, modules, config.hiddenSize) : []) : await denseOfWeights(weights, config.hiddenSize);
  const normalize = Array.isArray(modules) ? modules.some((m) => typeof m?.type === 'string' && m.type.endsWith('models.Normalize')) : true;
  return {
    maxSeqLength: checkedMaxSeqLength(options.maxSeqLength ?? Math.min(config.maxSeqLen, DECODER_MAX_SEQ), 1, config.maxSeqLen),
    maxSequence: config.maxSeqLen,
    pooling: config.pooling === 'mean' ? 'mean' : 'last',
    normalize,
    prompts: folder ? sentenceTransformersPrompts(folder) : {},
    ...(dense.length > 0 ? { dense } : {}),
    ...(retrieval ? { instructionFormat: retrieval.embeddingQuery } : {}),
  };
}

/** config_sentence_transformers.json's `prompts` (name -> text), each checked to be a string. */
function sentenceTransformersPrompts(folder: string): Record<string, string> {
  const file = nodePath.join(folder, 'config_sentence_transformers.json');
  if (!fs.existsSync(file)) return {};
  const prompts = (readJsonFile(file) as Record<string, unknown>).prompts;
  if (prompts === undefined || prompts === null) return {};
  if (typeof prompts !== 'object' || Array.isArray(prompts)) throw new UnsupportedError(`${file}: prompts is not an object of strings`);
  const out: Record<string, string> = {};
  for (const [name, text] of Object.entries(prompts)) {
    if (typeof text !== 'string') throw new UnsupportedError(`${file}: prompt '${name}' is not a string`);
    out[name] = text;
  }
  return out;
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
