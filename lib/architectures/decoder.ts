/**
 * The decoder variants (Llama, Qwen2, Qwen3, Mistral, Gemma 3, Granite, SmolLM3), their config (DecoderConfig), and
 * their canonical tensor names and shapes (HF transformers' keys, [out,in] matrices). Every reader of a decoder format names its
 * tensors with these, every writer maps from them, and the engine looks them up here. A variant
 * that differs from Llama by a feature the engine has (biases, QK-norm, sandwich norms, GeGLU) is
 * one entry of DECODER_VARIANTS.
 */

import { QWEN3_MOE_VARIANT, moeLayerShapes, moeStackedParts, type MoeFields } from './qwen3-moe';

/**
 * The value sets of the decoder's enum-valued options, one list each: RoPE pair orders and FFN
 * activations (DecoderConfig), KV cache element types (SessionOptions.kvCache) and what the loader
 * does with float weights (DecoderLoadOptions.quant). native/napi/decoder_config.cc reads the same
 * names (test/engines/decoder-names.test.ts checks that they agree).
 */
export const ROPE_PAIRINGS = ['half', 'interleaved'] as const;
export const DECODER_ACTIVATIONS = ['silu', 'gelu_tanh'] as const;
export const KV_CACHE_TYPES = ['f16', 'f32', 'q8_0'] as const;
export const DECODER_QUANTS = ['none', 'q8_0', 'f32'] as const;
export type RopePairing = (typeof ROPE_PAIRINGS)[number];
export type DecoderActivation = (typeof DECODER_ACTIVATIONS)[number];
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];
export type DecoderQuant = (typeof DECODER_QUANTS)[number];

export interface DecoderVariant {
  /** Per-head RMSNorm of q and k before RoPE. */
  qkNorm: boolean;
  /** Biases on the q, k and v projections. */
  qkvBias: boolean;
  /** RoPE pairing of the q/k rows as llama.cpp stores them in GGUF. */
  ggufRopePairing: RopePairing;
  /** RMSNorm epsilon when a GGUF file omits it. */
  ggufDefaultEps: number;
  /** GGUF `general.architecture`, which also prefixes the file's hyperparameter keys. */
  ggufArchitecture: string;
  /** HF config.json `model_type` values that name the variant. */
  hfModelTypes: readonly string[];
  /** The HF `architectures` class written to config.json. */
  hfClass: string;
  /** HF `architectures` classes that name the variant when config.json has no model_type. */
  hfClassPattern: RegExp;
  /** max_position_embeddings when config.json omits it (the transformers config class default). */
  hfDefaultMaxPositions: number;
  /** The chat template used when the model brings none (lib/chat.ts). */
  defaultChatTemplate?: 'qwen3';
  /**
   * Gemma 3: RMSNorms after attention and after the FFN as well (post_attention_layernorm,
   * post_feedforward_layernorm), the FFN's own before it (pre_feedforward_layernorm); GeGLU with
   * tanh GELU; embeddings scaled by √hidden; norm weights w scale by (1 + w) in HF checkpoints.
   */
  gemma: boolean;
  /**
   * SmolLM3: layer l applies no RoPE when (l + 1) % N == 0, N this (llama.cpp's fixed step, which its
   * GGUF does not store; HF's no_rope_layer_interval default).
   */
  noRopeLayerInterval?: number;
  /**
   * Phi-3: checkpoints hold q/k/v as one `qkv_proj` and gate/up as one `gate_up_proj` (GGUF
   * attn_qkv, and ffn_up of twice the FFN width, gate first); readers view their row blocks as the
   * separate tensors (decoderFusedParts), writers join them back.
   */
  fusedProjections?: boolean;
  /** Qwen3-MoE: every layer's FFN is a mixture of experts (./qwen3-moe.ts; the config's MoeFields). */
  experts?: boolean;
  /** Numbers the variant's configs carry as they are under the same names in HF config.json and GGUF (Granite's multipliers). */
  scalars?: readonly VariantScalar[];
}

/** The DecoderConfig fields a variant maps to keys of its own (VariantScalar). */
export type ScalarField = 'embeddingScale' | 'residualScale' | 'attentionScale' | 'logitsScaling';

