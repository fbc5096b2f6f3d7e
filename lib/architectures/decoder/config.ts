/**
 * What every decoder family shares: DecoderConfig, the variant row a family folder
 * (lib/architectures/<family>/) fills in (DecoderVariant, with its format hooks), the canonical
 * tensor names (HF transformers' keys) and the enum value sets. Imports nothing, so that each
 * family's folder can import it and ./variants.ts can gather the families.
 */

/** The chat templates written in TS (lib/generation/chat.ts): a variant names one as its default. */
export type BuiltinChatTemplate = 'qwen3';

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
/** DecoderConfig.pooling's values: what a retrieval model does with its final hidden states. */
export const DECODER_POOLINGS = ['last', 'mean', 'rank'] as const;
export type RopePairing = (typeof ROPE_PAIRINGS)[number];
export type DecoderActivation = (typeof DECODER_ACTIVATIONS)[number];
export type KvCacheType = (typeof KV_CACHE_TYPES)[number];
export type DecoderQuant = (typeof DECODER_QUANTS)[number];
export type DecoderPooling = (typeof DECODER_POOLINGS)[number];

/**
 * The decoder variant names. Each family's folder adds its own by declaration merging
 * (`declare module '../decoder/config' { interface DecoderArchitectures { name: true } }`) beside
 * its row, so that a family is its folder and its line in ./variants.ts.
 */
// eslint-disable-next-line @typescript-eslint/no-empty-interface
export interface DecoderArchitectures {}
/** A decoder variant's name ("llama", "qwen3", "gemma3", ...): a key of DECODER_VARIANTS. */
export type DecoderArchitecture = keyof DecoderArchitectures;

/** One row of DECODER_VARIANTS: what a decoder family is, as data, plus the hooks for what is not. */
export interface DecoderVariant {
  /** The family's name in messages ("Gemma 3"). */
  title: string;
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
  /**
   * The GGUF architecture llama.cpp gives the family's bidirectional embedding models (Gemma 3's
   * EmbeddingGemma: 'gemma-embedding'): its files read as the variant with `bidirectional`, their
   * keys under this prefix.
   */
  ggufEmbeddingArchitecture?: string;
  /** HF config.json `model_type` values that name the variant. */
  hfModelTypes: readonly string[];
  /** The HF `architectures` class written to config.json. */
  hfClass: string;
  /** HF `architectures` classes that name the variant when config.json has no model_type. */
  hfClassPattern: RegExp;
  /** max_position_embeddings when config.json omits it (the transformers config class default). */
  hfDefaultMaxPositions: number;
  /** config.json defaults where the variant's transformers config class differs from Llama's. */
  hfDefaults?: { headDim?: number; ropeTheta?: number; tieWordEmbeddings?: boolean };
  /** The config.json key of the activation, read first and written (default `hidden_act`). */
  hfActivationKey?: string;
  /** The chat template used when the model brings none, by name (lib/models/model.ts maps each to lib/generation/chat.ts). */
  defaultChatTemplate?: BuiltinChatTemplate;
  /**
   * RMSNorms after attention and after the FFN as well (post_attention_layernorm,
   * post_feedforward_layernorm), the FFN's own before it (pre_feedforward_layernorm): Gemma.
   */
  sandwichNorms?: boolean;
  /** The FFN gate's activation (absent: 'silu', SwiGLU); Gemma's GeGLU is 'gelu_tanh'. */
  activation?: DecoderActivation;
  /** Token embeddings are scaled by √hiddenSize (Gemma). */
  embeddingScaleSqrtHidden?: boolean;
  /**
   * Norms scale by (1 + w): HF checkpoints store w (normWeightOffset 1), llama.cpp's converter
   * stores 1 + w (normWeightOffset 0): Gemma.
   */
  normWeightsPlusOne?: boolean;
  /**
   * SmolLM3: layer l applies no RoPE when (l + 1) % N == 0, N this (llama.cpp's fixed step, which its
   * GGUF does not store; HF's no_rope_layer_interval default).
   */
  noRopeLayerInterval?: number;
  /**
   * Tensors checkpoints hold fused (Phi-3's qkv_proj and gate_up_proj): readers view their row
   * blocks as the separate tensors (decoderFusedParts), writers join them back.
   */
  fused?: readonly FusedTensor[];
  /** Numbers the variant's configs carry as they are under the same names in HF config.json and GGUF (Granite's multipliers). */
  scalars?: readonly VariantScalar[];
  /**
   * Every layer's FFN is a mixture of experts (Qwen3-MoE): its configs carry the numExperts fields
   * (read and written by its hooks), which a format must hold to store the variant.
   */
  experts?: boolean;
  /**
   * HF checkpoints store the experts in gpt-oss's layout (fused gate_up, transposed, interleaved;
   * MXFP4 `_blocks`/`_scales`), which the safetensors reader converts once into a cached file
   * (lib/formats/containers/gptoss-hf.ts) rather than viewing in place.
   */
  hfExpertLayout?: 'fused-gate-up';
  /** config.json's `attention_bias: true` is the variant's own biases (gpt-oss: q/k/v/o), not refused. */
  hfAttentionBias?: boolean;
  /**
   * The config fields beyond the GGUF writer's shared ones that the variant's GGUF keys (its
   * toGguf hook) and llama.cpp's fixed graph for it hold (gpt-oss: biases, sinks, YaRN, ...).
   */
  ggufHolds?: readonly string[];
  /** llama.cpp's names of the variant's per-layer tensors where they differ from the shared table: canonical suffix -> name (gpt-oss's FFN norm `post_attention_norm`). */
  ggufTensorNames?: Readonly<Record<string, string>>;
  /** What the formats cannot say as data: the family's own config.json and GGUF keys. */
  hooks?: DecoderFormatHooks;
  /** The family's retrieval models (DecoderConfig.pooling): their prompt formats, and how an HF folder names a reranker. */
  retrieval?: DecoderRetrieval;
}

