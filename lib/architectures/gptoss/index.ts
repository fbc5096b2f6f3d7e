/**
 * OpenAI's gpt-oss (GGUF `gpt-oss`, HF `GptOssForCausalLM`), as llama.cpp runs it
 * (src/models/openai-moe.cpp, build_moe_ffn with SOFTMAX_WEIGHT gating and LLM_FFN_SWIGLU_OAI_MOE):
 * q/k/v/o biases, a learned sink logit per head in every attention softmax, sliding-window (layer 0,
 * 2, ...) and full-attention layers alternating, NeoX-order YaRN RoPE, and a mixture of experts in
 * every layer: router logits (+ bias) → the top k → softmax over those k alone (= the softmax over
 * every expert renormalized over the k: normTopkProb) → Σ w · expert, each
 * expert's gate/up/down with biases and the clamped SwiGLU (limit 7, α 1.702).
 *
 * HF checkpoints store the experts fused and transposed (`mlp.experts.gate_up_proj` [experts,
 * hidden, 2·ffn] with gate and up interleaved column by column, MXFP4 `_blocks`/`_scales` in the
 * released ones) and name the router `mlp.router`: no row of that layout is a row of the engine's
 * [out, in] matrices, so the safetensors reader converts the experts once into a cached file
 * (hfExpertLayout; lib/formats/containers/gptoss-hf.ts) and maps it.
 */
import { UnsupportedError } from '../../base/errors';
import type { ConfigKeys, DecoderConfig, DecoderVariant, GgufKeyValue } from '../decoder/config';
import { checkExpertCounts } from '../decoder/experts';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    gptoss: true;
  }
}

/** llama.cpp's constant clamp of the experts' SwiGLU (build_moe_ffn: limit 7.0; HF swiglu_limit's default). */
const SWIGLU_LIMIT = 7;
/** llama.cpp's load_swa_pattern(ml, 2): layers 0, 2, 4, ... slide, the odd ones attend to everything. */
const SWA_PATTERN = 2;

/** transformers' GptOssConfig defaults of the keys a config.json may omit. */
const HF_DEFAULTS = { num_local_experts: 128, num_experts_per_tok: 4, sliding_window: 128, swiglu_limit: 7 } as const;

/** The fixed features every gpt-oss config has, whichever format it came from. */
function fixed(c: DecoderConfig, swigluLimit: number): void {
  // llama.cpp's SOFTMAX_WEIGHT gating (the top k of the logits, a softmax over those k) is a
  // softmax over every expert renormalized over the top k: the same weights.
  c.normTopkProb = true;
  c.expertBiases = true;
  c.swigluLimit = swigluLimit;
  c.attentionSinks = true;
  c.attentionOutputBias = true;
}

/**
 * config.json's layer kinds: `layer_types` must be sliding/full alternating from a sliding layer 0
 * (as every released gpt-oss and llama.cpp's fixed pattern of 2).
 */
function hfSlidingWindow(f: ConfigKeys, numLayers: number): Pick<DecoderConfig, 'slidingWindow' | 'slidingWindowPattern'> {
  const slidingWindow = f.int('sliding_window', HF_DEFAULTS.sliding_window);
  const types = f.raw('layer_types');
  if (types !== undefined) {
    const want = Array.from({ length: numLayers }, (_, l) => (l % SWA_PATTERN === 0 ? 'sliding_attention' : 'full_attention'));
    if (!Array.isArray(types) || types.length !== numLayers || types.some((t, l) => t !== want[l])) {
      f.fail('UNSUPPORTED', 'gpt-oss layer_types other than sliding and full attention alternating from layer 0', { expected: want, found: types });
    }
  }
  return { slidingWindow, slidingWindowPattern: numLayers >= SWA_PATTERN ? SWA_PATTERN : 0 };
}

/**
 * config.json's expert keys (num_local_experts, num_experts_per_tok; intermediate_size is each
 * expert's width) and swiglu_limit.
 */