/**
 * A number a variant's config holds under the key `hf` of config.json and `<arch>.<gguf>` of GGUF
 * (llama.cpp's converter copies it unchanged); `hfDefault`: the transformers config class's value
 * when config.json omits it (none: the field stays absent, the engine's "off").
 */
export interface VariantScalar {
  field: ScalarField;
  hf: string;
  gguf: string;
  hfDefault?: number;
}

export const DECODER_VARIANTS = {
  llama: {
    qkNorm: false, qkvBias: false, ggufRopePairing: 'interleaved', ggufDefaultEps: 1e-5, ggufArchitecture: 'llama',
    hfModelTypes: ['llama'], hfClass: 'LlamaForCausalLM', hfClassPattern: /^Llama/, hfDefaultMaxPositions: 2048, gemma: false,
  },
  qwen2: {
    qkNorm: false, qkvBias: true, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'qwen2',
    hfModelTypes: ['qwen2'], hfClass: 'Qwen2ForCausalLM', hfClassPattern: /^Qwen2ForCausalLM$/, hfDefaultMaxPositions: 32768, gemma: false,
  },
  qwen3: {
    qkNorm: true, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'qwen3',
    hfModelTypes: ['qwen3'], hfClass: 'Qwen3ForCausalLM', hfClassPattern: /^Qwen3(?!Moe)/, hfDefaultMaxPositions: 32768, defaultChatTemplate: 'qwen3',
    gemma: false,
  },
  // llama.cpp converts Mistral as `llama` (a sliding window key tells it apart).
  mistral: {
    qkNorm: false, qkvBias: false, ggufRopePairing: 'interleaved', ggufDefaultEps: 1e-5, ggufArchitecture: 'llama',
    hfModelTypes: ['mistral'], hfClass: 'MistralForCausalLM', hfClassPattern: /^MistralForCausalLM$/, hfDefaultMaxPositions: 131072, gemma: false,
  },
  // Gemma3ForCausalLM's text config is model_type gemma3_text.
  gemma3: {
    qkNorm: true, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'gemma3',
    hfModelTypes: ['gemma3_text'], hfClass: 'Gemma3ForCausalLM', hfClassPattern: /^Gemma3ForCausalLM$/, hfDefaultMaxPositions: 131072, gemma: true,
  },
  // IBM Granite 3.x: Llama with four multipliers (transformers' GraniteConfig, llama.cpp src/models/granite.cpp).
  granite: {
    qkNorm: false, qkvBias: false, ggufRopePairing: 'interleaved', ggufDefaultEps: 1e-5, ggufArchitecture: 'granite',
    hfModelTypes: ['granite'], hfClass: 'GraniteForCausalLM', hfClassPattern: /^GraniteForCausalLM$/, hfDefaultMaxPositions: 2048, gemma: false,
    scalars: [
      { field: 'embeddingScale', hf: 'embedding_multiplier', gguf: 'embedding_scale', hfDefault: 1 },
      { field: 'residualScale', hf: 'residual_multiplier', gguf: 'residual_scale', hfDefault: 1 },
      { field: 'attentionScale', hf: 'attention_multiplier', gguf: 'attention.scale', hfDefault: 1 },
      { field: 'logitsScaling', hf: 'logits_scaling', gguf: 'logit_scale', hfDefault: 1 },
    ],
  },
  // HuggingFaceTB's SmolLM3: Llama without RoPE on every fourth layer (transformers' SmolLM3Config, llama.cpp src/models/smollm3.cpp).
  smollm3: {
    qkNorm: false, qkvBias: false, ggufRopePairing: 'interleaved', ggufDefaultEps: 1e-6, ggufArchitecture: 'smollm3',
    hfModelTypes: ['smollm3'], hfClass: 'SmolLM3ForCausalLM', hfClassPattern: /^SmolLM3ForCausalLM$/, hfDefaultMaxPositions: 32768, gemma: false,
    noRopeLayerInterval: 4,
  },
  // Microsoft Phi-3 / Phi-3.5-mini and Phi-4-mini (transformers' Phi3Config, llama.cpp src/models/phi3.cpp).
  phi3: {
    qkNorm: false, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-5, ggufArchitecture: 'phi3',
    hfModelTypes: ['phi3'], hfClass: 'Phi3ForCausalLM', hfClassPattern: /^Phi3ForCausalLM$/, hfDefaultMaxPositions: 4096, gemma: false,
    fusedProjections: true,
  },
  qwen3moe: QWEN3_MOE_VARIANT,
} as const satisfies Record<string, DecoderVariant>;