/** A decoder family's embedders and yes/no rerankers (Qwen3-Embedding, Qwen3-Reranker): what their model cards write. */
export interface DecoderRetrieval {
  /** The text put before a query for its task (Qwen3-Embedding: `Instruct: {instruction}\nQuery:`). */
  embeddingQuery(instruction: string): string;
  /**
   * A yes/no reranker (Qwen3-Reranker) of the family: the prompt around its pair (the system turn
   * and the user turn's start, the user turn's end and the assistant's), the user turn, and how an HF
   * folder (a plain *ForCausalLM config.json) says it is one: a README heading or `_name_or_path`
   * matching `marker` (llama.cpp's converter's test, conversion/qwen.py).
   */
  yesNo: {
    prefix: string;
    suffix: string;
    userTurn(instruction: string, query: string, document: string): string;
    defaultInstruction: string;
    marker: RegExp;
  };
}

/**
 * A tensor a variant's checkpoints store fused: `hf` the per-layer suffix of its canonical
 * (checkpoint) name, `gguf` llama.cpp's tensor name, `parts` the DECODER_NAMES roles whose rows it
 * holds, in order (each as many rows as the separate tensor has).
 */
export interface FusedTensor {
  hf: string;
  gguf: string;
  parts: readonly FusedRole[];
}

/** The roles a fused tensor can join. */
export type FusedRole = 'q' | 'k' | 'v' | 'gate' | 'up';

/**
 * Keys of a config file as a family's hooks read them: config.json's keys, or a GGUF file's
 * `<arch>.` keys without the prefix. Failures are the reader's WeightFormatErrors, with its path.
 */
export interface ConfigKeys {
  readonly path: string | undefined;
  /** The key as the file names it (GGUF: with its prefix), for messages. */
  name(key: string): string;
  has(key: string): boolean;
  /** An integer ≥ min (default 1); required unless a fallback is given. */
  int(key: string, fallback?: number, min?: number): number;
  /** A finite positive number. */
  num(key: string, fallback: number): number;
  /** The value as stored (null and absent are undefined). */
  raw(key: string): unknown;
  /** The object under `key` as keys of its own (config.json's nested objects), if it is one. */
  nested(key: string): ConfigKeys | undefined;
  fail(code: 'UNSUPPORTED' | 'CONFIG_MISMATCH', message: string, details?: { expected?: unknown; found?: unknown }): never;
}

