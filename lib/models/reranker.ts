/**
 * Rerankers: `loadReranker(path)` for cross-encoders (BertForSequenceClassification and
 * XLMRobertaForSequenceClassification HF folders, and the GGUFs llama.cpp and weightmap write for
 * them) and yes/no rerankers (Qwen3-Reranker: lib/models/yes-no-reranker.ts), `reranker.rank(query, documents)`.
 *
 *   const reranker = await loadReranker('ms-marco-MiniLM-L-6-v2');
 *   const ranked = await reranker.rank('what is a panda?', docs, { topN: 3 });
 *   // [{ index: 2, score: 8.61 }, ...], best first
 *
 * A cross-encoder pairs each document with the query as Hugging Face's tokenizer pairs them
 * ([CLS] query [SEP] document [SEP], token types 0 then 1; lib/tokenizers/pair.ts), cut to the
 * model's maximum with the query kept ('longest_first', or 'only_second'); its score is its
 * classifier logit (raw, as llama-server's /v1/rerank reports it), or its sigmoid where the
 * checkpoint says so or the caller asks. A yes/no reranker puts the pair into its model card's
 * prompt and scores P(yes) (the sigmoid of logit_yes − logit_no; 'none': that difference).
 * Which kind a model is comes from the registry (modelClassOf: a Bert*ForSequenceClassification,
 * or a decoder whose config says pooling 'rank': a GGUF with pooling_type RANK, an HF Qwen3 folder
 * whose README or `_name_or_path` names Qwen3-Reranker), or from `kind`.
 * Either way the pairs run natively in packed batches, longest first, and a pair's score does not
 * depend on its batch.
 */
import { architectureOf, modelClassOf, rerankerKindOf, retrievalOf } from '../architectures';
import type { DecoderConfig } from '../architectures/decoder';
import { loadYesNoModel, type YesNoModel } from './yes-no-reranker';
import type { PoolingEngineInfo } from './embedding-engines';
import { bertMaxSequence, bertPairLayout, type BertClassifierConfig } from '../architectures/bert';
import { BertEngine, type EmbedderQuant } from '../engines/bert';
import { AbortError, DisposedError, rangeError, UnsupportedError } from '../base/errors';
import { readWeights } from '../formats';
import type { Tokenizer } from '../tokenizers';
import { encodePair, pairSpecialCount, PAIR_TRUNCATIONS, type PairSpecials, type PairTruncation } from '../tokenizers/pair';
import { encodeAsync } from '../tokenizer-loading';
import { modelFolder, resolveTokenizer } from '../tokenizer-loading/resolve';
import { closeWeights, type FormatName, type ModelWeights } from '../addon/weights';

export type { PairTruncation } from '../tokenizers/pair';

/** How a pair's logit becomes its score: 'none' (the raw logit) or 'sigmoid' (a 0..1 relevance). */
export type ScoreActivation = 'none' | 'sigmoid';

/** A cross-encoder (a classifier head over the pair) or a yes/no reranker (a decoder's "yes" and "no" logits: Qwen3-Reranker). */
export type RerankerKind = 'cross-encoder' | 'yes-no';
export const RERANKER_KINDS: readonly RerankerKind[] = ['cross-encoder', 'yes-no'];

/** Options of `loadReranker()`. */
export interface LoadRerankerOptions {
  /**
   * What the model is; default: what the registry says of its config. 'yes-no' makes any Qwen3
   * decoder (a folder without a README naming Qwen3-Reranker, a GGUF without pooling_type RANK) a
   * yes/no reranker.
   */
  kind?: RerankerKind;
  /** Encoder threads (the calling thread counts); default: the physical cores. */
  threads?: number;
  /**
   * 'int8' or 'q8_0': the linear layers quantized once at load; default 'f32' (a decoder's weights
   * as stored; 'int8' and 'q8_0' both make its float matrices Q8_0).
   */
  quant?: EmbedderQuant;
  /**
   * Longest pair in tokens, special tokens included (a yes/no reranker's: its whole prompt); default
   * the model's maximum positions (a decoder's: at most 8192, its model card's).
   */
  maxSeqLength?: number;
  /** A yes/no reranker's default `<Instruct>` (the model card's: "Given a web search query, retrieve relevant passages that answer the query"). */
  instruction?: string;
  /** How a pair too long for maxSeqLength is cut; default 'longest_first' (HF's `truncation=True`). */
  truncation?: PairTruncation;
  /** Score activation; default what the checkpoint states (sentence-transformers' activation_fn), else 'none'. */
  activation?: ScoreActivation;
  /** A tokenizer file/folder or a Tokenizer, instead of the one in or beside the weights. */
  tokenizer?: string | Tokenizer;
  /** Input format (default: detected). */
  format?: FormatName;
}

