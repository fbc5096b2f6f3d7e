/**
 * Hugging Face `config.json` (plus the sentence-transformers side files) <-> our configs.
 *
 * Read: the decoder variants (model_type and classes from the registry, lib/architectures) ->
 * DecoderConfig; BertModel (and other Bert* heads) / "bert" -> BertConfig, completed from `modules.json`,
 * `sentence_bert_config.json` and `<pooling>/config.json` when present; anything else 'unknown'.
 * Structural sizes are required; the rest default as transformers' config classes do. Features a
 * DecoderConfig cannot express (rope_scaling, attention/MLP biases, another activation) are
 * UNSUPPORTED rather than silently dropped. Two keys of ours ride along in decoder configs:
 * `rope_pairing` ('half' | 'interleaved'; HF checkpoints are 'half') and, in sepweight trees,
 * `sepweight_key_scheme`.
 *
 * Without sentence-transformers files a BERT reads as mean pooling, no normalization and
 * max_seq_length = max_position_embeddings (a decision: what embedding users most often want).
 *
 * Two more architectures, so that their weights survive a trip through an HF folder:
 * Moondream2 (model_type "moondream1" / HfMoondream, as vikhyatk/moondream2 publishes it; its
 * config.json names no sizes, so absent keys are Moondream2's, and present ones use the MOON
 * config.json keys) and the TLLM GPT model (model_type "tllm", our own: hidden_size,
 * num_hidden_layers, num_attention_heads, intermediate_size, max_position_embeddings, vocab_size,
 * dropout, layer_norm_eps).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { ARCHITECTURES, architectureOfHf, type KnownArchitecture } from '../architectures';
import { moeCountsProblem, QWEN3_MOE_HF_DEFAULTS, type MoeFields } from '../architectures/qwen3-moe';
import { DECODER_VARIANTS, isDecoderArchitecture, isRopeLayer, variantScalars, isDecoderConfig, isSlidingLayer, llama3RopeFactors, normalizedSlidingPattern, slidingPatternOf, variantFields, type DecoderArchitecture, type Llama3RopeScaling, type DecoderConfig, type DecoderVariant } from '../architectures/decoder';
import type { BertConfig } from '../architectures/bert';
import type { ModelConfig } from '../architectures/model-config';
import type { MoondreamConfig } from '../architectures/moondream';
import type { TllmConfig } from '../architectures/tllm';
import { fail } from './bytes';
import { moondreamConfigFromJson, moondreamConfigToJson } from './moon';
import { validateTllmConfig } from './tllm';

export type HfJson = Record<string, unknown>;

/** config.json files above this are not configs. */
const MAX_JSON_BYTES = 16 << 20;

export type HfArchitecture = KnownArchitecture | 'unknown';