function fromHf(f: ConfigKeys, c: DecoderConfig): void {
  const d = HF_DEFAULTS;
  c.numExperts = f.int('num_local_experts', d.num_local_experts, 0);
  c.numExpertsPerToken = f.int('num_experts_per_tok', d.num_experts_per_tok, 0);
  c.expertIntermediateSize = c.intermediateSize;
  checkExpertCounts(f, c, ['num_local_experts', 'num_experts_per_tok']);
  fixed(c, f.num('swiglu_limit', d.swiglu_limit));
}

/** config.json's rope_scaling: absent, or YaRN (rope_type 'yarn', transformers' defaults). */
function fromHfRopeScaling(r: ConfigKeys | undefined, c: DecoderConfig): void {
  if (!r) return;
  const type = r.raw('rope_type') ?? r.raw('type');
  if (type === 'default') return;
  if (type !== 'yarn') r.fail('UNSUPPORTED', "gpt-oss rope_scaling other than 'yarn'", { found: type });
  // truncate: false (the released gpt-oss config's) keeps the correction dims unrounded, as
  // transformers computes them; llama.cpp's converter drops the key and rounds.
  const truncate = r.raw('truncate') ?? true;
  if (typeof truncate !== 'boolean') r.fail('CONFIG_MISMATCH', "rope_scaling 'truncate' must be true or false", { found: truncate });
  if (!truncate) c.ropeYarnUnroundedDims = true;
  c.ropeYarnFactor = r.num('factor', 1);
  c.ropeYarnOriginalContext = r.int('original_max_position_embeddings', c.maxSeqLen);
  c.ropeYarnBetaFast = r.num('beta_fast', 32);
  c.ropeYarnBetaSlow = r.num('beta_slow', 1);
  c.ropeAttentionFactor = 1;
}

/** config.json's keys for a gpt-oss config: the readers' above, written back. */
function toHf(c: DecoderConfig, out: Record<string, unknown>): void {
  out.num_local_experts = c.numExperts;
  out.num_experts_per_tok = c.numExpertsPerToken;
  out.intermediate_size = c.expertIntermediateSize;
  out.swiglu_limit = c.swigluLimit;
  if (c.ropeYarnFactor !== undefined) {
    out.rope_scaling = {
      rope_type: 'yarn', factor: c.ropeYarnFactor, original_max_position_embeddings: c.ropeYarnOriginalContext,
      beta_fast: c.ropeYarnBetaFast, beta_slow: c.ropeYarnBetaSlow, ...(c.ropeYarnUnroundedDims ? { truncate: false } : {}),
    };
  }
}

function toHfSlidingWindow(c: DecoderConfig, out: Record<string, unknown>): void {
  out.sliding_window = c.slidingWindow;
  out.layer_types = Array.from({ length: c.numLayers }, (_, l) => (l % SWA_PATTERN === 0 ? 'sliding_attention' : 'full_attention'));
}

/**
 * GGUF's keys as llama.cpp reads them (llama_model_openai_moe::load_arch_hparams and the shared
 * rope.scaling.* keys): expert_count, expert_used_count, expert_feed_forward_length,
 * attention.sliding_window; YaRN when rope.scaling.type is 'yarn'.
 */
function fromGguf(kv: ConfigKeys, c: DecoderConfig): void {
  c.numExperts = kv.int('expert_count', undefined, 0);
  c.numExpertsPerToken = kv.int('expert_used_count', undefined, 0);
  c.expertIntermediateSize = 1;
  checkExpertCounts(kv, c, [kv.name('expert_count'), kv.name('expert_used_count')]);
  c.expertIntermediateSize = kv.int('expert_feed_forward_length');
  fixed(c, SWIGLU_LIMIT);
  c.slidingWindow = kv.int('attention.sliding_window');
  c.slidingWindowPattern = c.numLayers >= SWA_PATTERN ? SWA_PATTERN : 0;
  const scaling = kv.raw('rope.scaling.type');
  if (scaling === 'yarn') {
    c.ropeYarnFactor = kv.num('rope.scaling.factor', 1);
    c.ropeYarnOriginalContext = kv.int('rope.scaling.original_context_length', c.maxSeqLen);
    c.ropeYarnBetaFast = kv.num('rope.scaling.yarn_beta_fast', 32);
    c.ropeYarnBetaSlow = kv.num('rope.scaling.yarn_beta_slow', 1);
    c.ropeAttentionFactor = kv.num('rope.scaling.attn_factor', 1);
  }
}