/** Options of `reranker.rank()` and `score()`. */
export interface RankOptions {
  /** Keep the best N results (default: all). */
  topN?: number;
  /** Include each result's document text (default false). */
  returnDocuments?: boolean;
  /** Pairs per native call; default 32. */
  batchSize?: number;
  /** A yes/no reranker's `<Instruct>` for this call; default the one it was loaded with. */
  instruction?: string;
  signal?: AbortSignal;
}

/** One ranked document. */
export interface RankedDocument {
  /** Its position in the documents given. */
  index: number;
  score: number;
  /** The document, when `returnDocuments` was set. */
  document?: string;
}

/** The scores of score(), in the documents' order, and the tokens the pairs took. */
export interface PairScores {
  scores: number[];
  /** Tokens of all the pairs, special tokens included (what the server reports as usage). */
  tokens: number;
}

/** What a loaded reranker is and how it runs (`reranker.info`). */
export interface RerankerInfo {
  path: string;
  kind: RerankerKind;
  format: FormatName;
  threads: number;
  quant: EmbedderQuant;
  /** The kernel set in use ("avx2", "avx512", ...). */
  isa: string;
  /** Whether the head runs the pooler (a llama.cpp GGUF lacks it; a yes/no reranker has none). */
  pooler: boolean;
  activation: ScoreActivation;
  truncation: PairTruncation;
  loadMs: number;
}

const DEFAULT_BATCH = 32;
/** Most tokens in one cross-encoder call (as the embedder's BERT batches). */
const MAX_BATCH_TOKENS = 16384;
/** A yes/no reranker's longest prompt by default (its model card's max_length), within its positions. */
const YES_NO_MAX_SEQ = 8192;

/**
 * What a Reranker runs: how the pairs of a query become token ids (with token types), and how a
 * packed batch of them becomes one raw logit each.
 */
interface PairModel {
  readonly kind: RerankerKind;
  readonly maxBatchTokens: number;
  readonly info: PoolingEngineInfo;
  pairs(query: string, documents: readonly string[], options: RankOptions): Promise<{ ids: number[]; types?: number[] }[]>;
  logits(ids: Int32Array, types: Int32Array | null, lengths: Int32Array, signal?: AbortSignal): Promise<Float32Array>;
  dispose(): void;
}

function crossEncoderModel(engine: BertEngine, tokenizer: Tokenizer, config: BertClassifierConfig, specials: PairSpecials, maxSeqLength: number, truncation: PairTruncation): PairModel {
  return {
    kind: 'cross-encoder',
    maxBatchTokens: MAX_BATCH_TOKENS,
    get info() {
      return engine.info;
    },
    async pairs(query, documents) {
      // Long texts are tokenized in the tokenizer worker; each side whole (no tokenizer.json
      // truncation): the pair is cut here.
      const [queryIds, ...docIds] = await encodeAsync(tokenizer, [query, ...documents], { addSpecialTokens: false, maxLength: Infinity });
      return docIds.map((d) => encodePair(queryIds, d, specials, maxSeqLength, truncation));
    },
    async logits(ids, types, lengths, signal) {
      const logits = await engine.classify(ids, types, lengths, signal);
      return Float32Array.from(lengths, (_, j) => logits[j * config.numLabels]);
    },
    dispose: () => engine.dispose(),
  };
}

function yesNoPairModel(model: YesNoModel, maxSeqLength: number, instruction: string): PairModel {
  return {
    kind: 'yes-no',
    maxBatchTokens: model.engine.maxBatchTokens,
    get info() {
      return model.engine.info;
    },
    pairs: async (query, documents, options) => {
      const given = options.instruction ?? instruction;
      if (typeof given !== 'string') throw new TypeError('instruction must be a string');
      return (await model.pairs(query, documents, given, maxSeqLength)).map((ids) => ({ ids }));
    },
    logits: (ids, _types, lengths, signal) => model.logits(ids, lengths, signal),
    dispose: () => model.engine.dispose(),
  };
}

function abortError(signal: AbortSignal): AbortError {
  return new AbortError(undefined, { cause: signal.reason });
}

/** A loaded reranker (`loadReranker()`): `rank(query, documents)` orders the documents by relevance. */
export class Reranker {
  /** Longest pair in tokens (special tokens included). */
  readonly maxSeqLength: number;
  readonly activation: ScoreActivation;
  /** How a pair too long is cut (a yes/no reranker's: 'only_second', the document's end, unless the query alone is too long). */
  readonly truncation: PairTruncation;
  readonly kind: RerankerKind;
  private closed = false;

