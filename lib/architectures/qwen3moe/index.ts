/**
 * Qwen3-MoE (HF `Qwen3MoeForCausalLM`, GGUF `qwen3moe`): Qwen3's attention (QK-norm) with a
 * mixture-of-experts FFN in every layer (transformers' Qwen3MoeSparseMoeBlock, llama.cpp's
 * src/models/qwen3moe.cpp with build_moe_ffn): router logits → softmax over all experts → the top
 * k → their probabilities renormalized to sum 1 when normTopkProb → Σ w·SwiGLU expert. The tensors
 * are ../decoder/experts.ts's; the hooks here read and write the expert keys of both formats.
 */
import { UnsupportedError } from '../../base/errors';
import type { ConfigKeys, DecoderConfig, DecoderVariant, GgufKeyValue } from '../decoder/config';
import { checkExpertCounts } from '../decoder/experts';

declare module '../decoder/config' {
  interface DecoderArchitectures {
    qwen3moe: true;
  }
}

/** transformers' Qwen3MoeConfig defaults of the keys a config.json may omit. */
const HF_DEFAULTS = { num_experts: 128, num_experts_per_tok: 8, moe_intermediate_size: 768, norm_topk_prob: false, decoder_sparse_step: 1 } as const;

/**
 * config.json's expert keys. A layer is sparse unless listed in mlp_only_layers or off the
 * decoder_sparse_step grid; dense layers are refused (no released Qwen3-MoE has one, and
 * llama.cpp's qwen3moe has no such layers).
 */
function fromHf(f: ConfigKeys, c: DecoderConfig): void {
  const d = HF_DEFAULTS;
  c.numExperts = f.int('num_experts', d.num_experts, 0);
  c.numExpertsPerToken = f.int('num_experts_per_tok', d.num_experts_per_tok, 0);
  c.expertIntermediateSize = f.int('moe_intermediate_size', d.moe_intermediate_size);
  const norm = f.raw('norm_topk_prob') ?? d.norm_topk_prob;
  if (typeof norm !== 'boolean') f.fail('CONFIG_MISMATCH', "config key 'norm_topk_prob' must be true or false", { found: norm });
  c.normTopkProb = norm;
  checkExpertCounts(f, c, ['num_experts', 'num_experts_per_tok']);
  const step = f.int('decoder_sparse_step', d.decoder_sparse_step);
  const only = f.raw('mlp_only_layers') ?? [];
  if (!Array.isArray(only) || !only.every((l) => Number.isSafeInteger(l))) f.fail('CONFIG_MISMATCH', "config key 'mlp_only_layers' must be a list of layer indices", { found: only });
  const dense = Array.from({ length: c.numLayers }, (_, l) => l).filter((l) => (only as number[]).includes(l) || (l + 1) % step !== 0);
  if (dense.length > 0) f.fail('UNSUPPORTED', `dense FFN layers in a mixture-of-experts model (mlp_only_layers / decoder_sparse_step: layers ${dense.join(', ')})`, { found: dense });
}

function toHf(c: DecoderConfig, out: Record<string, unknown>): void {
  Object.assign(out, {
    num_experts: c.numExperts, num_experts_per_tok: c.numExpertsPerToken, moe_intermediate_size: c.expertIntermediateSize,
    norm_topk_prob: c.normTopkProb ?? false, decoder_sparse_step: 1, mlp_only_layers: [],
  });
}

/**
 * GGUF's expert keys as llama.cpp reads them: expert_count, expert_used_count,
 * expert_feed_forward_length (absent: feed_forward_length / expert_used_count); its graph always
 * renormalizes the k weights.
 */
function fromGguf(kv: ConfigKeys, c: DecoderConfig): void {
  c.numExperts = kv.int('expert_count', undefined, 0);
  c.numExpertsPerToken = kv.int('expert_used_count', undefined, 0);
  c.expertIntermediateSize = 1;
  checkExpertCounts(kv, c, [kv.name('expert_count'), kv.name('expert_used_count')]);
  c.expertIntermediateSize = kv.int('expert_feed_forward_length', Math.floor(c.intermediateSize / c.numExpertsPerToken));
  c.normTopkProb = true;
}

function toGguf(c: DecoderConfig): GgufKeyValue[] {
  if (c.normTopkProb !== true) throw new UnsupportedError('GGUF qwen3moe cannot store routing weights that are not renormalized (norm_topk_prob false): llama.cpp always renormalizes');
  return [['expert_count', 'u32', c.numExperts!], ['expert_used_count', 'u32', c.numExpertsPerToken!], ['expert_feed_forward_length', 'u32', c.expertIntermediateSize!]];
}

export const qwen3moe: DecoderVariant = {
  title: 'Qwen3-MoE',
  qkNorm: true, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'qwen3moe',
  hfModelTypes: ['qwen3_moe'], hfClass: 'Qwen3MoeForCausalLM', hfClassPattern: /^Qwen3MoeForCausalLM$/, hfDefaultMaxPositions: 32768, defaultChatTemplate: 'qwen3',
  experts: true,
  hooks: { fromHf, toHf, fromGguf, toGguf },
};
