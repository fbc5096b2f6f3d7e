/**
 * The exact surface of the native addon (native/napi/*.cc). lib/addon/native.ts loads it and every
 * facade module is type-checked against these declarations.
 */

import type { DecoderConfig, DecoderQuant, KvCacheType } from '../architectures/decoder';

export type { KvCacheType } from '../architectures/decoder';

/** 'pageout' (Linux): reclaim the range's pages that no other process maps (MADV_PAGEOUT). */
export type MadviseAdvice = 'normal' | 'sequential' | 'random' | 'willneed' | 'dontneed' | 'pageout';

/** A read-only memory mapping of one file (native/napi/mapped_file.cc). */
export declare class MappedFile {
  /** Maps `path`; throws an Error with a POSIX `code` (ENOENT, EACCES, EISDIR, ...). */
  constructor(path: string);
  /** Size of the file in bytes (0 once closed). */
  readonly byteLength: number;
  readonly path: string | null;
  readonly closed: boolean;
  /** A zero-copy external ArrayBuffer over the mapping's head: the whole file up to 4 GiB (the same one on every call; detached by close()). */
  buffer(): ArrayBuffer;
  /** A zero-copy external ArrayBuffer over [offset, offset+length) (at most 4 GiB), which keeps the pages mapped while it is reachable. */
  window(offset: number, length: number): ArrayBuffer;
  /** madvise() over [offset, offset+length); a hint only. */
  advise(offset: number, length: number, advice: MadviseAdvice): void;
  /** Bytes of [offset, offset+length) resident in RAM (mincore), or -1 where unknown. */
  residentBytes(offset?: number, length?: number): number;
  /** Detaches the ArrayBuffer (views become empty) and drops this handle's reference to the pages. */
  close(): void;
}

/** One tensor view for an engine: bytes [byteOffset, byteOffset+byteLength) of files[file], stored shape. */
export interface EngineTensorDesc {
  dtype: string;
  shape: number[];
  file: number;
  byteOffset: number;
  byteLength: number;
  scales?: { byteOffset: number; byteLength: number; groupSize: number };
  /** A matrix whose bytes hold `shape` in column-major order (a Fortran-order .npy); only the decoder reads these. */
  transposed?: boolean;
}

/** Tensor views by canonical name (lib/engines/native-spec.ts builds it from ModelWeights). */
export interface EngineWeightsSpec {
  files: MappedFile[];
  tensors: Record<string, EngineTensorDesc>;
  /**
   * The tensor name of each role the engine asks for (the decoder's: DECODER_TENSOR_ROLES of
   * lib/architectures/decoder; the gpt engine's: TLLM_TENSOR_ROLES; phi's and vit's:
   * MOONDREAM_TENSOR_ROLES), `{layer}` standing for the layer index in per-layer roles. The bert
   * engine still spells its own names and ignores it.
   */
  names?: Record<string, string>;
}

/** Engine threads: 0 or absent = physical cores. */
export interface EngineThreadOptions {
  threads?: number;
}

/**
 * The engine contract (native/napi/model_wrap.h, session_wrap.h). Every model is made by its static
 * `load(spec, config, options?)`, which checks the views against their mappings synchronously and
 * the tensors against the config in a worker; `dispose()` makes its sessions reject further calls.
 * Every call that can be stopped is stopped by `abort()` on the object it runs on: the session, the
 * VitModel, or the job a BertEncoder.encode returns. Errors carry a `code`: a WeightFormatError code
 * for a bad spec (MISSING_TENSOR, SHAPE_MISMATCH, BAD_DTYPE, OUT_OF_BOUNDS, CONFIG_MISMATCH,
 * UNSUPPORTED), ERR_OUT_OF_RANGE, ERR_WEIGHTMAP_BUSY, ERR_WEIGHTMAP_DISPOSED, ABORT_ERR.
 */
export interface NativeModel {
  readonly threads: number;
  readonly disposed: boolean;
  /** Sessions made from it reject further calls with ERR_WEIGHTMAP_DISPOSED; running calls finish. */
  dispose(): void;
}

/**
 * One sequence of a language model with its KV cache and the token ids it holds. One call at a
 * time (ERR_WEIGHTMAP_BUSY otherwise).
 */