/** The variant's scalars (none for most). */
export function variantScalars(architecture: DecoderArchitecture): readonly VariantScalar[] {
  const v: DecoderVariant = DECODER_VARIANTS[architecture];
  return v.scalars ?? [];
}

/** Every field some variant maps with a VariantScalar (the formats that map them hold these). */
export const SCALAR_FIELDS: readonly ScalarField[] = [...new Set(Object.keys(DECODER_VARIANTS).flatMap((a) => variantScalars(a as DecoderArchitecture).map((s) => s.field)))];

export type DecoderArchitecture = keyof typeof DECODER_VARIANTS;

/** Llama, Qwen2, Qwen3, Mistral and Gemma 3 (the decoder engine; its variants above). Matrices [out,in]. */
export interface DecoderConfig extends MoeFields {
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
  ropePairing: RopePairing;
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
  activation?: DecoderActivation;
  /** Token embeddings are multiplied by this (Gemma: √hiddenSize). Absent: 1. */
  embeddingScale?: number;
  /** Attention scores scale by 1/√queryPreAttnScalar (Gemma 3's query_pre_attn_scalar). Absent: headDim. */
  queryPreAttnScalar?: number;
  /** Attention scores scale by this instead (Granite's attention_multiplier). Absent: 1/√queryPreAttnScalar. */
  attentionScale?: number;
  /** Each attention and FFN output is multiplied by this before its residual add (Granite's residual_multiplier). Absent: 1. */
  residualScale?: number;
  /** The logits are divided by this (Granite's logits_scaling). Absent: 1. */
  logitsScaling?: number;
  /** Layer l applies no RoPE to q and k when (l + 1) % noRopeLayerInterval == 0 (SmolLM3: 4). Absent: every layer rotates. */
  noRopeLayerInterval?: number;
  /** RoPE rotates the first ropeDim dims of each head (Phi-4-mini's partial_rotary_factor · headDim). Absent: headDim. */
  ropeDim?: number;
  bosTokenId?: number;
  eosTokenIds?: number[];
  /** Q8_0 group size of the stored weights, when quantized. */
  groupSize?: number;
}


export function isDecoderArchitecture(name: unknown): name is DecoderArchitecture {
  return typeof name === 'string' && Object.prototype.hasOwnProperty.call(DECODER_VARIANTS, name);
}

/** Whether a config (one of ModelConfig) is a decoder variant's. */
export function isDecoderConfig(config: { architecture: string }): config is DecoderConfig {
  return isDecoderArchitecture(config.architecture);
}

/**
 * The config fields a variant fixes (every reader sets them the same way); normWeightOffset is the
 * reader's, as it depends on the format.
 */
export function variantFields(architecture: DecoderArchitecture, hiddenSize: number): Pick<DecoderConfig, 'qkNorm' | 'qkvBias' | 'sandwichNorms' | 'activation' | 'embeddingScale' | 'noRopeLayerInterval'> {
  const v: DecoderVariant = DECODER_VARIANTS[architecture];
  return {
    qkNorm: v.qkNorm,
    ...(v.qkvBias ? { qkvBias: true } : {}),
    ...(v.noRopeLayerInterval ? { noRopeLayerInterval: v.noRopeLayerInterval } : {}),
    // √hidden as llama.cpp scales (f32); transformers rounds it to the weights' dtype first (34 for the 1B's bf16, not 33.94).
    ...(v.gemma ? { sandwichNorms: true, activation: 'gelu_tanh' as const, embeddingScale: Math.sqrt(hiddenSize) } : {}),
  };
}

/** The DecoderConfig fields of plain Llama, which every decoder format holds. */
const LLAMA_FIELDS: ReadonlySet<string> = new Set([
  'architecture', 'hiddenSize', 'intermediateSize', 'numLayers', 'numHeads', 'numKvHeads', 'headDim', 'vocabSize', 'maxSeqLen',
  'rmsNormEps', 'ropeTheta', 'ropePairing', 'tieWordEmbeddings', 'bosTokenId', 'eosTokenIds', 'groupSize',
]);

