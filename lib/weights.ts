/**
 * ModelWeights: what every format reader returns and every writer takes. A configuration in
 * one canonical vocabulary plus named tensor views into mapped files, in one canonical (HF-style)
 * naming. Nothing here owns a copy of the weights.
 */
import type { DecoderArchitecture } from './architectures/decoder';
import type { MappedSource } from './mapping';

export type FormatName = 'tllm' | 'moon' | 'embd' | 'sepweight' | 'ajc1' | 'safetensors' | 'gguf' | 'llama2c' | 'npy';

/**
 * Element types. `q8_0`: int8 values at byteOffset with f32 scales elsewhere (`scales`), one
 * per `groupSize` consecutive elements of the flattened tensor (ajc1, llama2.c v2).
 * `ggml_q8_0`: ggml's interleaved blocks of 32 (f16 scale then 32 int8 = 34 bytes) (GGUF).
 * `ggml_q4_0` ... `ggml_iq4_xs`: ggml's other block-quantized types (GGUF), rows of whole blocks;
 * layouts in native/kernels/ggml_blocks.h, read as float32 with `dequantize` (lib/dequantize.ts).
 */
export type DType =
  | 'f64' | 'f32' | 'f16' | 'bf16'
  | 'i64' | 'i32' | 'i16' | 'i8'
  | 'u64' | 'u32' | 'u16' | 'u8'
  | 'bool' | 'q8_0' | 'ggml_q8_0' | GgmlBlockDType;

/** Values per block and bytes per block of each ggml block dtype (native/kernels/ggml_blocks.h). */
export const GGML_BLOCK_LAYOUT = {
  ggml_q4_0: { values: 32, bytes: 18 },
  ggml_q4_1: { values: 32, bytes: 20 },
  ggml_q5_0: { values: 32, bytes: 22 },
  ggml_q5_1: { values: 32, bytes: 24 },
  ggml_q2_k: { values: 256, bytes: 84 },
  ggml_q3_k: { values: 256, bytes: 110 },
  ggml_q4_k: { values: 256, bytes: 144 },
  ggml_q5_k: { values: 256, bytes: 176 },
  ggml_q6_k: { values: 256, bytes: 210 },
  ggml_iq4_nl: { values: 32, bytes: 18 },
  ggml_iq4_xs: { values: 256, bytes: 136 },
} as const;
export type GgmlBlockDType = keyof typeof GGML_BLOCK_LAYOUT;

export function isGgmlBlockDType(dtype: DType): dtype is GgmlBlockDType {
  return Object.prototype.hasOwnProperty.call(GGML_BLOCK_LAYOUT, dtype);
}

/** The dtypes with a fixed number of bytes per element. */
export type PlainDType = Exclude<DType, 'q8_0' | 'ggml_q8_0' | GgmlBlockDType>;

/** Bytes per element of the plain dtypes. */
export const DTYPE_BYTES: Readonly<Record<PlainDType, number>> = {
  f64: 8, f32: 4, f16: 2, bf16: 2,
  i64: 8, i32: 4, i16: 2, i8: 1,
  u64: 8, u32: 4, u16: 2, u8: 1,
  bool: 1,
};

export interface TensorView {
  /** Canonical name (see lib/architectures). */
  name: string;
  dtype: DType;
  /** Shape as stored, outermost first. */
  shape: number[];
  /** The mapped file holding the bytes. */
  source: MappedSource;
  byteOffset: number;
  byteLength: number;
  /** q8_0 only: the f32 group scales, in the same source. */
  scales?: { byteOffset: number; byteLength: number; groupSize: number };
  /**
   * True when the stored matrix is the transpose of the canonical orientation ([out,in] for
   * linear layers): TLLM's and MOON's vision matrices are stored [in,out].
   */
  transposed?: boolean;
}

export type Architecture = DecoderArchitecture | 'tllm' | 'bert' | 'moondream' | 'unknown';

/** Llama, Qwen2, Qwen3, Mistral and Gemma 3 (the decoder engine; variants in lib/architectures/decoder.ts). Matrices [out,in]. */
export interface DecoderConfig {
  architecture: DecoderArchitecture;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  numKvHeads: number;
  headDim: number;
  vocabSize: number;
  maxSeqLen: number;
  rmsNormEps: number;
  ropeTheta: number;
  /** 'half': pairs (i, i+hd/2) (HF order); 'interleaved': pairs (2i, 2i+1) (Meta/llama2.c/GGUF llama). */
  ropePairing: 'half' | 'interleaved';
  tieWordEmbeddings: boolean;
  /** Qwen3's per-head RMSNorm of q and k before RoPE. */
  qkNorm: boolean;
  /** Qwen2's biases of the q, k and v projections (`*_proj.bias`), added before RoPE. Default false. */
  qkvBias?: boolean;
  /**
   * Llama 3's RoPE frequency factors (headDim / 2 values, GGUF `rope_freqs.weight`): the inverse
   * frequency of pair i is divided by factor i. Absent: plain RoPE.
   */
  ropeFreqFactors?: number[];
  /**
   * Sliding-window attention (Mistral; Gemma 3's local layers): a position attends to the last
   * slidingWindow positions, itself included. Absent: full attention.
   */
  slidingWindow?: number;
  /** With slidingWindow: layer l attends globally when l % N == N - 1 (Gemma 3: 6). Absent or 0: every layer slides. */
  slidingWindowPattern?: number;
  /** RoPE base of the sliding layers (Gemma 3's rope_local_base_freq); absent: ropeTheta. */
  ropeLocalTheta?: number;
  /**
   * Gemma: every norm scales by (normWeightOffset + w) of its stored weight w: 1 for HF checkpoints,
   * 0 for llama.cpp's GGUF (its converter stores 1 + w). Absent: 0.
   */
  normWeightOffset?: number;
  /** Gemma 3: RMSNorm of the attention and FFN outputs before their residual adds (see DECODER_VARIANTS). */
  sandwichNorms?: boolean;
  /** The FFN gate's activation: 'silu' (SwiGLU, the default) or 'gelu_tanh' (GeGLU, Gemma). */
  activation?: 'silu' | 'gelu_tanh';
  /** Token embeddings are multiplied by this (Gemma: √hiddenSize). Absent: 1. */
  embeddingScale?: number;
  /** Attention scores scale by 1/√queryPreAttnScalar (Gemma 3's query_pre_attn_scalar). Absent: headDim. */
  queryPreAttnScalar?: number;
  bosTokenId?: number;
  eosTokenIds?: number[];
  /** Q8_0 group size of the stored weights, when quantized. */
  groupSize?: number;
}

