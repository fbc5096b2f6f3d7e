/**
 * Google's Gemma 3 (text; Gemma3ForCausalLM's config is model_type gemma3_text). Its features are
 * the row's: sandwich norms, GeGLU with tanh GELU, embeddings scaled by √hidden, norm weights that
 * scale by (1 + w). Its own keys are the hooks': the sliding window of the local layers (every
 * `pattern`th layer global) with their RoPE base, and the attention scale.
 */
import { UnsupportedError } from '../../base/errors';
import type { ConfigKeys, DecoderConfig, DecoderVariant, GgufKeyValue } from '../decoder/config';
import { isSlidingLayer, normalizedSlidingPattern, slidingPatternOf } from '../decoder/layers';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    gemma3: true;
  }
}

/**
 * config.json's window (Gemma3TextConfig's 4096 when absent; null: none) for the layers
 * `layer_types` or `sliding_window_pattern` (default 6) mark as sliding.
 */
function hfSlidingWindow(f: ConfigKeys, numLayers: number): Pick<DecoderConfig, 'slidingWindow' | 'slidingWindowPattern'> {
  if (f.raw('sliding_window') === null) return {};
  const slidingWindow = f.int('sliding_window', 4096);
  let pattern: number | undefined;
  const types = f.raw('layer_types');
  if (Array.isArray(types)) {
    if (types.length !== numLayers || !types.every((t) => t === 'sliding_attention' || t === 'full_attention')) {
      f.fail('CONFIG_MISMATCH', "layer_types must name 'sliding_attention' or 'full_attention' for each layer", { expected: `${numLayers} entries`, found: types });
    }
    pattern = slidingPatternOf(types.map((t) => t === 'sliding_attention'));
    if (pattern === undefined) f.fail('UNSUPPORTED', 'layer_types that are not every Nth layer global', { found: types });
  } else pattern = normalizedSlidingPattern(f.int('sliding_window_pattern', 6), numLayers);
  // Pattern 1: no layer slides.
  return pattern === 1 ? {} : { slidingWindow, ...(pattern ? { slidingWindowPattern: pattern } : {}) };
}

/**
 * GGUF's layer kinds as llama.cpp reads them (src/models/gemma3.cpp, load_swa_pattern): sliding
 * only when `attention.sliding_window` is set; `attention.sliding_window_pattern` is a u32 N or a
 * bool per layer (true: sliding), default 6.
 */
function ggufSlidingPattern(kv: ConfigKeys, numLayers: number): number | undefined {
  const key = 'attention.sliding_window_pattern';
  const value = kv.raw(key);
  if (!Array.isArray(value)) return normalizedSlidingPattern(kv.int(key, 6, 0), numLayers);
  if (value.length !== numLayers || !value.every((v) => typeof v === 'boolean')) {
    kv.fail('CONFIG_MISMATCH', `metadata '${kv.name(key)}' must hold one bool per layer`, { expected: `${numLayers} bools`, found: value.length });
  }
  const pattern = slidingPatternOf(value as boolean[]);
  if (pattern === undefined) kv.fail('UNSUPPORTED', `metadata '${kv.name(key)}' is not "every Nth layer global"`, { found: value });
  return pattern;
}

/** llama.cpp's attention scale (src/models/gemma3.cpp): 1/√n_embd_head_k, except 1/√(n_embd / n_head) for the 27B (62 layers). */
function llamaCppQueryScalar(c: DecoderConfig): number {
  return c.numLayers === 62 ? c.hiddenSize / c.numHeads : c.headDim;
}

export const gemma3: DecoderVariant = {
  title: 'Gemma 3',
  qkNorm: true, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'gemma3', ggufEmbeddingArchitecture: 'gemma-embedding',
  hfModelTypes: ['gemma3_text'], hfClass: 'Gemma3ForCausalLM', hfClassPattern: /^Gemma3ForCausalLM$/, hfDefaultMaxPositions: 131072,
  // Gemma3TextConfig's defaults; Gemma3ForCausalLM ties its head unless told otherwise.
  hfDefaults: { headDim: 256, ropeTheta: 1e6, tieWordEmbeddings: true },
  hfActivationKey: 'hidden_activation',
  sandwichNorms: true,
  activation: 'gelu_tanh',
  embeddingScaleSqrtHidden: true,
  normWeightsPlusOne: true,
  hooks: {
    hfSlidingWindow,
    fromHf(f, c) {
      c.queryPreAttnScalar = f.num('query_pre_attn_scalar', 256);
      // EmbeddingGemma (Gemma3TextModel): attention both ways.
      if (f.raw('use_bidirectional_attention') === true) c.bidirectional = true;
      if (c.slidingWindow !== undefined) {
        c.ropeLocalTheta = f.has('rope_local_base_freq') ? f.num('rope_local_base_freq', 10000) : f.nested('rope_parameters')?.nested('sliding_attention')?.num('rope_theta', 10000) ?? 10000;
      }
    },
    toHfSlidingWindow(c, out) {
      out.sliding_window = c.slidingWindow ?? null;
      if (c.slidingWindow !== undefined) {
        out.layer_types = Array.from({ length: c.numLayers }, (_, l) => (isSlidingLayer(c, l) ? 'sliding_attention' : 'full_attention'));
        // transformers' older key; without a pattern every layer slides, which only layer_types says.
        if (c.slidingWindowPattern) out.sliding_window_pattern = c.slidingWindowPattern;
        out.rope_local_base_freq = c.ropeLocalTheta ?? c.ropeTheta;
      }
    },
    toHf(c, out) {
      out.query_pre_attn_scalar = c.queryPreAttnScalar ?? c.headDim;
      if (c.bidirectional) out.use_bidirectional_attention = true;
    },
    fromGguf(kv, c) {
      c.queryPreAttnScalar = llamaCppQueryScalar(c);
      if (kv.has('final_logit_softcapping')) kv.fail('UNSUPPORTED', 'final logit soft-capping', { found: kv.raw('final_logit_softcapping') });
      const window = kv.int('attention.sliding_window', 0, 0);
      const pattern = window > 0 ? ggufSlidingPattern(kv, c.numLayers) : 1;
      if (pattern !== 1) {
        c.slidingWindow = window;
        if (pattern) c.slidingWindowPattern = pattern;
        c.ropeLocalTheta = kv.num('rope.freq_base_swa', 10000);
      }
    },
    toGguf(c): GgufKeyValue[] {
      if (c.bidirectional) throw new UnsupportedError("a gemma3 GGUF cannot store bidirectional attention (llama.cpp's gemma-embedding architecture is EmbeddingGemma's)");
      const scalar = llamaCppQueryScalar(c);
      if ((c.queryPreAttnScalar ?? c.headDim) !== scalar) throw new UnsupportedError(`GGUF cannot store Gemma 3's query_pre_attn_scalar ${c.queryPreAttnScalar} (llama.cpp uses ${scalar})`);
      if (c.slidingWindow === undefined) return [];
      // llama.cpp's pattern 0 is "every layer slides", as our absent pattern.
      return [['attention.sliding_window_pattern', 'u32', c.slidingWindowPattern ?? 0], ['rope.freq_base_swa', 'f32', c.ropeLocalTheta ?? c.ropeTheta]];
    },
  },
};
