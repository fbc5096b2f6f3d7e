/**
 * llama.cpp's mmproj GGUF (`general.architecture` "clip"; tools/mtmd/clip-impl.h, clip.cpp): a
 * SigLIP-like vision encoder and the projector that turns its patch features into rows of a
 * language model's input. The encoder is one (native/engines/vit.h, layout 'gguf'); each
 * `clip.projector_type` weightmap runs is one row of CLIP_PROJECTORS: its tensors, its merge
 * factor, and how the language model reads its rows (the text around an image, attention over it).
 *
 * Tensor names stay llama.cpp's (they are this format's canonical names); CLIP_TENSOR_ROLES maps
 * the engine's roles to them. Older converters wrote a layer's ffn_up and ffn_down swapped;
 * llama.cpp swaps them back when ffn_down's input is the model width, and so does clipConfig.
 */

/** The `general.architecture` of an mmproj GGUF. */
export const CLIP_GGUF_ARCHITECTURE = 'clip';

/** Whether a GGUF's `general.architecture` is an mmproj's. */
export function isClipGguf(arch: unknown): boolean {
  return arch === CLIP_GGUF_ARCHITECTURE;
}

/** The projector types weightmap runs (`clip.projector_type`). */
export type ClipProjectorType = 'gemma3' | 'idefics3';
/** The FFN activation: `clip.use_gelu` (ggml's tanh GELU), `clip.use_silu`, else CLIP's quick GELU. */
export type ClipActivation = 'gelu_tanh' | 'gelu_quick' | 'silu';

/** An mmproj's config in weightmap's vocabulary, from its clip.* keys (clipConfig). */
export interface ClipConfig {
  architecture: 'clip';
  projectorType: ClipProjectorType;
  imageSize: number;
  patchSize: number;
  /** (imageSize / patchSize)². */
  numPatches: number;
  hiddenSize: number;
  intermediateSize: number;
  numLayers: number;
  numHeads: number;
  headDim: number;
  layerNormEps: number;
  /** The language model's width: the image embeddings' row width. */
  projectionDim: number;
  imageMean: [number, number, number];
  imageStd: [number, number, number];
  /** Patches merged per side into one image token (Gemma 3's pooling kernel, Idefics3's pixel-shuffle scale). */
  merge: number;
  activation: ClipActivation;
  /** The file's layer FFN names are swapped (older converters); the reader maps them back. */
  ffnSwapped: boolean;
  /** `clip.vision.preproc_image_size`: the longest edge an image is resized to before it is cut into tiles (Idefics3); absent in older files. */
  preprocImageSize?: number;
}

/**
 * How a language model reads one image (llama.cpp's mtmd.cpp for the projector type): `single`,
 * the image at the encoder's size between two texts; `idefics3-tiles`, the image cut into tiles of
 * the encoder's size plus an overview (lib/models/image-tiles.ts), each tile after its own text,
 * a row end between rows of tiles, the overview last between its texts. `bidirectional`: an
 * image's rows attend to each other, not only to earlier positions (mtmd_decode_use_non_causal).
 */
export type ImageLayout =
  | {
      kind: 'single';
      /** Text right before the rows (a special token of the language model's vocabulary), and right after them. */
      begin: string;
      end: string;
      bidirectional: boolean;
    }
  | {
      kind: 'idefics3-tiles';
      /** Text before tile (row, column), 1-based, tokenized with special tokens (mtmd's sli_img_start_tmpl). */
      tileBegin: (row: number, column: number) => string;
      /** Vocabulary pieces (each one token, the first whose text it is: mtmd's lookup_token): between rows, before the overview, after it. */
      rowEnd: string[];
      overviewBegin: string[];
      overviewEnd: string[];
      bidirectional: false;
    };

