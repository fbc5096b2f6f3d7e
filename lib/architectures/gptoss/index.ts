/**
 * OpenAI's gpt-oss (GGUF `gpt-oss`, HF `GptOssForCausalLM`), as llama.cpp runs it
 * (src/models/openai-moe.cpp, build_moe_ffn with SOFTMAX_WEIGHT gating and LLM_FFN_SWIGLU_OAI_MOE):
 * q/k/v/o biases, a learned sink logit per head in every attention softmax, sliding-window (layer 0,
 * 2, ...) and full-attention layers alternating, NeoX-order YaRN RoPE, and a mixture of experts in
 * every layer: router logits (+ bias) → the top k → softmax over those k alone → Σ w · expert, each
 * expert's gate/up/down with biases and the clamped SwiGLU (limit 7, α 1.702).
 *
 * HF checkpoints store the experts fused and transposed (`mlp.experts.gate_up_proj` [experts,
 * hidden, 2·ffn] with gate and up interleaved column by column, MXFP4 `_blocks`/`_scales` in the
 * released ones): no row of that layout is a row of the engine's [out, in] matrices, so they are
 * refused here with a typed error (convert them with llama.cpp's convert_hf_to_gguf.py).
 */
import type { ConfigKeys, DecoderConfig, DecoderVariant } from '../decoder/config';
import { expertCountsProblem, MAX_EXPERTS } from '../decoder/experts';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    gptoss: true;
  }
}

/** llama.cpp's constant clamp of the experts' SwiGLU (build_moe_ffn: limit 7.0; HF swiglu_limit's default). */
const SWIGLU_LIMIT = 7;
/** llama.cpp's load_swa_pattern(ml, 2): layers 0, 2, 4, ... slide, the odd ones attend to everything. */
const SWA_PATTERN = 2;

function fromHf(f: ConfigKeys): void {
  f.fail('UNSUPPORTED', 'gpt-oss Hugging Face checkpoints (fused, transposed and interleaved gate_up_proj experts); convert the model to GGUF with llama.cpp first', { found: 'GptOssForCausalLM' });
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
  const problem = expertCountsProblem(c);
  if (problem) {
    kv.fail('CONFIG_MISMATCH', problem, {
      expected: `${kv.name('expert_count')} in 1..${MAX_EXPERTS}, ${kv.name('expert_used_count')} <= ${kv.name('expert_count')}`,
      found: { [kv.name('expert_count')]: c.numExperts, [kv.name('expert_used_count')]: c.numExpertsPerToken },
    });
  }
  c.expertIntermediateSize = kv.int('expert_feed_forward_length');
  c.expertSoftmaxAfterTopk = true;
  c.expertBiases = true;
  c.swigluLimit = SWIGLU_LIMIT;
  c.attentionSinks = true;
  c.attentionOutputBias = true;
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

export const gptoss: DecoderVariant = {
  title: 'gpt-oss',
  qkNorm: false, qkvBias: true, ggufRopePairing: 'half', ggufDefaultEps: 1e-5, ggufArchitecture: 'gpt-oss',
  hfModelTypes: ['gpt_oss'], hfClass: 'GptOssForCausalLM', hfClassPattern: /^GptOssForCausalLM$/, hfDefaultMaxPositions: 131072,
  experts: true,
  hooks: { fromHf, fromGguf },
};