export declare class NativeSession {
  protected constructor();
  /** Positions in the KV cache. */
  readonly position: number;
  /** Positions it can hold. */
  readonly contextLength: number;
  /** Bytes of the KV cache: a decoder session's at its full context; a GPT or Phi session's as allocated now. */
  readonly cacheBytes: number;
  /**
   * Bytes of the KV cache allocated now. Each grows as positions fill: a decoder session's to twice
   * its positions or to the positions a call needs, whichever is more, up to cacheBytes.
   */
  readonly allocatedCacheBytes: number;
  /** A copy of the ids at positions [0, position) (the sampler's penalty history); -1 for rows fed without ids. */
  readonly tokens: Int32Array;
  /** True while a call runs. */
  readonly busy: boolean;
  readonly disposed: boolean;
  /**
   * Appends token ids, or input rows (Float32Array [n, width]: Moondream's embedding rows, a pipeline
   * stage's hidden states) at `position`. Resolves to no logits, the last row's [V] (default), or [n, V]
   * ('all'; 'steps', a DecoderSession's ids only: each row bitwise what a one-token eval at its position
   * resolves to, as speculative decoding verifies); a model without its head resolves to hidden states [n, hiddenSize]. options.prefix: positions
   * [0, prefix) attend to each other bidirectionally (PhiSession; the prefix in one call from 0);
   * options.ids: the ids that name input rows in `tokens`; options.bidirectional (DecoderSession, rows
   * entering layer 0): the call's rows also attend to each other (one batch). Rejects with ABORT_ERR after abort()
   * (position unchanged) and ERR_OUT_OF_RANGE for ids outside the vocabulary or past the context.
   */
  eval(input: Int32Array | Float32Array, logits?: 'none' | 'last' | 'all' | 'steps', options?: { prefix?: number; ids?: Int32Array; bidirectional?: boolean }): Promise<Float32Array>;
  /**
   * eval() of `ids`, then the next token chosen from the last position's logits by `sampler` in the
   * same worker, with `tokens` (the new ids included) as the penalty history. `params` is read once
   * per Sampler and object (the Sampler keeps the last object and its parse: a generation passes
   * the same object at every step; a new object changes them); `allowedTokens` is this step's
   * allowed-token bitset (the one part that changes per step). Throws ERR_WEIGHTMAP_BUSY while the
   * sampler serves another step, of any session.
   */
  step(ids: Int32Array, sampler: Sampler, params?: NativeSamplingParams, allowedTokens?: Uint32Array): Promise<number>;
  /** Forgets every position from `n` on (0..position). Throws ERR_WEIGHTMAP_BUSY while a call runs. */
  truncate(n: number): void;
  /** Makes the running (or next) call reject with ABORT_ERR at its next layer. */
  abort(): void;
  /** Frees the KV cache once no call uses it. */
  dispose(): void;
}

/** The TLLM GPT-style model (native/napi/gpt_napi.cc): f32 [in,out] matrices used in place. */
export declare class GptModel implements NativeModel {
  private constructor();
  static load(
    spec: EngineWeightsSpec,
    config: { hiddenSize: number; numLayers: number; numHeads: number; intermediateSize: number; maxSeqLen: number; vocabSize: number; layerNormEps?: number },
    options?: EngineThreadOptions,
  ): Promise<GptModel>;
  readonly threads: number;
  readonly disposed: boolean;
  createSession(): GptSession;
  dispose(): void;
}

export declare class GptSession extends NativeSession {}

/** Moondream's text model (native/napi/phi_napi.cc): f16 [out,in] matrices used in place. */
export declare class PhiModel implements NativeModel {
  private constructor();
  static load(
    spec: EngineWeightsSpec,
    config: {
      hiddenSize: number; numLayers: number; numHeads: number; headDim: number; rotaryDim: number; ropeTheta?: number;
      intermediateSize: number; vocabSize: number; maxSeqLen: number; layerNormEps?: number;
    },
    options?: EngineThreadOptions,
  ): Promise<PhiModel>;
  readonly threads: number;
  readonly disposed: boolean;
  createSession(): PhiSession;
  /** The word-embedding rows of `ids` as f32, [ids.length, hiddenSize]. */
  embed(ids: Int32Array): Float32Array;
  dispose(): void;
}

export declare class PhiSession extends NativeSession {}

/**
 * A vision encoder + projection (native/napi/vit_napi.cc): Moondream's (layout 'moon', the default:
 * f16 [in,out] matrices) or an mmproj GGUF's (layout 'gguf': [out,in] matrices of any dtype the
 * decoder reads; projector 'gemma3' or 'idefics3' with its merge factor).
 */
