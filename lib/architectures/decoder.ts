/**
 * The decoder variants (Llama, Qwen2, Qwen3, Mistral, Gemma 3), their config (DecoderConfig), and
 * their canonical tensor names and shapes (HF transformers' keys, [out,in] matrices). Every reader of a decoder format names its
 * tensors with these, every writer maps from them, and the engine looks them up here. A variant
 * that differs from Llama by a feature the engine has (biases, QK-norm, sandwich norms, GeGLU) is
 * one entry of DECODER_VARIANTS.
 */

export interface DecoderVariant {
  /** Per-head RMSNorm of q and k before RoPE. */
  qkNorm: boolean;
  /** Biases on the q, k and v projections. */
  qkvBias: boolean;
  /** RoPE pairing of the q/k rows as llama.cpp stores them in GGUF. */
  ggufRopePairing: 'half' | 'interleaved';
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
} as const satisfies Record<string, DecoderVariant>;

export type DecoderArchitecture = keyof typeof DECODER_VARIANTS;

/** Llama, Qwen2, Qwen3, Mistral and Gemma 3 (the decoder engine; its variants above). Matrices [out,in]. */
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
export function variantFields(architecture: DecoderArchitecture, hiddenSize: number): Pick<DecoderConfig, 'qkNorm' | 'qkvBias' | 'sandwichNorms' | 'activation' | 'embeddingScale'> {
  const v: DecoderVariant = DECODER_VARIANTS[architecture];
  return {
    qkNorm: v.qkNorm,
    ...(v.qkvBias ? { qkvBias: true } : {}),
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
};

/**
 * The fields of a decoder config beyond plain Llama's that are in use (not undefined or false),
 * less the ones a format `holds`: a writer refuses a config with any, so a field a new variant
 * brings is refused everywhere until a format says it holds it.
 */
export function unheldFields(c: Partial<DecoderConfig>, holds: readonly string[]): string[] {
  return Object.entries(c)
    .filter(([key, value]) => !LLAMA_FIELDS.has(key) && !holds.includes(key) && value !== undefined && value !== false)
    .map(([key]) => EXTRA_TITLES[key] ?? key);
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
} as const;

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
