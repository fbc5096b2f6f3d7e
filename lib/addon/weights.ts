/**
 * ModelWeights: what every format reader returns and every writer takes. A configuration in
 * one canonical vocabulary (ModelConfig: each architecture's own, in lib/architectures) plus named
 * tensor views into mapped files, in one canonical (HF-style) naming. Nothing here owns a copy of the weights.
 */
import type { Architecture, ModelConfig } from '../architectures/model-config';
import type { MappedSource } from './mapping';

/** The weight formats weightmap reads and writes (docs/formats.md). */
export type FormatName = 'tllm' | 'moon' | 'embd' | 'sepweight' | 'ajc1' | 'safetensors' | 'gguf' | 'llama2c' | 'npy';

/**
 * Element types. `q8_0`: int8 values at byteOffset with f32 scales elsewhere (`scales`), one
 * per `groupSize` consecutive elements of the flattened tensor (ajc1, llama2.c v2).
 * `ggml_q8_0`: ggml's interleaved blocks of 32 (f16 scale then 32 int8 = 34 bytes) (GGUF).
 * `ggml_q4_0` ... `ggml_iq4_xs`, `ggml_mxfp4`: ggml's other block-quantized types (GGUF), rows of whole blocks;
 * layouts in native/kernels/ggml_blocks.h, read as float32 with `dequantize` (lib/formats/quantization/dequantize.ts).
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
  ggml_mxfp4: { values: 32, bytes: 17 },
} as const;
/** ggml's block-quantized element types beyond Q8_0 (GGUF). */
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

/** One tensor of ModelWeights: where its bytes are in a mapped file, and how to read them. Zero-copy. */
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

/**
 * Rows [row0, row0 + rows) of a row-major matrix view, as a view named `name` of the same bytes (a
 * fused tensor's part: no copy). Undefined when the rows do not split into whole byte ranges (a
 * transposed matrix, q8_0 with separate scales).
 */
export function rowBlockView(view: TensorView, name: string, row0: number, rows: number): TensorView | undefined {
  const rowBytes = view.byteLength / view.shape[0];
  if (view.transposed || view.scales || view.shape.length !== 2 || !Number.isInteger(rowBytes) || row0 + rows > view.shape[0]) return undefined;
  return { ...view, name, shape: [rows, view.shape[1]], byteOffset: view.byteOffset + row0 * rowBytes, byteLength: rows * rowBytes };
}

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
      /** ajc1 made from an HF folder: the GGUF pre-tokenizer name of its tokenizer.json (absent: Qwen's, as an ajc1 file holds). */
      pre?: string;
      /** ajc1 made from an HF folder: whether its tokenizer.json adds BOS (absent: no, as Qwen's). */
      addBos?: boolean;
      /** An HF folder's vocabulary: its tokenizer.json appends eosId (Qwen3-Embedding's <|endoftext|>; absent: no). */
      addEos?: boolean;
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
      /** UGM ("t5") vocabularies: sentencepiece's normalizer_spec.precompiled_charsmap and remove_extra_whitespaces. */
      precompiledCharsmap?: Uint8Array;
      removeExtraWhitespaces?: boolean;
      /** general.architecture: llama.cpp gives some families' tokens attributes by it (nomic-bert-moe's <mask> strips the spaces before it). */
      architecture?: string;
    };

/** What every reader returns and every writer takes: a configuration plus named tensor views into mapped files. */
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
  /**
   * Tensors the reader could not view in place and converted once into a mapped file of the cache
   * (gpt-oss's HF experts: lib/formats/containers/converted-file.ts): that file, how many tensors
   * and bytes, and whether the cache held it already.
   */
  converted?: {
    file: string;
    tensors: number;
    bytes: number;
    reused: boolean;
    /**
     * Read with ReadOptions.convert false: the tensors a read would convert (into `file`, which
     * `reused` says the cache holds already), none made or mapped; `tensors` lacks them.
     */
    pending?: { name: string; dtype: DType; shape: number[]; byteLength: number }[];
  };
}

/** Finds a tensor by canonical name. */
export function findTensor(weights: ModelWeights, name: string): TensorView | undefined {
  return weights.tensors.find((t) => t.name === name);
}

/** Unmaps every file behind `weights` (engines that still run keep their own references). */
export function closeWeights(weights: ModelWeights): void {
  for (const s of weights.sources) s.close();
}

/** The number of elements of a shape (1 for a scalar). */
export function numel(shape: readonly number[]): number {
  return shape.reduce((a, b) => a * b, 1);
}