export declare class VitModel implements NativeModel {
  private constructor();
  static load(
    spec: EngineWeightsSpec,
    config: {
      hiddenSize: number; numLayers: number; numHeads: number; headDim: number; intermediateSize: number;
      patchSize: number; imageSize: number; numPatches: number; textHiddenSize: number; layerNormEps?: number;
      /** Moondream's projector MLP width (projector 'moondream' only). */
      projHidden?: number;
      layout?: 'moon' | 'gguf';
      projector?: 'moondream' | 'gemma3' | 'idefics3';
      activation?: 'gelu_tanh' | 'gelu_quick' | 'gelu_erf' | 'silu';
      imageMean?: number[]; imageStd?: number[];
      /** Patches merged per side into one token (the mmproj projectors). */
      merge?: number;
    },
    options?: EngineThreadOptions,
  ): Promise<VitModel>;
  readonly threads: number;
  readonly disposed: boolean;
  /**
   * Encodes RGB bytes [imageSize, imageSize, 3]: image embeddings [tokens, textHiddenSize] (tokens:
   * numPatches, or numPatches / merge² for the mmproj projectors) and, when asked, the post-LN
   * features [numPatches, hiddenSize]. One call at a time.
   */
  encode(rgb: Uint8Array, features: boolean): Promise<{ embeddings: Float32Array; features?: Float32Array }>;
  abort(): void;
  dispose(): void;
}

/** A kernel table name (native/kernels); which ones exist depends on the CPU and build. */
export type KernelIsa = 'scalar' | 'avx2' | 'avx512' | 'avx512vnni' | 'neon';

/**
 * Synchronous kernel entry points for tests and benchmarks (native/napi/kernels_napi.cc). Each
 * runs one table (`isa`) on caller-allocated typed arrays whose lengths must match the shapes
 * exactly (RangeError otherwise; an unavailable isa throws with code ERR_WEIGHTMAP_ISA).
 * `threads` (default 1) > 1 runs the threaded helpers of kernels/parallel.h over a cached pool.
 * Q8_0: values plus one f32 scale per `group` consecutive elements; xq must lie in [-127, 127].
 */