/** A GGUF key a hook writes: the key without the `<arch>.` prefix, its type, its value. */
export type GgufKeyValue = [key: string, type: 'u32' | 'f32', value: number] | [key: string, type: 'string', value: string];

/**
 * A family's own keys (each hook optional; absent means the family has none of that kind). The
 * readers call them after the keys every decoder shares; the writers before the vocabulary.
 */
export interface DecoderFormatHooks {
  /** config.json's sliding-window keys; without this hook `use_sliding_window: true` is refused. */
  hfSlidingWindow?(f: ConfigKeys, numLayers: number): Pick<DecoderConfig, 'slidingWindow' | 'slidingWindowPattern'>;
  /** Writes the sliding window to config.json; without this hook a config with one is refused. */
  toHfSlidingWindow?(c: DecoderConfig, out: Record<string, unknown>): void;
  /** config.json's other family keys, read into `c`. */
  fromHf?(f: ConfigKeys, c: DecoderConfig): void;
  /** Writes them. */
  toHf?(c: DecoderConfig, out: Record<string, unknown>): void;
  /**
   * config.json's rope_scaling, read by the family (gpt-oss's YaRN; undefined when absent); with
   * this hook the shared reader reads no rope_scaling of its own (Llama 3's).
   */
  fromHfRopeScaling?(scaling: ConfigKeys | undefined, c: DecoderConfig): void;
  /**
   * Whether a GGUF file of the variant's `general.architecture` is this variant (Mistral's window
   * tells it from Llama); the variant without this hook takes the files no other claims.
   */
  ggufClaims?(kv: ConfigKeys): boolean;
  /** GGUF's family keys, read into `c`. */
  fromGguf?(kv: ConfigKeys, c: DecoderConfig): void;
  /** The family's GGUF keys for `c` (after the shared ones; throws UnsupportedError for what GGUF cannot hold). */
  toGguf?(c: DecoderConfig): GgufKeyValue[];
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

/** A decoder variant's config (the decoder engine runs every variant of DECODER_VARIANTS). Matrices [out,in]. */
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
  /**
   * Experts per layer: every layer's FFN is a mixture of this many SwiGLU experts (./experts.ts;
   * HF num_experts, GGUF expert_count). Absent: a dense FFN.
   */
  numExperts?: number;
  /** With numExperts: the experts each token is routed to (HF num_experts_per_tok, GGUF expert_used_count). */
  numExpertsPerToken?: number;
  /** With numExperts: each expert's FFN width (HF moe_intermediate_size, GGUF expert_feed_forward_length). */
  expertIntermediateSize?: number;
  /** With numExperts: the k routing weights renormalized to sum 1 (HF norm_topk_prob). */
  normTopkProb?: boolean;
  /** With numExperts (gpt-oss): the router and each expert's gate/up/down add biases (stacked [numExperts, ...]). */
  expertBiases?: boolean;
  /**
   * With numExperts (gpt-oss): the experts' clamped SwiGLU, g = min(gate, limit), u = clamp(up, ±limit),
   * g·σ(1.702·g)·(u + 1) (HF swiglu_limit). Absent: silu(gate)·up.
   */
  swigluLimit?: number;
  /** gpt-oss: a learned logit per head (`self_attn.sinks`) joins each attention softmax's denominator. */
  attentionSinks?: boolean;
  /** gpt-oss: the attention output projection adds a bias (`o_proj.bias`). */
  attentionOutputBias?: boolean;
  /**
   * YaRN RoPE (gpt-oss; GGUF rope.scaling.factor): frequencies scaled by 1/factor, blended back to
   * the unscaled ones between the correction dims of ropeYarnBetaFast/Slow at
   * ropeYarnOriginalContext, cos/sin × ropeAttentionFactor·(1 + 0.1 ln factor), as llama.cpp
   * computes it. Absent: plain RoPE.
   */
  ropeYarnFactor?: number;
  /** With ropeYarnFactor: the context the model was trained at before scaling (GGUF rope.scaling.original_context_length). */
  ropeYarnOriginalContext?: number;
  /** With ropeYarnFactor: YaRN's beta_fast (default 32). */
  ropeYarnBetaFast?: number;
  /** With ropeYarnFactor: YaRN's beta_slow (default 1). */
  ropeYarnBetaSlow?: number;
  /** With ropeYarnFactor: GGUF rope.scaling.attn_factor (default 1). */
  ropeAttentionFactor?: number;
  /**
   * With ropeYarnFactor: the correction dims are used as computed, not floored/ceiled
   * (transformers' rope_scaling `truncate: false`, as gpt-oss's released config.json says; llama.cpp
   * always rounds them, and GGUF has no key for it). Absent: rounded.
   */
  ropeYarnUnroundedDims?: boolean;
  /**
   * Attention both ways (EmbeddingGemma: HF use_bidirectional_attention): every position of a pass
   * attends to every position of it, a sliding layer's to those within slidingWindow / 2 on either
   * side (llama.cpp's symmetric window, HF's halved one). Such a model runs only pooled
   * (DecoderEngine.pool), never token by token. Absent: causal.
   */
  bidirectional?: boolean;
  /**
   * A retrieval model (absent: a text model). 'last' / 'mean': a sentence embedder whose vector is
   * the final hidden state (after the final norm) of the last token / the mean over the tokens
   * (Qwen3-Embedding: sentence-transformers' Pooling module with pooling_mode_lasttoken, GGUF
   * `<arch>.pooling_type` 3 (LAST) / 1 (MEAN)); 'rank': a yes/no reranker (Qwen3-Reranker: P(yes)
   * from the head's "yes" and "no" rows at the last token; GGUF pooling_type 4 (RANK) with those
   * two rows as `cls.output.weight`, RERANK_HEAD here). lib/models/embedder.ts and reranker.ts.
   */
  pooling?: DecoderPooling;
  bosTokenId?: number;
  eosTokenIds?: number[];
  /** Q8_0 group size of the stored weights, when quantized. */
  groupSize?: number;
}