/** The TLLM GPT-style model (FORMATS.md §1). Matrices stored [in,out]. */
export interface TllmConfig {
  architecture: 'tllm';
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  intermediateSize: number;
  maxSeqLen: number;
  vocabSize: number;
  dropout: number;
  layerNormEps: number;
}

/** BERT / MiniLM sentence embedders (FORMATS.md §3). */
export interface BertConfig {
  architecture: 'bert';
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  intermediateSize: number;
  vocabSize: number;
  maxPositionEmbeddings: number;
  typeVocabSize: number;
  layerNormEps: number;
  hiddenAct: 'gelu' | 'gelu_tanh';
  /** sentence-transformers' max_seq_length (truncation), ≤ maxPositionEmbeddings. */
  maxSeqLength: number;
  pooling: 'mean' | 'cls' | 'max';
  normalize: boolean;
}

/** Moondream2 (FORMATS.md §2): phi-style text model plus the SigLIP-style vision encoder. */
export interface MoondreamConfig {
  architecture: 'moondream';
  text: {
    hiddenSize: number;
    numLayers: number;
    numHeads: number;
    headDim: number;
    rotaryDim: number;
    ropeTheta: number;
    intermediateSize: number;
    vocabSize: number;
    maxSeqLen: number;
    layerNormEps: number;
    bosTokenId: number;
    eosTokenId: number;
  };
  vision: {
    hiddenSize: number;
    numLayers: number;
    numHeads: number;
    headDim: number;
    intermediateSize: number;
    patchSize: number;
    imageSize: number;
    numPatches: number;
    layerNormEps: number;
    projHidden: number;
  };
}

/** A tree or file of tensors with no model around it (a lone .npy, an unknown safetensors). */
export interface UnknownConfig {
  architecture: 'unknown';
}

export type ModelConfig = DecoderConfig | TllmConfig | BertConfig | MoondreamConfig | UnknownConfig;

/** A vocabulary stored inside or beside the weights, for lib/tokenizers. */
export type TokenizerData =
  | {
      /** BERT WordPiece (EMBD's embedded vocabulary, vocab.txt). */
      kind: 'wordpiece';
      tokens: string[];
      specialIds: { pad: number; unk: number; cls: number; sep: number; mask: number };
      doLowerCase: boolean;
    }
  | {
      /** Byte strings with merge scores: llama2.c tokenizer.bin, ajc1 .tokenizer. */
      kind: 'scored';
      style: 'llama2c' | 'ajc1';
      tokens: Uint8Array[];
      scores: Float32Array;
      maxTokenLength: number;
      bosId?: number;
      eosId?: number;
    }
  | {
      /** GGUF `tokenizer.ggml.*` metadata. */
      kind: 'gguf';
      model: string;
      pre?: string;
      tokens: string[];
      scores?: Float32Array;
      tokenTypes?: Int32Array;
      merges?: string[];
      bosId?: number;
      eosId?: number;
      unkId?: number;
      padId?: number;
      /** BERT vocabularies: [SEP], [CLS], [MASK]. */
      sepId?: number;
      clsId?: number;
      maskId?: number;
      addBos?: boolean;
      addEos?: boolean;
      /** SentencePiece vocabularies: prepend a space to the text (llama.cpp default true). */
      addSpacePrefix?: boolean;
    };

export interface ModelWeights {
  format: FormatName;
  /** The file or folder read. */
  path: string;
  architecture: Architecture;
  config: ModelConfig;
  /** In the format's storage order. */
  tensors: TensorView[];
  /** Format-specific extras: EMBD metadata entries, GGUF key/values, safetensors __metadata__, ... */
  metadata: Record<string, unknown>;
  /** What the reader verified of the format's checksums, for formats that have them (EMBD). */
  checksums?: 'verified' | 'not verified' | 'absent';
  /** Vocabulary found in or beside the weights, if any. */
  tokenizer?: TokenizerData;
  /** Every file mapped for these weights. */
  sources: MappedSource[];
}

/** Finds a tensor by canonical name. */
export function findTensor(weights: ModelWeights, name: string): TensorView | undefined {
  return weights.tensors.find((t) => t.name === name);
}

/** Unmaps every file behind `weights` (engines that still run keep their own references). */
export function closeWeights(weights: ModelWeights): void {
  for (const s of weights.sources) s.close();
}

export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