export interface KernelsBinding {
  /** The active table (best for this CPU, or WEIGHTMAP_ISA, or setIsa). */
  isa(): string;
  /** Tables this build and CPU can run, "scalar" first, best last. */
  availableIsas(): string[];
  setIsa(isa: string): void;
  /** The slots `isa`'s table leaves null (as dispatch offers it, ggml's filled from the scalar table). */
  emptySlots(isa: string): string[];
  physicalCores(): number;
  /** q[n], s[n / group]: s = max|x| / 127 per group, q = round half away from zero (x / s). */
  quantizeQ8(isa: string, x: Float32Array, group: number, q: Int8Array, s: Float32Array): void;
  /** y[rows] = W·x: wq [rows·cols], ws [rows·cols/group], xq [cols], xs [cols/group]. */
  matvecQ8(isa: string, wq: Int8Array, ws: Float32Array, xq: Int8Array, xs: Float32Array, y: Float32Array,
    rows: number, cols: number, group: number, threads?: number): void;
  /** y [m, rows] = X·Wᵀ: xq [m·cols], xs [m·cols/group]. */
  matmulQ8(isa: string, wq: Int8Array, ws: Float32Array, xq: Int8Array, xs: Float32Array, y: Float32Array,
    m: number, rows: number, cols: number, group: number, threads?: number): void;
  /** Rows [r0, r1) of y [m, rows], each activation row bitwise matvecQ8 of that row (one thread). */
  matvecQ8Rows(isa: string, wq: Int8Array, ws: Float32Array, xq: Int8Array, xs: Float32Array, y: Float32Array,
    m: number, rows: number, cols: number, group: number, r0: number, r1: number): void;
  /** matvecQ8Rows through the split form: the activations prepared once, rows [r0, r1) in two calls. */
  matvecQ8Prepared(isa: string, wq: Int8Array, ws: Float32Array, xq: Int8Array, xs: Float32Array, y: Float32Array,
    m: number, rows: number, cols: number, group: number, r0: number, r1: number): void;
  /** x = the exact dequantization of `blocks` (whole blocks of ggml `type`: 'q4_0', 'q4_k', 'iq4_xs', ...). */
  dequantizeBlocks(type: string, blocks: Uint8Array, x: Float32Array): void;
  /** Activations for ggmlMatmul: q, d as quantizeQ8 with group 32, sum[n / 16] = Σ q per 16 values. */
  quantizeAct(isa: string, x: Float32Array, q: Int8Array, d: Float32Array, sum: Int16Array): void;
  /**
   * y [m, rows] = X·Wᵀ, W [rows, n] of ggml blocks of `type` (row after row), X quantized by
   * quantizeAct (xq [m·n], xd [m·n/32], xsum [m·n/16]); contract in native/kernels/kernels.h.
   */
  ggmlMatmul(isa: string, type: string, w: Uint8Array, xq: Int8Array, xd: Float32Array, xsum: Int16Array, y: Float32Array,
    m: number, rows: number, n: number, threads?: number): void;
  /**
   * Per-row int8 activations: s[i] = max|x_i| / 127, q = round half away (x · f32(127 / max|x_i|)) in
   * [-127, 127], rows of ldq >= k values (the padding 0), decoded from the table's own encoding.
   */
  quantizeI8(isa: string, x: Float32Array, m: number, k: number, ldq: number, q: Int8Array, s: Float32Array): void;
  /**
   * Per-channel int8: y [m, n] = fma(Σ_k xq·wq, xs[i]·ws[j], bias[j]) with wq [n·k] (one scale per row
   * of W), xq [m·k] in [-127, 127] (one scale per row), bias [n] or null; k <= 65536. W is packed once,
   * then the product runs `repeat` times (default 1); returns the seconds of those runs (benchmarks).
   */
  gemmI8(isa: string, wq: Int8Array, ws: Float32Array, xq: Int8Array, xs: Float32Array, bias: Float32Array | null,
    y: Float32Array, m: number, n: number, k: number, threads?: number, repeat?: number): number;
  /** y [m, n] = x [m, k] · Wᵀ + bias, W f32 [n, k] (packed once into panels), bias [n] or null. */
  sgemmPacked(isa: string, x: Float32Array, w: Float32Array, bias: Float32Array | null, y: Float32Array, m: number,
    n: number, k: number, threads?: number): void;
  /** c [m, n] = a [m, k] · b: b f16 [k, n] (hgemm) or [n, k] (hgemmTrans). */
  hgemm(isa: string, a: Float32Array, b: Uint16Array, c: Float32Array, m: number, k: number, n: number, threads?: number): void;
  hgemmTrans(isa: string, a: Float32Array, b: Uint16Array, c: Float32Array, m: number, k: number, n: number, threads?: number): void;
  sgemm(isa: string, a: Float32Array, b: Float32Array, c: Float32Array, m: number, k: number, n: number, threads?: number): void;
  sgemmTrans(isa: string, a: Float32Array, b: Float32Array, c: Float32Array, m: number, k: number, n: number, threads?: number): void;
  /** The same with b in a q8_0 KV cache's rows: int8 bq [k, n] (q8Gemm) or [n, k] (q8GemmTrans), bs one scale per `group` values of a row; one thread. */
  q8Gemm(isa: string, a: Float32Array, bq: Int8Array, bs: Float32Array, group: number, c: Float32Array, m: number, k: number, n: number): void;
  q8GemmTrans(isa: string, a: Float32Array, bq: Int8Array, bs: Float32Array, group: number, c: Float32Array, m: number, k: number, n: number): void;
  f16ToF32(isa: string, x: Uint16Array, y: Float32Array): void;
  /** Round to nearest even; NaN stays NaN (quiet, payload truncated). */
  f32ToF16(isa: string, x: Float32Array, y: Uint16Array): void;
  bf16ToF32(isa: string, x: Uint16Array, y: Float32Array): void;
  dotF32(isa: string, a: Float32Array, b: Float32Array): number;
  /** y += alpha·x */
  axpyF32(isa: string, alpha: number, x: Float32Array, y: Float32Array): void;
  rmsnorm(x: Float32Array, w: Float32Array, y: Float32Array, eps: number): void;
  layernorm(x: Float32Array, g: Float32Array, b: Float32Array | null, y: Float32Array, eps: number): void;
  /** In place. */
  softmax(x: Float32Array): void;
  /** x = e^(x·scale - shift) in place (the kernels' polynomial exp); returns Σ x in double. */
  expSum(x: Float32Array, scale: number, shift: number): number;
  /** One head at columns [0, hd) of [T, ld] matrices: out[t] = Σ_j softmax_j(scale·q[t]·k[j])·v[j]. */
  attention(isa: string, q: Float32Array, k: Float32Array, v: Float32Array, out: Float32Array, T: number, hd: number,
    ld: number, scale: number): void;
  siluMul(gate: Float32Array, up: Float32Array, y: Float32Array): void;
  geluTanh(x: Float32Array): void;
  geluErf(x: Float32Array): void;
  /**
   * The engines' RoPE (native/engines/rope.h), in place on the first rotDim entries: pairs
   * (i, i + rotDim/2), or (2i, 2i+1) when interleaved, turned by pos·theta^(-2i/rotDim) / factors[i].
   */
  rope(x: Float32Array, rotDim: number, pos: number, theta: number, interleaved: boolean, factors?: Float32Array): void;
  /** The [begin, end) chunks of one ThreadPool::ParallelFor over [0, n), flattened (pool contract tests). */
  threadPoolChunks(n: number, grain: number, threads: number): number[];
  /**
   * The blocks of one kernels::ParallelRowBlocks over [0, n) as [begin, end, thread] triples,
   * flattened in the order they started (thread: 0, 1, ... by first appearance); the block
   * starting at 0 busy-waits delayUs µs (so the other threads must take the rest of its range).
   */
  threadPoolRowBlocks(n: number, grain: number, threads: number, waitUs?: number): number[];
  /**
   * Seconds to read every byte of `view` `passes` times, split across `threads` threads, with the
   * widest loads of the active ISA and, when `prefetch` > 0, software prefetches that many bytes ahead.
   */
  readBandwidth(view: ArrayBufferView, threads: number, passes: number, prefetch?: number): number;
}

