/**
 * What the Embedder and the Reranker run on, one interface over two engines: packed batches of
 * token ids in, one vector per sequence out. The BERT encoder pools (mean / cls / max) and
 * normalizes natively; the decoder gives the final hidden state (after the final norm) of each
 * sequence's last token or the mean of its tokens' (DecoderEngine.pool: Qwen3-Embedding,
 * Qwen3-Reranker), normalized here.
 */
import { BertEngine, type EmbedderQuant } from '../engines/bert';
import { DecoderEngine } from '../engines/decoder';
import { rangeError } from '../base/errors';
import type { ModelWeights } from '../addon/weights';
import { EMBEDDER_QUANTS } from '../engines/bert';

/** How token vectors become a sentence vector: BERT's 'mean' (over the tokens), 'cls' (first token), 'max'; a decoder's 'last' (last token) or 'mean'. */
export type Pooling = 'mean' | 'cls' | 'max' | 'last';

/** How the engine runs and what loading it cost. */
export interface PoolingEngineInfo {
  threads: number;
  quant: EmbedderQuant;
  isa: string;
  copiedBytes: number;
  loadMs: number;
}

export interface PoolingEngine {
  readonly name: 'bert' | 'decoder';
  /** The poolings it runs. */
  readonly poolings: readonly Pooling[];
  /** Most tokens in one native call (a longer sequence goes alone). */
  readonly maxBatchTokens: number;
  readonly info: PoolingEngineInfo;
  /** Sequence i is ids[offset_i .. offset_i + lengths[i]); resolves to Float32Array [lengths.length, hiddenSize]. */
  encode(ids: Int32Array, lengths: Int32Array, pooling: Pooling, normalize: boolean, signal?: AbortSignal): Promise<Float32Array>;
  dispose(): void;
}

/** Options the engines share (loadEmbedder's and loadReranker's). */
export interface PoolingEngineOptions {
  threads?: number;
  quant?: EmbedderQuant;
}

/**
 * Most tokens in one BERT call: its activations take ~(6·H + I)·4 bytes per token (~16 MB per
 * 1,000 tokens for MiniLM). A decoder's take ~(6·H + 2·I + 4·qDim)·4 per token (64 kB at
 * Qwen3-0.6B's shapes) besides one layer's KV cache; past ~512 tokens a pass gains nothing (its
 * activations leave the cache): 32 texts × 128 tokens at Qwen3-0.6B's widths (4 layers, 2 threads,
 * Zen 4) took 17.3 s in passes of 512 tokens, 20.2 s in one of 4,096, 28.3 s one text at a time (f32);
 * 5.9, 7.8 and 6.7 s with Q8_0 weights.
 */
const BERT_BATCH_TOKENS = 16384;
const DECODER_BATCH_TOKENS = 512;

/** `v` [n, dim] with each row scaled in place to unit L2 norm (the norm clamped at 1e-12, as the BERT engine's). */
export function normalizeRows(v: Float32Array, dim: number): Float32Array {
  for (let r = 0; r * dim < v.length; r++) {
    let sum = 0;
    for (let i = r * dim; i < (r + 1) * dim; i++) sum += v[i] * v[i];
    const scale = 1 / Math.max(Math.sqrt(sum), 1e-12);
    for (let i = r * dim; i < (r + 1) * dim; i++) v[i] *= scale;
  }
  return v;
}

export async function bertPoolingEngine(weights: ModelWeights, options: PoolingEngineOptions): Promise<PoolingEngine> {
  const engine = await BertEngine.load(weights, { threads: options.threads, quant: options.quant });
  return {
    name: 'bert',
    poolings: ['mean', 'cls', 'max'],
    maxBatchTokens: BERT_BATCH_TOKENS,
    get info() {
      return engine.info;
    },
    encode: (ids, lengths, pooling, normalize, signal) => engine.encode(ids, lengths, { pooling: pooling as 'mean' | 'cls' | 'max', normalize, signal }),
    dispose: () => engine.dispose(),
  };
}

/**
 * The decoder with its weights as stored (f32 exact, GGUF blocks in place) by default; 'f32'
 * dequantizes everything, 'q8_0' and 'int8' both quantize the float matrices to Q8_0 at load (the
 * decoder's 8-bit path: int8 groups of 32 with a scale each).
 */
export async function decoderPoolingEngine(weights: ModelWeights, options: PoolingEngineOptions): Promise<PoolingEngine> {
  if (options.quant !== undefined && !EMBEDDER_QUANTS.includes(options.quant)) {
    throw rangeError(`quant must be one of ${EMBEDDER_QUANTS.join(', ')}, got ${String(options.quant)}`);
  }
  const quant = options.quant === undefined ? 'none' : options.quant === 'f32' ? 'f32' : 'q8_0';
  const engine = await DecoderEngine.load(weights, { threads: options.threads, quant });
  const dim = engine.config.hiddenSize;
  return {
    name: 'decoder',
    poolings: ['last', 'mean'],
    maxBatchTokens: DECODER_BATCH_TOKENS,
    get info() {
      const i = engine.loadInfo;
      const reported: EmbedderQuant = quant === 'q8_0' ? 'q8_0' : 'f32';
      return { threads: i.threads, quant: reported, isa: i.isa, copiedBytes: i.copiedBytes, loadMs: i.loadMs };
    },
    async encode(ids, lengths, pooling, normalize, signal) {
      const out = await engine.pool(ids, lengths, pooling as 'last' | 'mean', signal);
      return normalize ? normalizeRows(out, dim) : out;
    },
    dispose: () => engine.dispose(),
  };
}