/**
 * The GGUF keys llama.cpp reads for gpt-oss (the sliding window is the writer's shared key). Its
 * graph fixes the rest, so a config that differs is refused: the clamp at 7, biases, sinks, the
 * softmax over the chosen k, layers sliding from layer 0 every other one, and YaRN's betas 32 and
 * 1 (llama.cpp reads no yarn_beta keys for gpt-oss).
 */
function toGguf(c: DecoderConfig): GgufKeyValue[] {
  const fixedOnes: [string, boolean][] = [
    ['the clamped SwiGLU at 7', c.swigluLimit === SWIGLU_LIMIT], ['q/k/v, output, router and expert biases', !!(c.qkvBias && c.attentionOutputBias && c.expertBiases)],
    ['attention sinks', c.attentionSinks === true], ['renormalized routing weights', c.normTopkProb === true],
    ['sliding layers 0, 2, 4, ...', c.slidingWindow !== undefined && c.slidingWindowPattern === (c.numLayers >= SWA_PATTERN ? SWA_PATTERN : 0)],
    ['YaRN betas 32 and 1', c.ropeYarnFactor === undefined || ((c.ropeYarnBetaFast ?? 32) === 32 && (c.ropeYarnBetaSlow ?? 1) === 1)],
  ];
  const missing = fixedOnes.filter(([, ok]) => !ok).map(([what]) => what);
  if (missing.length > 0) throw new UnsupportedError(`GGUF gpt-oss runs in llama.cpp with ${missing.join(', ')}, which this config does not have`);
  const out: GgufKeyValue[] = [['expert_count', 'u32', c.numExperts!], ['expert_used_count', 'u32', c.numExpertsPerToken!], ['expert_feed_forward_length', 'u32', c.expertIntermediateSize!]];
  if (c.ropeYarnFactor !== undefined) {
    out.push(['rope.scaling.type', 'string', 'yarn'], ['rope.scaling.factor', 'f32', c.ropeYarnFactor], ['rope.scaling.original_context_length', 'u32', c.ropeYarnOriginalContext ?? c.maxSeqLen]);
    if ((c.ropeAttentionFactor ?? 1) !== 1) out.push(['rope.scaling.attn_factor', 'f32', c.ropeAttentionFactor!]);
  }
  return out;
}

export const gptoss: DecoderVariant = {
  title: 'gpt-oss',
  qkNorm: false, qkvBias: true, ggufRopePairing: 'half', ggufDefaultEps: 1e-5, ggufArchitecture: 'gpt-oss',
  hfModelTypes: ['gpt_oss'], hfClass: 'GptOssForCausalLM', hfClassPattern: /^GptOssForCausalLM$/, hfDefaultMaxPositions: 131072,
  experts: true, hfAttentionBias: true, hfExpertLayout: 'fused-gate-up',
  ggufHolds: ['qkvBias', 'expertBiases', 'swigluLimit', 'attentionSinks', 'attentionOutputBias', 'ropeYarnFactor', 'ropeYarnOriginalContext', 'ropeYarnBetaFast', 'ropeYarnBetaSlow', 'ropeAttentionFactor'],
  ggufTensorNames: { 'post_attention_layernorm.weight': 'post_attention_norm' },
  hooks: { hfSlidingWindow, fromHf, fromHfRopeScaling, fromGguf, toHf, toHfSlidingWindow, toGguf },
};