/**
 * Sampling parameters as the native sampler reads them (native/napi/sampling_params.cc); every
 * field optional (defaults: greedy, no truncation, no penalties). lib/generation/sampling.ts validates ranges
 * and builds this from the user's SamplingOptions. Order of operations: logit bias, penalties over
 * the last penaltyLastN tokens, then argmax if temperature <= 0, else top-k, top-p, min-p,
 * temperature, softmax and one seeded draw (native/sampling/sampler.h).
 */
export interface NativeSamplingParams {
  temperature?: number;
  /** <= 0: off. */
  topK?: number;
  /** >= 1: off. */
  topP?: number;
  /** <= 0: off. */
  minP?: number;
  /** 1: off. */
  repeatPenalty?: number;
  frequencyPenalty?: number;
  presencePenalty?: number;
  /** 0: no penalties; < 0: all tokens so far. */
  penaltyLastN?: number;
  /** Added to the logits of these ids (same length; ids outside the vocabulary are ignored). */
  logitBiasIds?: Int32Array;
  logitBiasValues?: Float32Array;
  /**
   * A constraint's allowed tokens as a bitset (bit id % 32 of word id / 32 set: the token may be
   * drawn; ids past its end are banned), applied after the bias and the penalties. Omit for all.
   */
  allowedTokens?: Uint32Array;
}

/** A seed: a non-negative safe integer or a BigInt below 2^64 (0 is replaced by a fixed constant). */
export type NativeSeed = number | bigint;

/** The token sampler with its xorshift64* generator (native/napi/sampler_napi.cc). Synchronous. */
export declare class Sampler {
  constructor(seed: NativeSeed);
  /**
   * Picks a token id from `logits` (not modified); `recent` = the sequence so far, oldest first.
   * `params` and `allowedTokens` as NativeSession.step reads them.
   */
  sample(logits: Float32Array, params?: NativeSamplingParams, recent?: Int32Array, allowedTokens?: Uint32Array): number;
  reseed(seed: NativeSeed): void;
  /** A copy of `logits` after the logit bias, the penalties and allowedTokens (the deterministic first stages). */
  static adjustLogits(logits: Float32Array, params?: NativeSamplingParams, recent?: Int32Array): Float32Array;
  /** The generator's u64 state. */
  readonly rngState: bigint;
}