/** How messages name the fields beyond Llama's (others by their field name). */
const EXTRA_TITLES: Readonly<Record<string, string>> = {
  qkNorm: 'q/k norms',
  qkvBias: 'q/k/v biases',
  ropeFreqFactors: 'RoPE frequency factors (Llama 3 scaling)',
  slidingWindow: 'a sliding window',
  sandwichNorms: 'post-attention/post-FFN norms',
  embeddingScale: 'an embedding scale',
  attentionScale: 'an attention multiplier',
  residualScale: 'a residual multiplier',
  logitsScaling: 'a logits scaling',
  noRopeLayerInterval: 'layers without RoPE',
  ropeDim: 'partial rotary embeddings',
  numExperts: 'a mixture of experts',
  numExpertsPerToken: 'a mixture of experts',
  expertIntermediateSize: 'a mixture of experts',
  normTopkProb: 'a mixture of experts',
};

/** Whether layer l rotates q and k (see DecoderConfig.noRopeLayerInterval). */
export function isRopeLayer(c: Pick<DecoderConfig, 'noRopeLayerInterval'>, l: number): boolean {
  return !c.noRopeLayerInterval || (l + 1) % c.noRopeLayerInterval !== 0;
}

/**
 * The fields of a decoder config beyond plain Llama's that are in use (not undefined or false),
 * less the ones a format `holds`: a writer refuses a config with any, so a field a new variant
 * brings is refused everywhere until a format says it holds it.
 */
export function unheldFields(c: Partial<DecoderConfig>, holds: readonly string[]): string[] {
  return Object.entries(c)
    .filter(([key, value]) => !LLAMA_FIELDS.has(key) && !holds.includes(key) && value !== undefined && value !== false)
    .map(([key]) => EXTRA_TITLES[key] ?? key)
    .filter((title, i, all) => all.indexOf(title) === i);
}

/** "Llama/Qwen3": the variants whose fixed fields a format holding `holds` can store, for messages. */
export function variantNames(holds: readonly string[]): string {
  return (Object.keys(DECODER_VARIANTS) as DecoderArchitecture[])
    .filter((a) => unheldFields(variantFields(a, 1), holds).length === 0)
    .map((a) => a[0].toUpperCase() + a.slice(1))
    .join('/');
}

/** The variant whose GGUF `general.architecture` is `name`, if any. */
export function decoderArchitectureOfGguf(name: unknown): DecoderArchitecture | undefined {
  return (Object.keys(DECODER_VARIANTS) as DecoderArchitecture[]).find((a) => DECODER_VARIANTS[a].ggufArchitecture === name);
}

/**
 * Gemma 3's attention kinds: layer l slides (sees the last `slidingWindow` positions) unless
 * l % pattern == pattern - 1 (HF's `sliding_window_pattern`, llama.cpp's
 * `attention.sliding_window_pattern`); without a pattern every layer slides (Mistral).
 */
export function isSlidingLayer(c: Pick<DecoderConfig, 'slidingWindow' | 'slidingWindowPattern'>, l: number): boolean {
  if (!c.slidingWindow) return false;
  const n = c.slidingWindowPattern;
  return !n || l % n < n - 1;
}

/**
 * A sliding-window pattern as one form for `numLayers` layers: a pattern past the last layer marks
 * no layer global, which is "every layer slides" (0).
 */
export function normalizedSlidingPattern(pattern: number, numLayers: number): number {
  return pattern > numLayers ? 0 : pattern;
}

/**
 * The sliding-window pattern of a per-layer list (true: the layer slides), or undefined when the
 * list is not "every Nth layer global" (all sliding gives 0: no global layer).
 */
export function slidingPatternOf(sliding: readonly boolean[]): number | undefined {
  const first = sliding.indexOf(false);
  const pattern = first < 0 ? 0 : first + 1;
  return sliding.every((s, l) => s === isSlidingLayer({ slidingWindow: 1, slidingWindowPattern: pattern }, l)) ? pattern : undefined;
}

/** Llama 3's `rope_scaling` (rope_type 'llama3') in HF config.json. */
export interface Llama3RopeScaling {
  factor: number;
  low_freq_factor: number;
  high_freq_factor: number;
  original_max_position_embeddings: number;
}