/**
 * The decoder's tensors by role, as canonical names (`{layer}`: the layer index). The native
 * engine asks the weights spec for each role's name (decoderWeightsSpec passes this table as
 * spec.names), so that this table alone spells them; DECODER_NAMES gives them per layer.
 */
export const DECODER_TENSOR_ROLES = {
  embed: 'model.embed_tokens.weight',
  norm: 'model.norm.weight',
  lmHead: 'lm_head.weight',
  attnNorm: 'model.layers.{layer}.input_layernorm.weight',
  q: 'model.layers.{layer}.self_attn.q_proj.weight',
  k: 'model.layers.{layer}.self_attn.k_proj.weight',
  v: 'model.layers.{layer}.self_attn.v_proj.weight',
  o: 'model.layers.{layer}.self_attn.o_proj.weight',
  qNorm: 'model.layers.{layer}.self_attn.q_norm.weight',
  kNorm: 'model.layers.{layer}.self_attn.k_norm.weight',
  qBias: 'model.layers.{layer}.self_attn.q_proj.bias',
  kBias: 'model.layers.{layer}.self_attn.k_proj.bias',
  vBias: 'model.layers.{layer}.self_attn.v_proj.bias',
  /** gpt-oss: the output projection's bias and the per-head attention sink logits [numHeads]. */
  oBias: 'model.layers.{layer}.self_attn.o_proj.bias',
  sinks: 'model.layers.{layer}.self_attn.sinks',
  /** Llama: the norm before the FFN; with sandwich norms (Gemma 3): the norm of the attention output (postAttnNorm). */
  ffnNorm: 'model.layers.{layer}.post_attention_layernorm.weight',
  postAttnNorm: 'model.layers.{layer}.post_attention_layernorm.weight',
  preFfnNorm: 'model.layers.{layer}.pre_feedforward_layernorm.weight',
  postFfnNorm: 'model.layers.{layer}.post_feedforward_layernorm.weight',
  gate: 'model.layers.{layer}.mlp.gate_proj.weight',
  up: 'model.layers.{layer}.mlp.up_proj.weight',
  down: 'model.layers.{layer}.mlp.down_proj.weight',
  /** A mixture of experts (numExperts): the router [numExperts, hidden] and each expert's SwiGLU matrices. */
  router: 'model.layers.{layer}.mlp.gate.weight',
  expertGate: 'model.layers.{layer}.mlp.experts.{expert}.gate_proj.weight',
  expertUp: 'model.layers.{layer}.mlp.experts.{expert}.up_proj.weight',
  expertDown: 'model.layers.{layer}.mlp.experts.{expert}.down_proj.weight',
  /** gpt-oss (expertBiases): the router's bias [numExperts] and the experts' biases stacked [numExperts, rows]. */
  routerBias: 'model.layers.{layer}.mlp.gate.bias',
  expertGateBiases: 'model.layers.{layer}.mlp.experts.gate_proj.bias',
  expertUpBiases: 'model.layers.{layer}.mlp.experts.up_proj.bias',
  expertDownBiases: 'model.layers.{layer}.mlp.experts.down_proj.bias',
} as const;