/** The BERT encoder's configuration (BertConfig's fields the native side reads). */
export interface BertEncoderConfig {
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  intermediateSize: number;
  vocabSize: number;
  maxPositionEmbeddings: number;
  typeVocabSize: number;
  layerNormEps: number;
  /** 'swiglu': silu(x·Wgateᵀ) ⊙ (x·W1ᵀ), the gate as `encoder.layer.N.intermediate.gate.weight` (nomic-bert). */
  hiddenAct: 'gelu' | 'gelu_tanh' | 'swiglu';
  /** Rotary positions (NeoX halves) with this base instead of a position table; absent biases are 0 (nomic-bert). */
  ropeTheta?: number;
  /** Outputs of a cross-encoder's classifier (`classifier.weight` [numLabels, H]); absent or 0: an embedder, no head. */
  numLabels?: number;
  /** The head starts with `pooler.dense` + tanh on the [CLS] row (numLabels > 0 only). */
  pooler?: boolean;
}

export interface BertEncoderInfo {
  hiddenSize: number;
  threads: number;
  quant: 'f32' | 'int8' | 'q8_0';
  /** The kernel table in use ("scalar", "avx2", "avx512", ...). */
  isa: string;
  loadMs: number;
  /** Bytes copied at load: biases and norms, plus every converted or quantized matrix. */
  copiedBytes: number;
  convertedMatrices: number;
  /** The classifier's outputs (0: an embedder). */
  numLabels: number;
}

/** One running encode: its result and a way to stop it at the next layer (rejects with ABORT_ERR). */
export interface BertEncodeJob {
  promise: Promise<Float32Array>;
  abort(): void;
}

/**
 * A BERT sentence encoder (native/napi/bert_napi.cc) over mapped HF [out,in] weights: f32 used in
 * place (f16 through hgemm_trans), or every linear layer quantized at load (per-channel int8 through
 * gemm_i8, or Q8_0 groups through matmul_q8). Any number of
 * encode() calls may run at once; dispose() lets running ones finish.
 */
export declare class BertEncoder implements NativeModel {
  private constructor();
  /** Checks every tensor against the config (rejects with a WeightFormatError code) and prepares the weights. */
  static load(spec: EngineWeightsSpec, config: BertEncoderConfig, options?: { threads?: number; quant?: 'f32' | 'int8' | 'q8_0' }): Promise<BertEncoder>;
  readonly threads: number;
  readonly disposed: boolean;
  readonly info: BertEncoderInfo;
  /**
   * Packed batch: sequence i is ids[Σ_{j<i} lengths[j] ...] (each length in [1, maxPositionEmbeddings],
   * ids in [0, vocabSize), else a RangeError with code ERR_OUT_OF_RANGE). Resolves to
   * [lengths.length, hiddenSize] pooled vectors.
   */
  encode(ids: Int32Array, lengths: Int32Array, pooling: 'mean' | 'cls' | 'max', normalize: boolean): BertEncodeJob;
  /**
   * A cross-encoder's head on each sequence's first ([CLS]) row: resolves to [lengths.length,
   * numLabels] logits. `types` holds one token type per id (in [0, typeVocabSize)); null: all 0.
   * TypeError when the encoder was loaded without a head.
   */
  classify(ids: Int32Array, types: Int32Array | null, lengths: Int32Array): BertEncodeJob;
  dispose(): void;
}


export interface DecoderNativeOptions {
  /** 0 or absent: physical cores. */
  threads?: number;
  /** 'none' (default): weights as stored; 'q8_0': quantize float matrices at load; 'f32': dequantize all. */
  quant?: DecoderQuant;
  /** Q8_0 group size for quant 'q8_0' (default 32). */
  groupSize?: number;
  /**
   * A pipeline stage: only layers [firstLayer, endLayer) (default 0 and numLayers). The embedding
   * is needed only when firstLayer is 0 (or the head is tied), the final norm and head only when
   * endLayer is numLayers.
   */
  firstLayer?: number;
  endLayer?: number;
}

export interface DecoderLoadInfo {
  /** Time to check and prepare the weights. */
  loadMs: number;
  /** Bytes allocated for converted copies (norms, bf16, GGUF Q8_0 repacking, quantization, misaligned data). */
  copiedBytes: number;
  /** Matrices converted at load. */
  converted: number;
  /** Matrices left as stored because the Q8_0 group size does not divide their rows. */
  kept: string[];
  threads: number;
  isa: string;
}

/**
 * A loaded Llama/Qwen3 decoder (native/napi/decoder_napi.cc): Q8_0 (int8 kernels, runq-style
 * activations), f16 and f32 weights used in place from the mappings.
 */