/**
 * The headDim / 2 factors Llama 3's scaling divides RoPE's inverse frequencies by (what
 * convert_hf_to_gguf stores as `rope_freqs.weight`): 1 for wavelengths below
 * original_max / high_freq_factor, `factor` above original_max / low_freq_factor, and the smooth
 * blend 1 / ((1 - s) / factor + s), s = (original_max / wavelength - low) / (high - low), between.
 */
export function llama3RopeFactors(headDim: number, theta: number, p: Llama3RopeScaling): number[] {
  const lowWavelen = p.original_max_position_embeddings / p.low_freq_factor;
  const highWavelen = p.original_max_position_embeddings / p.high_freq_factor;
  const out: number[] = [];
  for (let i = 0; i < headDim / 2; i++) {
    const wavelen = (2 * Math.PI) / theta ** ((-2 * i) / headDim);
    if (wavelen < highWavelen) out.push(1);
    else if (wavelen > lowWavelen) out.push(p.factor);
    else {
      const smooth = (p.original_max_position_embeddings / wavelen - p.low_freq_factor) / (p.high_freq_factor - p.low_freq_factor);
      out.push(1 / ((1 - smooth) / p.factor + smooth));
    }
  }
  return out;
}

export const DECODER_NAMES = {
  embed: 'model.embed_tokens.weight',
  norm: 'model.norm.weight',
  lmHead: 'lm_head.weight',
  attnNorm: (l: number) => `model.layers.${l}.input_layernorm.weight`,
  q: (l: number) => `model.layers.${l}.self_attn.q_proj.weight`,
  k: (l: number) => `model.layers.${l}.self_attn.k_proj.weight`,
  v: (l: number) => `model.layers.${l}.self_attn.v_proj.weight`,
  o: (l: number) => `model.layers.${l}.self_attn.o_proj.weight`,
  qNorm: (l: number) => `model.layers.${l}.self_attn.q_norm.weight`,
  kNorm: (l: number) => `model.layers.${l}.self_attn.k_norm.weight`,
  qBias: (l: number) => `model.layers.${l}.self_attn.q_proj.bias`,
  kBias: (l: number) => `model.layers.${l}.self_attn.k_proj.bias`,
  vBias: (l: number) => `model.layers.${l}.self_attn.v_proj.bias`,
  /** Llama: the norm before the FFN; Gemma 3: the norm of the attention output (postAttnNorm). */
  ffnNorm: (l: number) => `model.layers.${l}.post_attention_layernorm.weight`,
  postAttnNorm: (l: number) => `model.layers.${l}.post_attention_layernorm.weight`,
  preFfnNorm: (l: number) => `model.layers.${l}.pre_feedforward_layernorm.weight`,
  postFfnNorm: (l: number) => `model.layers.${l}.post_feedforward_layernorm.weight`,
  gate: (l: number) => `model.layers.${l}.mlp.gate_proj.weight`,
  up: (l: number) => `model.layers.${l}.mlp.up_proj.weight`,
  down: (l: number) => `model.layers.${l}.mlp.down_proj.weight`,
  /** Phi-3's fused projections (fusedProjections): q, k, v rows; gate, up rows. */
  qkv: (l: number) => `model.layers.${l}.self_attn.qkv_proj.weight`,
  gateUp: (l: number) => `model.layers.${l}.mlp.gate_up_proj.weight`,
} as const;

/** A row block of a fused tensor: the canonical tensor it is, its first row and row count. */
export interface FusedPart {
  name: string;
  row0: number;
  rows: number;
}

/**
 * The row blocks of a fused checkpoint tensor (`fusedProjections` variants: qkv_proj, gate_up_proj),
 * or undefined for a tensor that is not fused: the one-to-many step of reading a checkpoint.
 */