  /** @internal Made by loadReranker. */
  constructor(
    private readonly model: PairModel,
    private readonly weights: ModelWeights,
    readonly tokenizer: Tokenizer,
    readonly config: BertClassifierConfig | DecoderConfig,
    options: { maxSeqLength: number; activation: ScoreActivation; truncation: PairTruncation },
  ) {
    this.kind = model.kind;
    this.maxSeqLength = options.maxSeqLength;
    this.activation = options.activation;
    this.truncation = options.truncation;
  }

  get info(): RerankerInfo {
    this.assertOpen();
    const i = this.model.info;
    return {
      path: this.weights.path,
      kind: this.kind,
      format: this.weights.format,
      threads: i.threads,
      quant: i.quant,
      isa: i.isa,
      pooler: 'pooler' in this.config && this.config.pooler,
      activation: this.activation,
      truncation: this.truncation,
      loadMs: i.loadMs,
    };
  }

  get disposed(): boolean {
    return this.closed;
  }

  /** The documents' indices and scores, best first (ties: the earlier document first), cut to topN. */
  async rank(query: string, documents: readonly string[], options: RankOptions = {}): Promise<RankedDocument[]> {
    const topN = options.topN ?? Infinity;
    if (options.topN !== undefined && (!Number.isInteger(topN) || topN < 1)) throw rangeError(`topN must be an integer >= 1, got ${topN}`);
    const { scores } = await this.score(query, documents, options);
    const order = scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a] || a - b);
    return order.slice(0, topN).map((index) => ({ index, score: scores[index], ...(options.returnDocuments ? { document: documents[index] } : {}) }));
  }

  /** One score per document, in the order given, and the tokens the pairs took. */
  async score(query: string, documents: readonly string[], options: RankOptions = {}): Promise<PairScores> {
    this.assertOpen();
    if (typeof query !== 'string') throw new TypeError('the query is not a string');
    if (!Array.isArray(documents)) throw new TypeError('documents must be an array of strings');
    documents.forEach((d, i) => {
      if (typeof d !== 'string') throw new TypeError(`documents[${i}] is not a string`);
    });
    const batchSize = options.batchSize ?? DEFAULT_BATCH;
    if (!Number.isInteger(batchSize) || batchSize < 1) throw rangeError(`batchSize must be an integer >= 1, got ${batchSize}`);
    const { signal } = options;
    if (signal?.aborted) throw abortError(signal);
    if (documents.length === 0) return { scores: [], tokens: 0 };

    const pairs = await this.model.pairs(query, documents, options);
    const scores: number[] = new Array(pairs.length);
    let tokens = 0;
    // Longest first, so each batch holds pairs of similar length; a pair's score does not depend on its batch.
    const order = pairs.map((_, i) => i).sort((a, b) => pairs[b].ids.length - pairs[a].ids.length || a - b);
    for (let start = 0; start < order.length; ) {
      if (signal?.aborted) throw abortError(signal);
      let end = start;
      let count = 0;
      while (end < order.length && end - start < batchSize && (end === start || count + pairs[order[end]].ids.length <= this.model.maxBatchTokens)) {
        count += pairs[order[end]].ids.length;
        end++;
      }
      const batch = order.slice(start, end);
      start = end;
      const ids = new Int32Array(count);
      const typed = batch.every((i) => pairs[i].types !== undefined);
      const types = typed ? new Int32Array(count) : null;
      const lengths = Int32Array.from(batch, (i) => pairs[i].ids.length);
      let at = 0;
      for (const i of batch) {
        ids.set(pairs[i].ids, at);
        types?.set(pairs[i].types!, at);
        at += pairs[i].ids.length;
      }
      tokens += count;
      const logits = await this.model.logits(ids, types, lengths, signal);
      batch.forEach((i, j) => {
        const logit = logits[j];
        scores[i] = this.activation === 'sigmoid' ? 1 / (1 + Math.exp(-logit)) : logit;
      });
    }
    return { scores, tokens };
  }

  /**
   * Releases the encoder and unmaps the weights. Calls already running finish; later calls throw
   * DisposedError.
   */
  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.model.dispose();
    closeWeights(this.weights);
  }

  /** dispose() for `using`. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** dispose() for `await using`. */
  async [Symbol.asyncDispose](): Promise<void> {
    this.dispose();
  }

  private assertOpen(): void {
    if (this.closed) throw new DisposedError('Reranker');
  }
}