export declare class DecoderModel implements NativeModel {
  private constructor();
  static load(spec: EngineWeightsSpec, config: DecoderConfig, options?: DecoderNativeOptions): Promise<DecoderModel>;
  readonly loadInfo: DecoderLoadInfo;
  readonly threads: number;
  readonly disposed: boolean;
  /**
   * A session with its own KV cache of `contextLength` positions (1..maxSeqLen), reserved, not
   * written; `kvCache`: its element type (KvCacheType).
   */
  createSession(options: { contextLength: number; kvCache?: KvCacheType }): DecoderSession;
  /**
   * One decode step of several idle sessions of this model together (continuous batching): row i
   * feeds ids[i] at sessions[i].position and draws its next token with samplers[i], params[i] and
   * allowed?.[i], as step() would, bitwise; each weight block is read from memory once for all rows. Resolves to the tokens,
   * -1 for a row whose session was aborted meanwhile (that session keeps its position). Sessions
   * and samplers must be distinct and not in use (ERR_WEIGHTMAP_BUSY).
   */
  stepBatch(
    sessions: readonly DecoderSession[],
    ids: Int32Array,
    samplers: readonly Sampler[],
    params: readonly (NativeSamplingParams | undefined)[],
    allowed?: readonly (Uint32Array | undefined)[],
  ): Promise<Int32Array>;
  /**
   * The embedding models' output mode (native/engines/decoder/pooled.h): the packed sequences
   * ids[offset_i .. offset_i + lengths[i]), each from position 0 in a one-pass KV cache of its own,
   * run in one pass; resolves to the final hidden state (after the final norm) of each sequence's
   * last token, or the mean of its tokens' ('mean'), Float32Array [lengths.length, hiddenSize].
   * At most 65536 tokens in one call. The model must be whole (not a pipeline stage).
   */
  pool(ids: Int32Array, lengths: Int32Array, pooling: 'last' | 'mean'): { promise: Promise<Float32Array>; abort(): void };
  /** Sessions made from it reject further calls with ERR_WEIGHTMAP_DISPOSED. */
  dispose(): void;
}

/** One sequence of a DecoderModel; a pipeline stage past layer 0 takes hidden states [n, hiddenSize] as input rows. */
export declare class DecoderSession extends NativeSession {}