export function decoderFusedParts(c: DecoderConfig): (name: string) => FusedPart[] | undefined {
  const v: DecoderVariant = DECODER_VARIANTS[c.architecture];
  const qDim = c.numHeads * c.headDim, kvDim = c.numKvHeads * c.headDim, ff = c.intermediateSize;
  return (name) => {
    const experts = moeStackedParts(c, name);
    if (experts) return experts;
    const m = v.fusedProjections ? /^model\.layers\.(0|[1-9][0-9]*)\.(self_attn\.qkv_proj|mlp\.gate_up_proj)\.weight$/.exec(name) : null;
    if (!m) return undefined;
    const l = Number(m[1]);
    if (m[2] === 'mlp.gate_up_proj') return [{ name: DECODER_NAMES.gate(l), row0: 0, rows: ff }, { name: DECODER_NAMES.up(l), row0: ff, rows: ff }];
    return [
      { name: DECODER_NAMES.q(l), row0: 0, rows: qDim },
      { name: DECODER_NAMES.k(l), row0: qDim, rows: kvDim },
      { name: DECODER_NAMES.v(l), row0: qDim + kvDim, rows: kvDim },
    ];
  };
}

/** The fused tensors a writer stores for a `fusedProjections` variant: [fused name, its parts in order]. */
export function decoderFusedTensors(c: DecoderConfig): [string, string[]][] {
  const v: DecoderVariant = DECODER_VARIANTS[c.architecture];
  if (!v.fusedProjections) return [];
  return Array.from({ length: c.numLayers }, (_, l): [string, string[]][] => [
    [DECODER_NAMES.qkv(l), [DECODER_NAMES.q(l), DECODER_NAMES.k(l), DECODER_NAMES.v(l)]],
    [DECODER_NAMES.gateUp(l), [DECODER_NAMES.gate(l), DECODER_NAMES.up(l)]],
  ]).flat();
}

/** Every tensor the decoder needs, with its canonical shape, in HF order. */
export function decoderTensorShapes(c: DecoderConfig): { name: string; shape: number[] }[] {
  const d = c.hiddenSize;
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  const out: { name: string; shape: number[] }[] = [{ name: DECODER_NAMES.embed, shape: [c.vocabSize, d] }];
  for (let l = 0; l < c.numLayers; l++) {
    out.push(
      { name: DECODER_NAMES.attnNorm(l), shape: [d] },
      { name: DECODER_NAMES.q(l), shape: [qDim, d] },
      { name: DECODER_NAMES.k(l), shape: [kvDim, d] },
      { name: DECODER_NAMES.v(l), shape: [kvDim, d] },
      { name: DECODER_NAMES.o(l), shape: [d, qDim] },
    );
    if (c.qkvBias) {
      out.push({ name: DECODER_NAMES.qBias(l), shape: [qDim] }, { name: DECODER_NAMES.kBias(l), shape: [kvDim] }, { name: DECODER_NAMES.vBias(l), shape: [kvDim] });
    }
    if (c.qkNorm) {
      out.push({ name: DECODER_NAMES.qNorm(l), shape: [c.headDim] }, { name: DECODER_NAMES.kNorm(l), shape: [c.headDim] });
    }
    out.push({ name: DECODER_NAMES.ffnNorm(l), shape: [d] });
    if (c.sandwichNorms) out.push({ name: DECODER_NAMES.preFfnNorm(l), shape: [d] }, { name: DECODER_NAMES.postFfnNorm(l), shape: [d] });
    if (c.numExperts) {
      out.push(...moeLayerShapes(c, l));
      continue;
    }
    out.push(
      { name: DECODER_NAMES.gate(l), shape: [c.intermediateSize, d] },
      { name: DECODER_NAMES.up(l), shape: [c.intermediateSize, d] },
      { name: DECODER_NAMES.down(l), shape: [d, c.intermediateSize] },
    );
  }
  out.push({ name: DECODER_NAMES.norm, shape: [d] });
  if (!c.tieWordEmbeddings) out.push({ name: DECODER_NAMES.lmHead, shape: [c.vocabSize, d] });
  return out;
}

/** Checkpoint keys -> canonical names: without the `model.` prefix when no key has it; RoPE buffers dropped. */
export function decoderCheckpointNames(keys: readonly string[]): (key: string) => string | null {
  const prefixless = !keys.some((k) => k.startsWith('model.'));
  return (key) => {
    if (/\.rotary_emb\.inv_freq$/.test(key)) return null;
    if (prefixless && (key.startsWith('layers.') || key === 'embed_tokens.weight' || key === 'norm.weight')) return `model.${key}`;
    return key;
  };
}
