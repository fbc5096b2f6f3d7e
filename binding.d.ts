/**
 * The exact surface of the native addon (native/napi/*.cc). lib/native.ts loads it and every
 * facade module is type-checked against these declarations.
 */

export type MadviseAdvice = 'normal' | 'sequential' | 'random' | 'willneed' | 'dontneed';

/** A read-only memory mapping of one file (native/napi/mapped_file.cc). */
export declare class MappedFile {
  /** Maps `path`; throws an Error with a POSIX `code` (ENOENT, EACCES, EISDIR, ...). */
  constructor(path: string);
  /** Size of the file in bytes (0 once closed). */
  readonly byteLength: number;
  readonly path: string | null;
  readonly closed: boolean;
  /** A zero-copy external ArrayBuffer over the whole mapping (the same one on every call). */
  buffer(): ArrayBuffer;
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
}

/** Tensor views by canonical name (lib/engines/native-spec.ts builds it from ModelWeights). */
export interface EngineWeightsSpec {
  files: MappedFile[];
  tensors: Record<string, EngineTensorDesc>;
}

/** Engine threads: 0 or absent = physical cores. */
export interface EngineThreadOptions {
  threads?: number;
}

/**
 * Errors of the gpt/phi/vit engines carry a `code`: a WeightFormatError code for a bad spec
 * (MISSING_TENSOR, SHAPE_MISMATCH, BAD_DTYPE, OUT_OF_BOUNDS, CONFIG_MISMATCH, UNSUPPORTED),
 * ERR_OUT_OF_RANGE, ERR_WEIGHTMAP_BUSY, ERR_WEIGHTMAP_DISPOSED, ABORT_ERR.
 */

/** The TLLM GPT-style model (native/napi/gpt_napi.cc): f32 [in,out] matrices used in place. */
export declare class GptModel {
  constructor(
    spec: EngineWeightsSpec,
    config: { hiddenSize: number; numLayers: number; numHeads: number; intermediateSize: number; maxSeqLen: number; vocabSize: number; layerNormEps?: number },
    options?: EngineThreadOptions,
  );
  readonly threads: number;
  /** Sessions already made keep the weights mapped until they are disposed. */
  dispose(): void;
}

/** One sequence of a GptModel with its KV cache. One call at a time. */
export declare class GptSession {
  constructor(model: GptModel);
  readonly position: number;
  readonly cacheBytes: number;
  /** Appends ids at `position`; logits [V] of the last id, or [ids.length, V]. */
  eval(ids: Int32Array, allLogits: boolean): Promise<Float32Array>;
  truncate(n: number): void;
  abort(): void;
  dispose(): void;
}

/** Moondream's text model (native/napi/phi_napi.cc): f16 [out,in] matrices used in place. */
export declare class PhiModel {
  constructor(
    spec: EngineWeightsSpec,
    config: {
      hiddenSize: number; numLayers: number; numHeads: number; headDim: number; rotaryDim: number; ropeTheta?: number;
      intermediateSize: number; vocabSize: number; maxSeqLen: number; layerNormEps?: number;
    },
    options?: EngineThreadOptions,
  );
  readonly threads: number;
  /** The word-embedding rows of `ids` as f32, [ids.length, hiddenSize]. */
  embed(ids: Int32Array): Float32Array;
  dispose(): void;
}

export declare class PhiSession {
  constructor(model: PhiModel);
  readonly position: number;
  readonly cacheBytes: number;
  /**
   * Appends token ids (Int32Array) or embedding rows (Float32Array [n, hiddenSize]) at `position`.
   * Resolves to no logits, the last row's [V], or [n, V]. Positions < prefix attend to each other
   * bidirectionally (the whole prefix must be in one call from position 0).
   */
  eval(input: Int32Array | Float32Array, logits: 'none' | 'last' | 'all', prefix: number): Promise<Float32Array>;
  truncate(n: number): void;
  abort(): void;
  dispose(): void;
}

/** Moondream's vision encoder + projection (native/napi/vit_napi.cc): f16 [in,out] matrices. */
export declare class VitModel {
  constructor(
    spec: EngineWeightsSpec,
    config: {
      hiddenSize: number; numLayers: number; numHeads: number; headDim: number; intermediateSize: number;
      patchSize: number; imageSize: number; numPatches: number; projHidden: number; textHiddenSize: number; layerNormEps?: number;
    },
    options?: EngineThreadOptions,
  );
  readonly threads: number;
  /**
   * Encodes RGB bytes [imageSize, imageSize, 3]: image embeddings [numPatches, textHiddenSize] and,
   * when asked, the post-LN features [numPatches, hiddenSize]. One call at a time.
   */
  encode(rgb: Uint8Array, features: boolean): Promise<{ embeddings: Float32Array; features?: Float32Array }>;
  abort(): void;
  dispose(): void;
}

export interface NativeBinding {
  MappedFile: typeof MappedFile;
  GptModel: typeof GptModel;
  GptSession: typeof GptSession;
  PhiModel: typeof PhiModel;
  PhiSession: typeof PhiSession;
  VitModel: typeof VitModel;
}