export interface NativeBinding {
  MappedFile: typeof MappedFile;
  GptModel: typeof GptModel;
  GptSession: typeof GptSession;
  PhiModel: typeof PhiModel;
  PhiSession: typeof PhiSession;
  VitModel: typeof VitModel;
  kernels: KernelsBinding;
  Sampler: typeof Sampler;
  BertEncoder: typeof BertEncoder;
  /** `count` draws of two generators with the same seed: one read as u32, one as f32 in [0, 1). */
  rngDraws(seed: NativeSeed, count: number): { u32: Uint32Array; f32: Float32Array };
  DecoderModel: typeof DecoderModel;
  DecoderSession: typeof DecoderSession;
  /**
   * The names native/napi/decoder_config.cc reads: the DecoderConfig fields (one row each) and the
   * value set of each enum-valued option, in order (test/engines/decoder-names.test.ts checks them
   * against lib/architectures/decoder.ts).
   */
  decoderNames: { configFields: string[]; kvCacheTypes: string[]; activations: string[]; ropePairings: string[]; quants: string[] };
  /**
   * Q8_0 weight quantization off the JS thread (native/napi/quantize_napi.cc): `count` elements of
   * `dtype` at `byteOffset` of `file` -> q [count] and scales [count / group], per group
   * s = max|w| / 127 and q = round-half-to-even(w / s) in float32 (FORMATS.md §5.2; a zero group
   * gets s = 0, q = 0; NaN -> 0). Resolves when both arrays are filled; keeps the mapping alive.
   */
  /**
   * `count` elements at `byteOffset` of `file` as float32 into `out` [count], on libuv's thread
   * pool (native/napi/dequantize_napi.cc): f32/f16/bf16 widened exactly, ggml blocks ('ggml_q8_0',
   * 'ggml_q4_k', ...; count whole blocks) dequantized bit-equal to ggml. RangeError if the range
   * lies outside the file; keeps the mapping and `out` alive until it settles.
   */
  dequantizeWeights(file: MappedFile, byteOffset: number, dtype: string, count: number, out: Float32Array): Promise<void>;
  /**
   * ggml Q8_0 blocks (34 bytes per 32 elements: f16 d, 32 int8) of `count` f32/f16/bf16 elements
   * of a MappedFile, or of a Float32Array, into `out` on libuv's thread pool
   * (native/convert/quantize_q8.h). `count` must be a multiple of 32 and `out` exactly count/32·34 bytes.
   */
  quantizeGgmlQ8_0(file: MappedFile, byteOffset: number, dtype: 'f32' | 'f16' | 'bf16', count: number, out: Uint8Array): Promise<void>;
  quantizeGgmlQ8_0(values: Float32Array, out: Uint8Array): Promise<void>;
  /** From elements first.. of a q8_0 tensor (int8 at byteOffset, float32 scales per `group` from scalesByteOffset), dequantized as q·scale first. */
  quantizeGgmlQ8_0(file: MappedFile, byteOffset: number, dtype: 'q8_0', count: number, out: Uint8Array, scalesByteOffset: number, group: number, first: number): Promise<void>;
  quantizeQ8Weights(
    file: MappedFile,
    byteOffset: number,
    dtype: 'f32' | 'f16' | 'bf16',
    count: number,
    group: number,
    q: Int8Array,
    scales: Float32Array,
  ): Promise<void>;
  /**
   * zlib's CRC-32 of `view` on libuv's thread pool (native/napi/checksum_napi.cc), continuing from
   * `previous` like zlib.crc32(view, previous). Keeps the view's ArrayBuffer referenced until it
   * settles; a view of a MappedFile must name it as `file` (RangeError if the view lies outside
   * it), so that closing the file meanwhile cannot unmap the pages being read (ERR_WEIGHTMAP_CLOSED
   * if it is closed already). impl 'table' (or WEIGHTMAP_CRC=table in the environment, read at each call) forces the
   * portable slice-by-8 walk; 'pclmul' / 'auto' use PCLMULQDQ folding where the CPU has it.
   * threads: pieces of >= 1 MiB over up to that many threads (default: physical cores, at most 4).
   */
  crc32(
    view: Uint8Array,
    previous?: number,
    options?: { impl?: 'auto' | 'table' | 'pclmul'; threads?: number; file?: MappedFile },
  ): Promise<number>;
  /** Whether crc32's 'auto' / 'pclmul' run the PCLMULQDQ code on this CPU. */
  crc32HasPclmul(): boolean;
  /**
   * Walks up to `count` length-prefixed records of `bytes` from `at` that lie whole before `end`
   * (native/napi/scan_napi.cc): 'u64-length', a GGUF string (u64 length, high half 0, then the
   * bytes); 'scored', an ajc1 `.tokenizer` entry (f32 score, u32 length, the bytes). Returns
   * [where it stopped, records walked, the longest payload]; it stops early at the first record
   * that does not fit. Synchronous (~0.3 ms for 151k records).
   */
  skipRecords(bytes: Uint8Array, end: number, at: number, count: number, layout: 'u64-length' | 'scored'): [number, number, number];
  /**
   * A packed tokenizer's element checks (lib/tokenizers/packed.ts, checkPackedSteps's loops) on
   * libuv's thread pool: `problem` names the first element that fails, in the words packed.ts uses
   * (null when all pass); `filled` counts the vocabulary index's slots in use, `used` the merge
   * table's. Keeps the arrays referenced until it settles.
   */
  checkPackedTables(
    offsets: Uint32Array,
    ids: Int32Array,
    byId: Int32Array,
    index: Int32Array,
    keys: Int32Array,
    ranks: Int32Array,
    merged: Int32Array,
  ): Promise<{ problem: string | null; filled: number; used: number }>;
  /**
   * Maps the tensors of the GGUF in `file` into this process on libuv's thread pool
   * (native/mmap/early_prefault.h): all but bf16 ones and an untied token_embd.weight, with the
   * decoder's huge-page advice, skipping what an earlier prefault of the mapping claimed. Resolves
   * to the bytes it prefaulted (whole 64 KB units); 0 for a file whose header it cannot read (never
   * rejects for that: the JS reader reports what is wrong).
   */
  prefaultGgufWeights(file: MappedFile): Promise<number>;
  /**
   * The same over spans a reader found itself (an ajc1's fixed layout): `streamed` and `partial`
   * as [begin, end, begin, end, ...] byte offsets of `file`; `partial` spans (an untied embedding)
   * are not prefaulted and keep small pages.
   */
  prefaultWeightSpans(file: MappedFile, streamed: number[], partial: number[]): Promise<number>;
}