/** A per-layer role's name in layer l. */
function layerName(role: keyof typeof DECODER_TENSOR_ROLES): (l: number) => string {
  return (l) => DECODER_TENSOR_ROLES[role].replace('{layer}', String(l));
}

/** A per-expert role's name for expert e of layer l. */
function expertName(role: 'expertGate' | 'expertUp' | 'expertDown'): (l: number, e: number) => string {
  return (l, e) => DECODER_TENSOR_ROLES[role].replace('{layer}', String(l)).replace('{expert}', String(e));
}

/**
 * A 'rank' decoder's scoring rows [2, hiddenSize]: the head's rows of "yes" then "no", as
 * llama.cpp's converter writes them for Qwen3-Reranker (and names them). An HF folder has none:
 * the reranker takes those rows of its head by the tokenizer's ids of "yes" and "no".
 */
export const RERANK_HEAD = 'cls.output.weight';

/**
 * An embedding GGUF's projections after the pooling, in order (llama.cpp's names for
 * sentence-transformers' 2_Dense and 3_Dense, EmbeddingGemma's), each [out, in]; either may be absent.
 */
export const EMBEDDING_DENSE = ['dense_2.weight', 'dense_3.weight'] as const;

/** The canonical tensor names: the whole-model ones, and a function of the layer for the others. */
export const DECODER_NAMES = {
  embed: DECODER_TENSOR_ROLES.embed,
  norm: DECODER_TENSOR_ROLES.norm,
  lmHead: DECODER_TENSOR_ROLES.lmHead,
  attnNorm: layerName('attnNorm'),
  q: layerName('q'),
  k: layerName('k'),
  v: layerName('v'),
  o: layerName('o'),
  qNorm: layerName('qNorm'),
  kNorm: layerName('kNorm'),
  qBias: layerName('qBias'),
  kBias: layerName('kBias'),
  vBias: layerName('vBias'),
  oBias: layerName('oBias'),
  sinks: layerName('sinks'),
  ffnNorm: layerName('ffnNorm'),
  postAttnNorm: layerName('postAttnNorm'),
  preFfnNorm: layerName('preFfnNorm'),
  postFfnNorm: layerName('postFfnNorm'),
  gate: layerName('gate'),
  up: layerName('up'),
  down: layerName('down'),
  router: layerName('router'),
  expertGate: expertName('expertGate'),
  expertUp: expertName('expertUp'),
  expertDown: expertName('expertDown'),
  routerBias: layerName('routerBias'),
  expertGateBiases: layerName('expertGateBiases'),
  expertUpBiases: layerName('expertUpBiases'),
  expertDownBiases: layerName('expertDownBiases'),
} as const;

/** A row block of a fused tensor: the canonical tensor it is, its first row and row count. */
export interface FusedPart {
  name: string;
  row0: number;
  rows: number;
}
