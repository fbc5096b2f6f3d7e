/**
 * Rerankers: `loadReranker(path)` for cross-encoders (BertForSequenceClassification HF folders,
 * and the GGUFs llama.cpp and weightmap write for them), `reranker.rank(query, documents)`.
 *
 *   const reranker = await loadReranker('ms-marco-MiniLM-L-6-v2');
 *   const ranked = await reranker.rank('what is a panda?', docs, { topN: 3 });
 *   // [{ index: 2, score: 8.61 }, ...], best first
 *
 * Each document is paired with the query as Hugging Face's tokenizer pairs them
 * ([CLS] query [SEP] document [SEP], token types 0 then 1; lib/tokenizers/pair.ts), cut to the
 * model's maximum with the query kept ('longest_first', or 'only_second'); the pairs run natively
 * in packed batches like the embedder's, and each pair's score is its classifier logit (raw, as
 * llama-server's /v1/rerank reports it), or its sigmoid where the checkpoint says so or the caller
 * asks.
 */
import { architectureOf, type EngineName } from '../architectures';
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

/** Options of `loadReranker()`. */
export interface LoadRerankerOptions {
  /** Encoder threads (the calling thread counts); default: the physical cores. */
  threads?: number;
  /** 'int8' or 'q8_0': the linear layers quantized once at load; default 'f32'. */
  quant?: EmbedderQuant;
  /** Longest pair in tokens, the three special tokens included; default the model's maximum positions. */
  maxSeqLength?: number;
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
  format: FormatName;
  threads: number;
  quant: EmbedderQuant;
  /** The kernel set in use ("avx2", "avx512", ...). */
  isa: string;
  /** Whether the head runs the pooler (a llama.cpp GGUF lacks it). */
  pooler: boolean;
  activation: ScoreActivation;
  truncation: PairTruncation;
  loadMs: number;
}

const DEFAULT_BATCH = 32;
/** Most tokens in one native call (as the embedder's MAX_BATCH_TOKENS). */
const MAX_BATCH_TOKENS = 16384;

/** The engines a reranker runs on, by registry name. */
const RERANK_ENGINES: Partial<Record<EngineName, (weights: ModelWeights, options: LoadRerankerOptions) => Promise<BertEngine>>> = {
  bert: (weights, options) => BertEngine.load(weights, { threads: options.threads, quant: options.quant }),
};

function abortError(signal: AbortSignal): AbortError {
  return new AbortError(undefined, { cause: signal.reason });
}

/** A loaded cross-encoder (`loadReranker()`): `rank(query, documents)` orders the documents by relevance. */
export class Reranker {
  /** Longest pair in tokens (special tokens included). */
  readonly maxSeqLength: number;
  readonly activation: ScoreActivation;
  readonly truncation: PairTruncation;
  private closed = false;

  constructor(
    private readonly engine: BertEngine,
    private readonly weights: ModelWeights,
    readonly tokenizer: Tokenizer,
    readonly config: BertClassifierConfig,
    private readonly specials: PairSpecials,
    options: { maxSeqLength: number; activation: ScoreActivation; truncation: PairTruncation },
  ) {
    this.maxSeqLength = options.maxSeqLength;
    this.activation = options.activation;
    this.truncation = options.truncation;
  }

  get info(): RerankerInfo {
    this.assertOpen();
    const i = this.engine.info;
    return {
      path: this.weights.path,
      format: this.weights.format,
      threads: i.threads,
      quant: i.quant,
      isa: i.isa,
      pooler: this.config.pooler,
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

    // Long texts are tokenized in the tokenizer worker; each side whole (no tokenizer.json
    // truncation): the pair is cut below.
    const [queryIds, ...docIds] = await encodeAsync(this.tokenizer, [query, ...documents], { addSpecialTokens: false, maxLength: Infinity });
    const pairs = docIds.map((d) => encodePair(queryIds, d, this.specials, this.maxSeqLength, this.truncation));
    const scores: number[] = new Array(pairs.length);
    let tokens = 0;
    // Longest first, so each batch holds pairs of similar length; a pair's score does not depend on its batch.
    const order = pairs.map((_, i) => i).sort((a, b) => pairs[b].ids.length - pairs[a].ids.length || a - b);
    for (let start = 0; start < order.length; ) {
      if (signal?.aborted) throw abortError(signal);
      let end = start;
      let count = 0;
      while (end < order.length && end - start < batchSize && (end === start || count + pairs[order[end]].ids.length <= MAX_BATCH_TOKENS)) {
        count += pairs[order[end]].ids.length;
        end++;
      }
      const batch = order.slice(start, end);
      start = end;
      const ids = new Int32Array(count);
      const types = new Int32Array(count);
      const lengths = Int32Array.from(batch, (i) => pairs[i].ids.length);
      let at = 0;
      for (const i of batch) {
        ids.set(pairs[i].ids, at);
        types.set(pairs[i].types, at);
        at += pairs[i].ids.length;
      }
      tokens += count;
      const logits = await this.engine.classify(ids, types, lengths, signal);
      batch.forEach((i, j) => {
        const logit = logits[j * this.config.numLabels];
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
    this.engine.dispose();
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

/** Loads a cross-encoder reranker from an HF folder (BertForSequenceClassification) or a GGUF. */
export async function loadReranker(path: string, options: LoadRerankerOptions = {}): Promise<Reranker> {
  if (options.truncation !== undefined && !PAIR_TRUNCATIONS.includes(options.truncation)) {
    throw rangeError(`truncation must be one of ${PAIR_TRUNCATIONS.join(', ')}, got ${String(options.truncation)}`);
  }
  if (options.activation !== undefined && options.activation !== 'none' && options.activation !== 'sigmoid') {
    throw rangeError(`activation must be 'none' or 'sigmoid', got ${String(options.activation)}`);
  }
  const weights = await readWeights(path, { format: options.format });
  try {
    const arch = architectureOf(weights.config);
    const loadEngine = arch ? RERANK_ENGINES[arch.engine] : undefined;
    if (!arch || arch.modelClass !== 'Reranker' || !loadEngine) {
      const hint = arch?.modelClass === 'Embedder' ? ' (an embedding model: loadEmbedder)' : arch ? ' (a text model: loadModel)' : '';
      throw new UnsupportedError(`${path} holds a ${weights.architecture} model${hint}; loadReranker takes cross-encoders (BertForSequenceClassification)`);
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
    const tokenizer = await resolveTokenizer(weights, options.tokenizer);
    if (!tokenizer) throw new UnsupportedError(`${path} has no embedded vocabulary and no tokenizer files are in ${modelFolder(path)}; pass options.tokenizer`);
    const { cls, sep } = tokenizer.specialIds;
    if (cls === undefined || sep === undefined) throw new UnsupportedError(`the tokenizer of ${path} has no [CLS]/[SEP] (<s>/</s>) tokens to pair texts with`);
    const engine = await loadEngine(weights, options);
    return new Reranker(engine, weights, tokenizer, config, { cls, sep, layout: bertPairLayout(config) }, {
      maxSeqLength,
      activation: options.activation ?? config.scoreActivation ?? 'none',
      truncation: options.truncation ?? 'longest_first',
    });
  } catch (error) {
    closeWeights(weights);
    throw error;
  }
}