/** Loads a reranker: a cross-encoder from an HF folder (Bert/XLMRobertaForSequenceClassification) or a GGUF, or a yes/no reranker (Qwen3-Reranker) from an HF folder or a GGUF. */
export async function loadReranker(path: string, options: LoadRerankerOptions = {}): Promise<Reranker> {
  if (options.truncation !== undefined && !PAIR_TRUNCATIONS.includes(options.truncation)) {
    throw rangeError(`truncation must be one of ${PAIR_TRUNCATIONS.join(', ')}, got ${String(options.truncation)}`);
  }
  if (options.activation !== undefined && options.activation !== 'none' && options.activation !== 'sigmoid') {
    throw rangeError(`activation must be 'none' or 'sigmoid', got ${String(options.activation)}`);
  }
  if (options.kind !== undefined && !RERANKER_KINDS.includes(options.kind)) {
    throw rangeError(`kind must be one of ${RERANKER_KINDS.join(', ')}, got ${String(options.kind)}`);
  }
  const weights = await readWeights(path, { format: options.format });
  try {
    const kind = rerankerKindOf(weights.config, options.kind);
    if (!kind) {
      const modelClass = modelClassOf(weights.config);
      const hint = modelClass === 'Embedder' ? ' (an embedding model: loadEmbedder)' : modelClass === 'Reranker' ? ` (not a ${options.kind} reranker)` : architectureOf(weights.config) ? " (a text model: loadModel; kind: 'yes-no' for a Qwen3-Reranker)" : '';
      throw new UnsupportedError(`${path} holds a ${weights.architecture} model${hint}; loadReranker takes cross-encoders (Bert/XLMRobertaForSequenceClassification) and yes/no rerankers (Qwen3-Reranker)`);
    }
    const tokenizer = await resolveTokenizer(weights, options.tokenizer);
    if (!tokenizer) throw new UnsupportedError(`${path} has no embedded vocabulary and no tokenizer files are in ${modelFolder(path)}; pass options.tokenizer`);
    if (kind === 'yes-no') {
      const config = weights.config as DecoderConfig;
      const maxSeqLength = options.maxSeqLength ?? Math.min(config.maxSeqLen, YES_NO_MAX_SEQ);
      if (!Number.isInteger(maxSeqLength) || maxSeqLength < 1 || maxSeqLength > config.maxSeqLen) {
        throw rangeError(`maxSeqLength must be an integer in [1, ${config.maxSeqLen}], got ${maxSeqLength}`);
      }
      const prompt = retrievalOf(config)!.yesNo;
      const instruction = options.instruction ?? prompt.defaultInstruction;
      if (typeof instruction !== 'string') throw new TypeError('instruction must be a string');
      const model = await loadYesNoModel(weights, tokenizer, prompt, options);
      return new Reranker(yesNoPairModel(model, maxSeqLength, instruction), weights, tokenizer, config, {
        maxSeqLength,
        activation: options.activation ?? 'sigmoid',
        truncation: 'only_second',
      });
    }
    const config = weights.config as BertClassifierConfig;
    if (config.numLabels !== 1) {
      throw new UnsupportedError(`${path} is a classifier with ${config.numLabels} labels (${config.labels.join(', ')}); a reranker scores with one`);
    }
    const maxSeqLength = options.maxSeqLength ?? config.maxSeqLength;
    const fewest = pairSpecialCount(bertPairLayout(config));
    if (!Number.isInteger(maxSeqLength) || maxSeqLength < fewest || maxSeqLength > bertMaxSequence(config)) {
      throw rangeError(`maxSeqLength must be an integer in [${fewest}, ${bertMaxSequence(config)}], got ${maxSeqLength}`);
    }
    const { cls, sep } = tokenizer.specialIds;
    if (cls === undefined || sep === undefined) throw new UnsupportedError(`the tokenizer of ${path} has no [CLS]/[SEP] (<s>/</s>) tokens to pair texts with`);
    const truncation = options.truncation ?? 'longest_first';
    const engine = await BertEngine.load(weights, { threads: options.threads, quant: options.quant });
    return new Reranker(crossEncoderModel(engine, tokenizer, config, { cls, sep, layout: bertPairLayout(config) }, maxSeqLength, truncation), weights, tokenizer, config, {
      maxSeqLength,
      activation: options.activation ?? config.scoreActivation ?? 'none',
      truncation,
    });
  } catch (error) {
    closeWeights(weights);
    throw error;
  }
}