export interface ClipProjector {
  title: string;
  /** The engine's projector (native/engines/vit.h VitProjector). */
  engineProjector: 'gemma3' | 'idefics3';
  /** Merge factor when `clip.vision.projector.scale_factor` is absent; undefined: the key is required. */
  defaultMerge?: number;
  /** The projector's own tensors: engine role, GGUF name and shape. */
  tensors(c: ClipConfig): { role: string; name: string; shape: number[] }[];
  /**
   * How the language model reads the rows; absent where weightmap does not lay them out yet (the
   * mmproj then encodes images, but a chat with them is refused), with `layoutMissing` saying why.
   */
  imageLayout?: ImageLayout;
  layoutMissing?: string;
  /** How an image of another size is brought to the encoder's (lib/models/image.ts ResizeSpec; absent: stretched). */
  resize?: { fit: 'stretch' | 'letterbox'; kernel?: 'linear' | 'cubic' | 'lanczos3' };
}

export const CLIP_PROJECTORS: Readonly<Record<ClipProjectorType, ClipProjector>> = {
  gemma3: {
    title: 'Gemma 3',
    engineProjector: 'gemma3',
    // clip.cpp: every Gemma 3 size pools 4×4 (64² patches to 16² tokens at 896 px); tiny test models write the key.
    defaultMerge: 4,
    tensors: (c) => [
      // The converter adds Gemma3RMSNorm's +1 to this weight (conversion/gemma.py), so it scales as stored.
      { role: 'mmSoftEmbNorm', name: 'mm.soft_emb_norm.weight', shape: [c.hiddenSize] },
      // HF's [vision, text] parameter, which clip.cpp transposes before the product: [in, out].
      { role: 'mmInputProjection', name: 'mm.input_projection.weight', shape: [c.hiddenSize, c.projectionDim] },
    ],
    imageLayout: { kind: 'single', begin: '<start_of_image>', end: '<end_of_image>', bidirectional: true },
    // clip.cpp: RESIZE_ALGO_BILINEAR with the default PAD_CEIL (black).
    resize: { fit: 'letterbox', kernel: 'linear' },
  },
  idefics3: {
    title: 'Idefics3 (SmolVLM)',
    engineProjector: 'idefics3',
    tensors: (c) => [{ role: 'mmFc', name: 'mm.model.fc.weight', shape: [c.projectionDim, c.hiddenSize * c.merge * c.merge] }],
    // mtmd.cpp PROJECTOR_TYPE_IDEFICS3 (HF's processing_idefics3.py): tiles first, the overview last.
    imageLayout: {
      kind: 'idefics3-tiles',
      tileBegin: (row, column) => `<fake_token_around_image><row_${row}_col_${column}>`,
      rowEnd: ['\n'],
      overviewBegin: ['\n\n', '<fake_token_around_image>', '<global-img>'],
      overviewEnd: ['<fake_token_around_image>'],
      bidirectional: false,
    },
  },
};

/** Whether `type` is a projector weightmap runs. */
export function isClipProjectorType(type: string): type is ClipProjectorType {
  return Object.prototype.hasOwnProperty.call(CLIP_PROJECTORS, type);
}

/** The encoder's tensors by engine role, GGUF name and shape ("{layer}" in per-layer names). */
function encoderTensors(c: ClipConfig): { role: string; name: string; shape: number[]; perLayer: boolean }[] {
  const D = c.hiddenSize;
  const f = c.intermediateSize;
  const up = c.ffnSwapped ? 'ffn_down' : 'ffn_up';
  const down = c.ffnSwapped ? 'ffn_up' : 'ffn_down';
  const global = (role: string, name: string, shape: number[]) => ({ role, name, shape, perLayer: false });
  const layer = (role: string, name: string, shape: number[]) => ({ role, name: `v.blk.{layer}.${name}`, shape, perLayer: true });
  return [
    global('patchEmb.weight', 'v.patch_embd.weight', [D, 3, c.patchSize, c.patchSize]),
    global('patchEmb.bias', 'v.patch_embd.bias', [D]),
    global('posEmb', 'v.position_embd.weight', [c.numPatches, D]),
    layer('visLn1.weight', 'ln1.weight', [D]),
    layer('visLn1.bias', 'ln1.bias', [D]),
    layer('visQ.weight', 'attn_q.weight', [D, D]),
    layer('visQ.bias', 'attn_q.bias', [D]),
    layer('visK.weight', 'attn_k.weight', [D, D]),
    layer('visK.bias', 'attn_k.bias', [D]),
    layer('visV.weight', 'attn_v.weight', [D, D]),
    layer('visV.bias', 'attn_v.bias', [D]),
    layer('visProj.weight', 'attn_out.weight', [D, D]),
    layer('visProj.bias', 'attn_out.bias', [D]),
    layer('visLn2.weight', 'ln2.weight', [D]),
    layer('visLn2.bias', 'ln2.bias', [D]),
    layer('visFc1.weight', `${up}.weight`, [f, D]),
    layer('visFc1.bias', `${up}.bias`, [f]),
    layer('visFc2.weight', `${down}.weight`, [D, f]),
    layer('visFc2.bias', `${down}.bias`, [D]),
    global('visPostLn.weight', 'v.post_ln.weight', [D]),
    global('visPostLn.bias', 'v.post_ln.bias', [D]),
  ];
}