function isObject(v: unknown): v is HfJson {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Which of our architectures an HF config describes. */
export function hfArchitecture(hf: HfJson): HfArchitecture {
  const modelType = typeof hf.model_type === 'string' ? hf.model_type : undefined;
  const classes = Array.isArray(hf.architectures) ? hf.architectures.filter((a): a is string => typeof a === 'string') : [];
  return architectureOfHf(modelType || undefined, classes)?.name ?? 'unknown';
}

/** Typed field access with WeightFormatErrors that name the file and the key. */
class Fields {
  constructor(
    readonly json: HfJson,
    readonly path: string | undefined,
  ) {}

  private wrongType(key: string, expected: string): never {
    return fail('BAD_HEADER', `config key '${key}' has the wrong type`, { path: this.path, expected, found: this.json[key] });
  }

  has(key: string): boolean {
    return this.json[key] !== undefined && this.json[key] !== null;
  }

  /** A positive integer (or ≥ min); required unless a default is given. */
  int(key: string, fallback?: number, min = 1): number {
    if (!this.has(key)) {
      if (fallback === undefined) return fail('CONFIG_MISMATCH', `config.json lacks '${key}'`, { path: this.path, expected: key, found: 'absent' });
      return fallback;
    }
    const v = this.json[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) this.wrongType(key, 'an integer');
    if ((v as number) < min || (v as number) > 0x7fffffff) {
      fail('CONFIG_MISMATCH', `config key '${key}' is out of range`, { path: this.path, expected: `${min}..2^31-1`, found: v });
    }
    return v as number;
  }

  /** A finite positive number. */
  num(key: string, fallback: number): number {
    if (!this.has(key)) return fallback;
    const v = this.json[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.wrongType(key, 'a number');
    if ((v as number) <= 0) fail('CONFIG_MISMATCH', `config key '${key}' must be positive`, { path: this.path, expected: '> 0', found: v });
    return v as number;
  }

  bool(key: string, fallback: boolean): boolean {
    if (!this.has(key)) return fallback;
    const v = this.json[key];
    if (typeof v !== 'boolean') this.wrongType(key, 'true or false');
    return v as boolean;
  }

  str(key: string): string | undefined {
    if (!this.has(key)) return undefined;
    const v = this.json[key];
    if (typeof v !== 'string') this.wrongType(key, 'a string');
    return v as string;
  }

  /** A token id, or a list of them (eos_token_id). */
  ids(key: string): number[] | undefined {
    if (!this.has(key)) return undefined;
    const v = this.json[key];
    const list = Array.isArray(v) ? v : [v];
    if (!list.every((x) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0)) this.wrongType(key, 'a token id or a list of token ids');
    return list as number[];
  }
}

function unsupported(path: string | undefined, what: string, found: unknown): never {
  return fail('UNSUPPORTED', what, { path, found });
}

/** Llama 3's rope_scaling as its four numbers; plain RoPE (absent or 'default') gives undefined. */
function llama3Scaling(hf: HfJson, path: string | undefined): Llama3RopeScaling | undefined {
  if (hf.rope_scaling === undefined || hf.rope_scaling === null) return undefined;
  const scaling = hf.rope_scaling;
  const type = isObject(scaling) ? scaling.rope_type ?? scaling.type : scaling;
  if (type === 'default') return undefined;
  if (type !== 'llama3' || !isObject(scaling)) return unsupported(path, "rope_scaling (plain RoPE and 'llama3' are implemented)", scaling);
  const f = new Fields(scaling, path);
  const p = { factor: f.num('factor', 8), low_freq_factor: f.num('low_freq_factor', 1), high_freq_factor: f.num('high_freq_factor', 4), original_max_position_embeddings: f.int('original_max_position_embeddings', 8192) };
  if (!(p.factor > 0) || !(p.high_freq_factor > p.low_freq_factor)) fail('CONFIG_MISMATCH', "rope_scaling 'llama3' needs factor > 0 and high_freq_factor > low_freq_factor", { path, found: scaling });
  return p;
}

/**
 * Sliding-window attention of an HF config: Mistral's `sliding_window` (null: full attention;
 * absent: MistralConfig's 4096) for every layer; Gemma 3's window (Gemma3TextConfig's 4096 when
 * absent) for the layers `layer_types` or `sliding_window_pattern` (default 6) mark as sliding.
 */
function hfSlidingWindow(hf: HfJson, architecture: DecoderArchitecture, numLayers: number, path: string | undefined): Pick<DecoderConfig, 'slidingWindow' | 'slidingWindowPattern'> {
  const f = new Fields(hf, path);
  if (architecture !== 'mistral' && architecture !== 'gemma3') {
    if (architecture !== 'llama' && f.bool('use_sliding_window', false)) unsupported(path, 'sliding-window attention', true);
    return {};
  }
  if (hf.sliding_window === null) return {};
  const slidingWindow = f.int('sliding_window', 4096);
  if (architecture === 'mistral') return { slidingWindow };
  let pattern: number | undefined;
  if (Array.isArray(hf.layer_types)) {
    const types = hf.layer_types;
    if (types.length !== numLayers || !types.every((t) => t === 'sliding_attention' || t === 'full_attention')) {
      fail('CONFIG_MISMATCH', "layer_types must name 'sliding_attention' or 'full_attention' for each layer", { path, expected: `${numLayers} entries`, found: types });
    }
    pattern = slidingPatternOf(types.map((t) => t === 'sliding_attention'));
    if (pattern === undefined) unsupported(path, 'layer_types that are not every Nth layer global', types);
  } else pattern = normalizedSlidingPattern(f.int('sliding_window_pattern', 6), numLayers);
  // Pattern 1: no layer slides.
  return pattern === 1 ? {} : { slidingWindow, ...(pattern ? { slidingWindowPattern: pattern } : {}) };
}

/**
 * SmolLM3's layers without RoPE: `no_rope_layers` (1: the layer rotates, one entry per layer) when
 * given, which must be "every Nth layer" for N = no_rope_layer_interval (default: the variant's).
 */
function hfNoRopeInterval(f: Fields, architecture: DecoderArchitecture, numLayers: number): number | undefined {
  const fixed = (DECODER_VARIANTS[architecture] as DecoderVariant).noRopeLayerInterval;
  if (fixed === undefined) return undefined;
  const interval = f.int('no_rope_layer_interval', fixed);
  const list = f.json.no_rope_layers;
  if (list === undefined || list === null) return interval;
  const want = Array.from({ length: numLayers }, (_, l) => (isRopeLayer({ noRopeLayerInterval: interval }, l) ? 1 : 0));
  if (!Array.isArray(list) || list.length !== numLayers || list.some((v, l) => v !== want[l])) {
    return unsupported(f.path, `no_rope_layers other than every ${interval}th layer (no_rope_layer_interval)`, list);
  }
  return interval;
}

/**
 * Qwen3-MoE's expert sizes (transformers' Qwen3MoeConfig defaults where absent). A layer is
 * sparse unless listed in mlp_only_layers or off the decoder_sparse_step grid; dense layers
 * are refused (every released Qwen3-MoE has none, and llama.cpp's qwen3moe has no such layers).
 */
function hfMoeFields(f: Fields, numLayers: number): MoeFields {
  const d = QWEN3_MOE_HF_DEFAULTS;
  const m: MoeFields = {
    numExperts: f.int('num_experts', d.num_experts),
    numExpertsPerToken: f.int('num_experts_per_tok', d.num_experts_per_tok),
    expertIntermediateSize: f.int('moe_intermediate_size', d.moe_intermediate_size),
    normTopkProb: f.bool('norm_topk_prob', d.norm_topk_prob),
  };
  const problem = moeCountsProblem(m);
  if (problem) fail('CONFIG_MISMATCH', `config.json: ${problem}`, { path: f.path, expected: 'num_experts in 1..1024, num_experts_per_tok <= num_experts', found: { num_experts: m.numExperts, num_experts_per_tok: m.numExpertsPerToken } });
  const step = f.int('decoder_sparse_step', d.decoder_sparse_step);
  const only = f.json.mlp_only_layers ?? [];
  if (!Array.isArray(only) || !only.every((l) => Number.isSafeInteger(l))) fail('BAD_HEADER', "config key 'mlp_only_layers' has the wrong type", { path: f.path, expected: 'a list of layer indices', found: only });
  const dense = Array.from({ length: numLayers }, (_, l) => l).filter((l) => (only as number[]).includes(l) || (l + 1) % step !== 0);
  if (dense.length > 0) unsupported(f.path, `dense FFN layers in a mixture-of-experts model (mlp_only_layers / decoder_sparse_step: layers ${dense.join(', ')})`, dense);
  return m;
}

/** DecoderConfig from an HF Llama, Qwen2, Qwen3, Mistral or Gemma 3 config.json. */
export function decoderConfigFromHf(hf: HfJson, path?: string): DecoderConfig {
  const architecture = hfArchitecture(hf);
  if (!isDecoderArchitecture(architecture)) {
    return fail('CONFIG_MISMATCH', 'config.json does not describe a Llama, Qwen2, Qwen3, Mistral, Gemma 3, Granite, SmolLM3, Phi-3 or Qwen3-MoE model', { path, expected: Object.keys(DECODER_VARIANTS).join(' | '), found: hf.model_type ?? hf.architectures });
  }
  const variant = DECODER_VARIANTS[architecture];
  const f = new Fields(hf, path);
  const gemma = variant.gemma;
  // Gemma3TextConfig names it hidden_activation (default gelu_pytorch_tanh).
  const act = (gemma ? f.str('hidden_activation') ?? f.str('hidden_act') : f.str('hidden_act') ?? f.str('hidden_activation')) ?? (gemma ? 'gelu_pytorch_tanh' : 'silu');
  const wanted = gemma ? 'gelu_pytorch_tanh' : 'silu';
  if (act !== wanted) unsupported(path, `activation '${act}' (the ${architecture} decoder runs ${gemma ? 'GeGLU with tanh GELU' : 'SwiGLU with silu'})`, act);
  const scaling = llama3Scaling(hf, path);
  // Qwen2's q/k/v biases are part of the architecture (its config has no attention_bias key).
  if (f.bool('attention_bias', false)) unsupported(path, 'attention biases', true);
  if (f.bool('mlp_bias', false)) unsupported(path, 'MLP biases', true);
  for (const key of ['final_logit_softcapping', 'attn_logit_softcapping']) if (f.has(key)) unsupported(path, `${key} (Gemma 2's soft-capping)`, hf[key]);

  const hiddenSize = f.int('hidden_size');
  const numHeads = f.int('num_attention_heads');
  const numKvHeads = f.int('num_key_value_heads', numHeads);
  let headDim: number;
  if (f.has('head_dim')) headDim = f.int('head_dim');
  else if (gemma) headDim = 256;  // Gemma3TextConfig's default
  else {
    if (hiddenSize % numHeads !== 0) fail('CONFIG_MISMATCH', 'hidden_size is not a multiple of num_attention_heads and head_dim is absent', { path, expected: `multiple of ${numHeads}`, found: hiddenSize });
    headDim = hiddenSize / numHeads;
  }
  if (numHeads % numKvHeads !== 0) fail('CONFIG_MISMATCH', 'num_attention_heads is not a multiple of num_key_value_heads', { path, expected: `multiple of ${numKvHeads}`, found: numHeads });
  if (headDim % 2 !== 0) fail('CONFIG_MISMATCH', 'head_dim must be even for RoPE', { path, expected: 'even', found: headDim });

  // transformers ≥ 4.56 may nest theta under rope_parameters (Gemma 3: per attention kind).
  const nested = (kind: string) => (isObject(hf.rope_parameters) && isObject(hf.rope_parameters[kind]) ? new Fields(hf.rope_parameters[kind] as HfJson, path) : undefined);
  const ropeParams = nested('full_attention') ?? (isObject(hf.rope_parameters) ? new Fields(hf.rope_parameters, path) : undefined);
  const defaultTheta = gemma ? 1e6 : 10000;
  const ropeTheta = f.has('rope_theta') ? f.num('rope_theta', defaultTheta) : ropeParams?.num('rope_theta', defaultTheta) ?? defaultTheta;
  const numLayers = f.int('num_hidden_layers');
  const pairing = f.str('rope_pairing') ?? 'half';
  if (pairing !== 'half' && pairing !== 'interleaved') fail('CONFIG_MISMATCH', "rope_pairing must be 'half' or 'interleaved'", { path, expected: 'half | interleaved', found: pairing });

  const config: DecoderConfig = {
    architecture,
    hiddenSize,
    intermediateSize: f.int('intermediate_size'),
    numLayers,
    numHeads,
    numKvHeads,
    headDim,
    vocabSize: f.int('vocab_size'),
    maxSeqLen: f.int('max_position_embeddings', variant.hfDefaultMaxPositions),
    rmsNormEps: f.num('rms_norm_eps', 1e-6),
    ropeTheta,
    ropePairing: pairing,
    // Gemma3ForCausalLM ties its head unless told otherwise.
    tieWordEmbeddings: f.bool('tie_word_embeddings', gemma),
    ...variantFields(architecture, hiddenSize),
    ...hfSlidingWindow(hf, architecture, numLayers, path),
  };
  if (gemma) {
    // HF's Gemma3RMSNorm scales by (1 + w).
    config.normWeightOffset = 1;
    config.queryPreAttnScalar = f.num('query_pre_attn_scalar', 256);
    if (config.slidingWindow !== undefined) {
      config.ropeLocalTheta = f.has('rope_local_base_freq') ? f.num('rope_local_base_freq', 10000) : nested('sliding_attention')?.num('rope_theta', 10000) ?? 10000;
    }
  }
  // transformers' Phi3 (and others) rotate int(head_dim · partial_rotary_factor) dims.
  const ropeDim = Math.floor(headDim * (f.has('partial_rotary_factor') ? f.num('partial_rotary_factor', 1) : 1));
  if (ropeDim > headDim || ropeDim % 2 !== 0) fail('CONFIG_MISMATCH', 'partial_rotary_factor must leave an even number of rotated dims, at most head_dim', { path, expected: `even, <= ${headDim}`, found: hf.partial_rotary_factor });
  if (ropeDim !== headDim) config.ropeDim = ropeDim;
  const noRope = hfNoRopeInterval(f, architecture, numLayers);
  if (noRope !== undefined) config.noRopeLayerInterval = noRope;
  for (const s of variantScalars(architecture)) {
    const value = f.has(s.hf) ? f.num(s.hf, 1) : s.hfDefault;
    if (value !== undefined) config[s.field] = value;
  }
  if (scaling) config.ropeFreqFactors = llama3RopeFactors(headDim, ropeTheta, scaling);
  if ((variant as DecoderVariant).experts) Object.assign(config, hfMoeFields(f, numLayers));
  const bos = f.ids('bos_token_id');
  if (bos && bos.length === 1) config.bosTokenId = bos[0];
  const eos = f.ids('eos_token_id');
  if (eos && eos.length > 0) config.eosTokenIds = eos;
  return config;
}

/** An HF config.json object for a DecoderConfig; `extra` keys are appended (rope_pairing, torch_dtype, ...). */
export function hfConfigFromDecoder(c: DecoderConfig, extra: HfJson = {}): HfJson {
  // The factors alone do not give back rope_scaling's four numbers.
  if (c.ropeFreqFactors) fail('UNSUPPORTED', 'RoPE frequency factors (Llama 3 scaling) cannot be written to config.json', { found: 'ropeFreqFactors' });
  const gemma = DECODER_VARIANTS[c.architecture].gemma;
  if (gemma && c.normWeightOffset !== 1) fail('UNSUPPORTED', 'Gemma norm weights stored as 1 + w (GGUF) cannot be written to an HF folder, which stores w', { expected: 1, found: c.normWeightOffset ?? 0 });
  if (!gemma && c.architecture !== 'mistral' && c.slidingWindow !== undefined) fail('UNSUPPORTED', `sliding-window attention cannot be written to a ${c.architecture} config.json`, { found: c.slidingWindow });
  const out: HfJson = {
    architectures: [DECODER_VARIANTS[c.architecture].hfClass],
    model_type: DECODER_VARIANTS[c.architecture].hfModelTypes[0],
    hidden_size: c.hiddenSize,
    intermediate_size: c.intermediateSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    num_key_value_heads: c.numKvHeads,
    head_dim: c.headDim,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.maxSeqLen,
    rms_norm_eps: c.rmsNormEps,
    rope_theta: c.ropeTheta,
    ...(gemma ? { hidden_activation: 'gelu_pytorch_tanh', query_pre_attn_scalar: c.queryPreAttnScalar ?? c.headDim } : { hidden_act: 'silu' }),
    attention_bias: false,
    tie_word_embeddings: c.tieWordEmbeddings,
  };
  if (c.architecture === 'mistral') out.sliding_window = c.slidingWindow ?? null;
  if (gemma) {
    out.sliding_window = c.slidingWindow ?? null;
    if (c.slidingWindow !== undefined) {
      out.layer_types = Array.from({ length: c.numLayers }, (_, l) => (isSlidingLayer(c, l) ? 'sliding_attention' : 'full_attention'));
      // transformers' older key; without a pattern every layer slides, which only layer_types says.
      if (c.slidingWindowPattern) out.sliding_window_pattern = c.slidingWindowPattern;
      out.rope_local_base_freq = c.ropeLocalTheta ?? c.ropeTheta;
    }
  }
  for (const s of variantScalars(c.architecture)) if (c[s.field] !== undefined) out[s.hf] = c[s.field];
  if (c.ropeDim !== undefined) out.partial_rotary_factor = c.ropeDim / c.headDim;
  if (c.noRopeLayerInterval !== undefined) {
    if ((DECODER_VARIANTS[c.architecture] as DecoderVariant).noRopeLayerInterval === undefined) fail('UNSUPPORTED', `layers without RoPE cannot be written to a ${c.architecture} config.json`, { found: c.noRopeLayerInterval });
    out.no_rope_layer_interval = c.noRopeLayerInterval;
    out.no_rope_layers = Array.from({ length: c.numLayers }, (_, l) => (isRopeLayer(c, l) ? 1 : 0));
  }
  if (c.numExperts !== undefined) {
    Object.assign(out, {
      num_experts: c.numExperts, num_experts_per_tok: c.numExpertsPerToken, moe_intermediate_size: c.expertIntermediateSize,
      norm_topk_prob: c.normTopkProb ?? false, decoder_sparse_step: 1, mlp_only_layers: [],
    });
  }
  if (c.bosTokenId !== undefined) out.bos_token_id = c.bosTokenId;
  if (c.eosTokenIds !== undefined) out.eos_token_id = c.eosTokenIds.length === 1 ? c.eosTokenIds[0] : [...c.eosTokenIds];
  return { ...out, ...extra };
}

/** The sentence-transformers files beside a BERT config.json, as parsed JSON. */
export interface SentenceTransformersFiles {
  /** modules.json: the pipeline (Transformer, Pooling, Normalize, ...). */
  modules?: unknown;
  /** sentence_bert_config.json: max_seq_length, do_lower_case. */
  sentenceBert?: HfJson;
  /** <pooling path>/config.json (1_Pooling/config.json). */
  pooling?: HfJson;
}

function poolingMode(pooling: HfJson | undefined, path: string | undefined): BertConfig['pooling'] {
  if (!pooling) return 'mean';
  const f = new Fields(pooling, path);
  const modes: BertConfig['pooling'][] = [];
  if (f.bool('pooling_mode_mean_tokens', false)) modes.push('mean');
  if (f.bool('pooling_mode_cls_token', false)) modes.push('cls');
  if (f.bool('pooling_mode_max_tokens', false)) modes.push('max');
  for (const other of ['pooling_mode_mean_sqrt_len_tokens', 'pooling_mode_weightedmean_tokens', 'pooling_mode_lasttoken']) {
    if (f.bool(other, false)) unsupported(path, `sentence-transformers pooling '${other}'`, true);
  }
  if (modes.length !== 1) {
    return fail('CONFIG_MISMATCH', 'exactly one pooling mode must be set', { path, expected: 'one of mean, cls, max', found: modes });
  }
  return modes[0];
}

function moduleTypes(modules: unknown): string[] {
  if (!Array.isArray(modules)) return [];
  return modules.filter(isObject).map((m) => (typeof m.type === 'string' ? m.type : ''));
}

/** BertConfig from a config.json plus the sentence-transformers files. */
export function bertConfigFromHf(hf: HfJson, st: SentenceTransformersFiles = {}, path?: string): BertConfig {
  if (hfArchitecture(hf) !== 'bert') {
    return fail('CONFIG_MISMATCH', 'config.json does not describe a BERT model', { path, expected: 'bert', found: hf.model_type ?? hf.architectures });
  }
  const f = new Fields(hf, path);
  const act = f.str('hidden_act') ?? 'gelu';
  let hiddenAct: BertConfig['hiddenAct'];
  if (act === 'gelu') hiddenAct = 'gelu';
  else if (act === 'gelu_new' || act === 'gelu_pytorch_tanh') hiddenAct = 'gelu_tanh';
  else return unsupported(path, `BERT activation '${act}'`, act);
  const posType = f.str('position_embedding_type') ?? 'absolute';
  if (posType !== 'absolute') unsupported(path, `position_embedding_type '${posType}'`, posType);
  const hiddenSize = f.int('hidden_size');
  const numHeads = f.int('num_attention_heads');
  if (hiddenSize % numHeads !== 0) fail('CONFIG_MISMATCH', 'hidden_size is not a multiple of num_attention_heads', { path, expected: `multiple of ${numHeads}`, found: hiddenSize });
  const maxPositionEmbeddings = f.int('max_position_embeddings', 512);
  const sb = st.sentenceBert ? new Fields(st.sentenceBert, path) : undefined;
  const maxSeqLength = sb?.int('max_seq_length', maxPositionEmbeddings) ?? maxPositionEmbeddings;
  if (maxSeqLength > maxPositionEmbeddings) {
    fail('CONFIG_MISMATCH', 'max_seq_length exceeds max_position_embeddings', { path, expected: `<= ${maxPositionEmbeddings}`, found: maxSeqLength });
  }
  return {
    architecture: 'bert',
    hiddenSize,
    numLayers: f.int('num_hidden_layers'),
    numHeads,
    intermediateSize: f.int('intermediate_size'),
    vocabSize: f.int('vocab_size'),
    maxPositionEmbeddings,
    typeVocabSize: f.int('type_vocab_size', 2),
    layerNormEps: f.num('layer_norm_eps', 1e-12),
    hiddenAct,
    maxSeqLength,
    pooling: poolingMode(st.pooling, path),
    normalize: moduleTypes(st.modules).some((t) => t.endsWith('models.Normalize')),
  };
}

/** config.json and the sentence-transformers files for a BertConfig. */
export function hfFilesFromBert(c: BertConfig): { config: HfJson; modules: HfJson[]; sentenceBert: HfJson; pooling: HfJson } {
  const modules: HfJson[] = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ];
  if (c.normalize) modules.push({ idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' });
  return {
    config: {
      architectures: ['BertModel'],
      model_type: 'bert',
      hidden_size: c.hiddenSize,
      num_hidden_layers: c.numLayers,
      num_attention_heads: c.numHeads,
      intermediate_size: c.intermediateSize,
      vocab_size: c.vocabSize,
      max_position_embeddings: c.maxPositionEmbeddings,
      type_vocab_size: c.typeVocabSize,
      layer_norm_eps: c.layerNormEps,
      hidden_act: c.hiddenAct === 'gelu' ? 'gelu' : 'gelu_new',
      position_embedding_type: 'absolute',
    },
    modules,
    sentenceBert: { max_seq_length: c.maxSeqLength, do_lower_case: false },
    pooling: {
      word_embedding_dimension: c.hiddenSize,
      pooling_mode_cls_token: c.pooling === 'cls',
      pooling_mode_mean_tokens: c.pooling === 'mean',
      pooling_mode_max_tokens: c.pooling === 'max',
      pooling_mode_mean_sqrt_len_tokens: false,
    },
  };
}

/** TllmConfig from our model_type "tllm" config.json. */
export function tllmConfigFromHf(hf: HfJson, path?: string): TllmConfig {
  const f = new Fields(hf, path);
  const dropout = hf.dropout ?? 0;
  if (typeof dropout !== 'number') return fail('BAD_HEADER', "config key 'dropout' has the wrong type", { path, expected: 'a number', found: dropout });
  const config: TllmConfig = {
    architecture: 'tllm',
    hiddenSize: f.int('hidden_size'),
    numLayers: f.int('num_hidden_layers'),
    numHeads: f.int('num_attention_heads'),
    intermediateSize: f.int('intermediate_size'),
    maxSeqLen: f.int('max_position_embeddings'),
    vocabSize: f.int('vocab_size'),
    dropout,
    layerNormEps: f.num('layer_norm_eps', 1e-5),
  };
  validateTllmConfig(config, path);
  return config;
}

export function hfConfigFromTllm(c: TllmConfig): HfJson {
  return {
    architectures: ['TllmForCausalLM'],
    model_type: 'tllm',
    hidden_size: c.hiddenSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    intermediate_size: c.intermediateSize,
    max_position_embeddings: c.maxSeqLen,
    vocab_size: c.vocabSize,
    dropout: c.dropout,
    layer_norm_eps: c.layerNormEps,
  };
}

/** config.json for Moondream2 weights: HF's identification plus the MOON config keys. */
export function hfConfigFromMoondream(c: MoondreamConfig): HfJson {
  const { format: _format, ...sizes } = moondreamConfigToJson(c);
  return { architectures: ['HfMoondream'], model_type: 'moondream1', ...sizes };
}

/** Our config for any HF config.json: decoder, BERT, TLLM, Moondream or 'unknown'. */
export function modelConfigFromHf(hf: HfJson, st: SentenceTransformersFiles = {}, path?: string): ModelConfig {
  switch (ARCHITECTURES.get(hfArchitecture(hf))?.family) {
    case 'decoder':
      return decoderConfigFromHf(hf, path);
    case 'bert':
      return bertConfigFromHf(hf, st, path);
    case 'gpt':
      return tllmConfigFromHf(hf, path);
    case 'moondream':
      return moondreamConfigFromJson(hf, path);
    default:
      return { architecture: 'unknown' };
  }
}

/** Reads and parses a small JSON file; BAD_HEADER when it is not JSON (or not an object, when `object`). */
export function readJsonFile(path: string, object = true): unknown {
  const stat = fs.statSync(path);
  if (stat.size > MAX_JSON_BYTES) fail('BAD_HEADER', 'JSON file too large to be a config', { path, expected: `<= ${MAX_JSON_BYTES} bytes`, found: stat.size });
  const bytes = fs.readFileSync(path);
  let value: unknown;
  try {
    value = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes));
  } catch (cause) {
    return fail('BAD_HEADER', `not valid UTF-8 JSON: ${(cause as Error).message}`, { path });
  }
  if (object && !isObject(value)) fail('BAD_HEADER', 'the JSON is not an object', { path, expected: 'an object', found: Array.isArray(value) ? 'an array' : typeof value });
  return value;
}

function readOptionalJson(path: string, object = true): unknown {
  return fs.existsSync(path) ? readJsonFile(path, object) : undefined;
}

/** The sentence-transformers files of an HF folder (any may be absent). */
export function readSentenceTransformersFiles(dir: string): SentenceTransformersFiles {
  const modules = readOptionalJson(nodePath.join(dir, 'modules.json'), false);
  if (modules !== undefined && !Array.isArray(modules)) {
    fail('BAD_HEADER', 'modules.json is not a list', { path: nodePath.join(dir, 'modules.json'), expected: 'a list', found: typeof modules });
  }
  let poolingDir = '1_Pooling';
  if (Array.isArray(modules)) {
    const entry = modules.filter(isObject).find((m) => typeof m.type === 'string' && m.type.endsWith('models.Pooling'));
    if (entry && typeof entry.path === 'string') {
      // The pooling folder must stay inside the model folder.
      const resolved = nodePath.resolve(dir, entry.path);
      if (!resolved.startsWith(nodePath.resolve(dir) + nodePath.sep)) {
        fail('BAD_HEADER', 'modules.json points outside the model folder', { path: nodePath.join(dir, 'modules.json'), found: entry.path });
      }
      poolingDir = entry.path;
    }
  }
  return {
    modules,
    sentenceBert: readOptionalJson(nodePath.join(dir, 'sentence_bert_config.json')) as HfJson | undefined,
    pooling: readOptionalJson(nodePath.join(dir, poolingDir, 'config.json')) as HfJson | undefined,
  };
}

/** config.json of `dir` (if any) mapped to our config, with the raw JSON. */
export function readHfFolderConfig(dir: string): { config: ModelConfig; hf: HfJson } | undefined {
  const file = nodePath.join(dir, 'config.json');
  if (!fs.existsSync(file)) return undefined;
  const hf = readJsonFile(file) as HfJson;
  const st = hfArchitecture(hf) === 'bert' ? readSentenceTransformersFiles(dir) : {};
  const config = modelConfigFromHf(hf, st, file);
  if (isDecoderConfig(config)) addGenerationStops(config, dir);
  return { config, hf };
}

/**
 * generation_config.json's eos_token_id ids after config.json's: transformers' generate stops on
 * those (Llama 3 Instruct: 128009 in config.json, 128001 and 128009 there).
 */
function addGenerationStops(config: DecoderConfig, dir: string): void {
  const file = nodePath.join(dir, 'generation_config.json');
  if (!fs.existsSync(file)) return;
  const eos = (readJsonFile(file) as HfJson).eos_token_id;
  if (eos === undefined || eos === null) return;
  const ids = Array.isArray(eos) ? eos : [eos];
  if (!ids.every((id) => Number.isInteger(id) && id >= 0)) fail('CONFIG_MISMATCH', "generation_config.json's eos_token_id is not a token id or a list of them", { path: file, found: JSON.stringify(eos) });
  const all = [...(config.eosTokenIds ?? [])];
  for (const id of ids as number[]) if (!all.includes(id)) all.push(id);
  if (all.length > 0) config.eosTokenIds = all;
}

/** Canonical JSON text of our writers: two-space indent, trailing newline. */
export function jsonText(value: unknown): string {
  return `${JSON.stringify(value, null, 2)}\n`;
}

/** The configuration files of an HF folder for `config` ([path relative to the folder, text]); none for an unknown architecture. */
export function hfFolderConfigFiles(config: ModelConfig, extra: HfJson = {}): [string, string][] {
  if (isDecoderConfig(config)) return [['config.json', jsonText(hfConfigFromDecoder(config, extra))]];
  if (config.architecture === 'bert') {
    const files = hfFilesFromBert(config);
    return [
      ['config.json', jsonText({ ...files.config, ...extra })],
      ['modules.json', jsonText(files.modules)],
      ['sentence_bert_config.json', jsonText(files.sentenceBert)],
      [nodePath.join('1_Pooling', 'config.json'), jsonText(files.pooling)],
    ];
  }
  if (config.architecture === 'tllm' || config.architecture === 'moondream') {
    const hf = config.architecture === 'tllm' ? hfConfigFromTllm(config) : hfConfigFromMoondream(config);
    return [['config.json', jsonText({ ...hf, ...extra })]];
  }
  return [];
}