/** The engine's role → tensor name table of a config ("{layer}" for the layer index). */
export function clipTensorRoles(c: ClipConfig): Record<string, string> {
  const roles: Record<string, string> = {};
  for (const t of encoderTensors(c)) roles[t.role] = t.name;
  for (const t of CLIP_PROJECTORS[c.projectorType].tensors(c)) roles[t.role] = t.name;
  return roles;
}

/** Every tensor the model has, by GGUF name, with its shape (outermost first). */
export function clipTensorSpecs(c: ClipConfig): { name: string; shape: number[] }[] {
  const out: { name: string; shape: number[] }[] = [];
  for (const t of encoderTensors(c)) {
    if (!t.perLayer) out.push({ name: t.name, shape: t.shape });
    else for (let l = 0; l < c.numLayers; l++) out.push({ name: t.name.replace('{layer}', String(l)), shape: t.shape });
  }
  for (const t of CLIP_PROJECTORS[c.projectorType].tensors(c)) out.push({ name: t.name, shape: t.shape });
  return out;
}

/** What the config reader needs of a GGUF's keys (gguf.ts's Kv). */
export interface ClipKeys {
  path: string;
  has(key: string): boolean;
  int(key: string, fallback?: number, min?: number): number;
  float(key: string, fallback: number): number;
  str(key: string): string | undefined;
  bool(key: string): boolean | undefined;
  value(key: string): unknown;
  fail(code: 'CONFIG_MISMATCH' | 'UNSUPPORTED' | 'MISSING_TENSOR', message: string, details?: { expected?: unknown; found?: unknown }): never;
}

/** The largest encoder weightmap accepts from a file's keys (far above SigLIP-So400m's 27 × 1152 at 896 px). */
const LIMITS = { imageSize: 8192, patchSize: 1024, hiddenSize: 1 << 16, intermediateSize: 1 << 18, numLayers: 1024, numHeads: 1024, projectionDim: 1 << 17 };
/** The most patches one image may have: attention over them holds patches² scores (SigLIP-So400m at 896 px: 4096). */
const MAX_PATCHES = 1 << 16;

function triple(k: ClipKeys, key: string): [number, number, number] {
  const v = k.value(key);
  const values = Array.isArray(v) || ArrayBuffer.isView(v) ? Array.from(v as ArrayLike<unknown>) : undefined;
  if (!values || values.length !== 3 || !values.every((x) => typeof x === 'number' && Number.isFinite(x))) {
    k.fail('CONFIG_MISMATCH', `metadata '${key}' must hold 3 finite numbers (one per RGB channel)`, { expected: '3 numbers', found: v === undefined ? 'absent' : values ? values.length : typeof v });
  }
  return values as [number, number, number];
}

/**
 * The config of an mmproj GGUF from its keys (clip.cpp's load_hparams) and the shape of its
 * `ffnDownShape` (the first layer's ffn_down, for the swapped-names check); every count bounded.
 */
export function clipConfig(k: ClipKeys, ffnDownShape: readonly number[] | undefined): ClipConfig {
  if (k.bool('clip.has_vision_encoder') !== true) k.fail('UNSUPPORTED', 'an mmproj without a vision encoder (clip.has_vision_encoder is not true)', { expected: true, found: k.value('clip.has_vision_encoder') ?? 'absent' });
  const type = k.str('clip.vision.projector_type') ?? k.str('clip.projector_type');
  if (type === undefined) k.fail('CONFIG_MISMATCH', "metadata 'clip.projector_type' is missing", { expected: 'clip.projector_type', found: 'absent' });
  if (!isClipProjectorType(type)) k.fail('UNSUPPORTED', `mmproj projector type '${type}'`, { expected: Object.keys(CLIP_PROJECTORS).join(', '), found: type });
  const projector = CLIP_PROJECTORS[type];
  const bounded = (key: string, limit: number) => {
    const v = k.int(key);
    if (v > limit) k.fail('CONFIG_MISMATCH', `metadata '${key}' is out of range`, { expected: `<= ${limit}`, found: v });
    return v;
  };
  const imageSize = bounded('clip.vision.image_size', LIMITS.imageSize);
  const patchSize = bounded('clip.vision.patch_size', LIMITS.patchSize);
  const hiddenSize = bounded('clip.vision.embedding_length', LIMITS.hiddenSize);
  const intermediateSize = bounded('clip.vision.feed_forward_length', LIMITS.intermediateSize);
  const numLayers = bounded('clip.vision.block_count', LIMITS.numLayers);
  const numHeads = bounded('clip.vision.attention.head_count', LIMITS.numHeads);
  const projectionDim = bounded('clip.vision.projection_dim', LIMITS.projectionDim);
  if (imageSize % patchSize !== 0) k.fail('CONFIG_MISMATCH', "'clip.vision.image_size' is not a multiple of 'clip.vision.patch_size'", { expected: `a multiple of ${patchSize}`, found: imageSize });
  if (hiddenSize % numHeads !== 0) k.fail('CONFIG_MISMATCH', "'clip.vision.embedding_length' is not a multiple of the head count", { expected: `a multiple of ${numHeads}`, found: hiddenSize });
  const grid = imageSize / patchSize;
  if (grid * grid > MAX_PATCHES) k.fail('CONFIG_MISMATCH', "'clip.vision.image_size' / 'clip.vision.patch_size' gives more patches than weightmap attends over", { expected: `<= ${MAX_PATCHES} patches`, found: grid * grid });
  const scaleKey = 'clip.vision.projector.scale_factor';
  const merge = k.has(scaleKey) || projector.defaultMerge === undefined ? k.int(scaleKey) : projector.defaultMerge;
  if (grid % merge !== 0) k.fail('CONFIG_MISMATCH', `'${scaleKey}' does not divide the patch grid`, { expected: `a divisor of ${grid}`, found: merge });
  const std = triple(k, 'clip.vision.image_std');
  if (!std.every((s) => s > 0)) k.fail('CONFIG_MISMATCH', "'clip.vision.image_std' must be positive", { expected: '> 0', found: std });
  const activation: ClipActivation = k.bool('clip.use_gelu') ? 'gelu_tanh' : k.bool('clip.use_silu') ? 'silu' : 'gelu_quick';
  return {
    architecture: 'clip',
    projectorType: type,
    imageSize,
    patchSize,
    numPatches: grid * grid,
    hiddenSize,
    intermediateSize,
    numLayers,
    numHeads,
    headDim: hiddenSize / numHeads,
    layerNormEps: k.float('clip.vision.attention.layer_norm_epsilon', 1e-6),
    projectionDim,
    imageMean: triple(k, 'clip.vision.image_mean'),
    imageStd: std,
    merge,
    activation,
    // clip.cpp: swapped when the tensor named ffn_down takes the model width as its input (so a
    // file whose FFN width equals the model width is read swapped, as llama.cpp reads it).
    ffnSwapped: ffnDownShape !== undefined && ffnDownShape.length === 2 && ffnDownShape[1] === hiddenSize,
    ...(k.has('clip.vision.preproc_image_size') ? { preprocImageSize: bounded('clip.vision.preproc_image_size', LIMITS.imageSize) } : {}),
  };
}
