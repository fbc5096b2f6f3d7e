/**
 * The decoder's tensors as llama.cpp names them in GGUF (llama.cpp src/llama-arch.cpp's table), both
 * ways; a variant's fused tensors (its `fused` rows) by the names its row gives.
 */
import { DECODER_NAMES, type FusedTensor } from './config';
import { expertStackName, type ExpertProjection } from './experts';

/** llama.cpp's names of the stacked experts of each projection (ffn_*_exps). */
const EXPERT_STACKS: Record<string, ExpertProjection> = { ffn_gate_exps: 'gate', ffn_up_exps: 'up', ffn_down_exps: 'down' };

/** The canonical name of a variant's fused tensor in layer l. */
export function fusedTensorName(f: FusedTensor, l: number): string {
  return `model.layers.${l}.${f.hf}.weight`;
}

/**
 * The per-layer norms whose llama.cpp names differ with Gemma's sandwich norms: there `ffn_norm`
 * is the FFN's pre-norm and `post_attention_norm` the attention output's, which HF calls
 * post_attention_layernorm (Llama's name for its FFN norm).
 */
const SANDWICH_NORMS: Record<string, (l: number) => string> = {
  ffn_norm: DECODER_NAMES.preFfnNorm,
  post_attention_norm: DECODER_NAMES.postAttnNorm,
  post_ffw_norm: DECODER_NAMES.postFfnNorm,
};

/**
 * llama.cpp tensor name -> canonical decoder name (`sandwich`: the sandwich norms' names; `fused`:
 * the variant's fused tensors, by their llama.cpp names, as the fused canonical names).
 */
export function canonicalDecoderName(ggufName: string, sandwich = false, fused: readonly FusedTensor[] = []): string | undefined {
  switch (ggufName) {
    case 'token_embd.weight': return DECODER_NAMES.embed;
    case 'output_norm.weight': return DECODER_NAMES.norm;
    case 'output.weight': return DECODER_NAMES.lmHead;
  }
  const m = /^blk\.(0|[1-9][0-9]*)\.([a-z_]+)\.(weight|bias)$/.exec(ggufName);
  if (!m) return undefined;
  const l = Number(m[1]);
  if (m[3] === 'bias') {
    const biases: Record<string, (l: number) => string> = {
      attn_q: DECODER_NAMES.qBias, attn_k: DECODER_NAMES.kBias, attn_v: DECODER_NAMES.vBias,
      // gpt-oss.
      attn_output: DECODER_NAMES.oBias, ffn_gate_inp: DECODER_NAMES.routerBias,
      ffn_gate_exps: DECODER_NAMES.expertGateBiases, ffn_up_exps: DECODER_NAMES.expertUpBiases, ffn_down_exps: DECODER_NAMES.expertDownBiases,
    };
    return biases[m[2]]?.(l);
  }
  if (sandwich && SANDWICH_NORMS[m[2]]) return SANDWICH_NORMS[m[2]](l);
  const joined = fused.find((f) => f.gguf === m[2]);
  if (joined) return fusedTensorName(joined, l);
  if (EXPERT_STACKS[m[2]]) return expertStackName(l, EXPERT_STACKS[m[2]]);
  const perLayer: Record<string, (l: number) => string> = {
    attn_norm: DECODER_NAMES.attnNorm,
    attn_q: DECODER_NAMES.q,
    attn_k: DECODER_NAMES.k,
    attn_v: DECODER_NAMES.v,
    attn_output: DECODER_NAMES.o,
    attn_q_norm: DECODER_NAMES.qNorm,
    attn_k_norm: DECODER_NAMES.kNorm,
    ffn_norm: DECODER_NAMES.ffnNorm,
    ffn_gate: DECODER_NAMES.gate,
    ffn_up: DECODER_NAMES.up,
    ffn_down: DECODER_NAMES.down,
    ffn_gate_inp: DECODER_NAMES.router,
    attn_sinks: DECODER_NAMES.sinks,
    // gpt-oss's FFN norm (llama.cpp's attn_post_norm; HF's post_attention_layernorm).
    post_attention_norm: DECODER_NAMES.ffnNorm,
  };
  return perLayer[m[2]]?.(l);
}

/**
 * Canonical decoder name -> llama.cpp tensor name (the inverse of canonicalDecoderName); other names
 * unchanged. `own`: a variant's names of its own (DecoderVariant.ggufTensorNames), first.
 */
export function ggufTensorName(canonical: string, sandwich = false, fused: readonly FusedTensor[] = [], own: Readonly<Record<string, string>> = {}): string {
  const f = /^model\.layers\.(0|[1-9][0-9]*)\.(.+)\.weight$/.exec(canonical);
  const joined = f ? fused.find((t) => t.hf === f[2]) : undefined;
  if (f && joined) return `blk.${f[1]}.${joined.gguf}.weight`;
  const stack = f && Object.keys(EXPERT_STACKS).find((k) => expertStackName(Number(f[1]), EXPERT_STACKS[k]) === canonical);
  if (stack) return `blk.${f![1]}.${stack}.weight`;
  switch (canonical) {
    case DECODER_NAMES.embed: return 'token_embd.weight';
    case DECODER_NAMES.norm: return 'output_norm.weight';
    case DECODER_NAMES.lmHead: return 'output.weight';
  }
  const m = /^model\.layers\.(0|[1-9][0-9]*)\.(.+)$/.exec(canonical);
  const perLayer: Record<string, string> = {
    'input_layernorm.weight': 'attn_norm',
    'self_attn.q_proj.weight': 'attn_q',
    'self_attn.k_proj.weight': 'attn_k',
    'self_attn.v_proj.weight': 'attn_v',
    'self_attn.o_proj.weight': 'attn_output',
    'self_attn.q_norm.weight': 'attn_q_norm',
    'self_attn.k_norm.weight': 'attn_k_norm',
    'post_attention_layernorm.weight': 'ffn_norm',
    'mlp.gate_proj.weight': 'ffn_gate',
    'mlp.up_proj.weight': 'ffn_up',
    'mlp.down_proj.weight': 'ffn_down',
    'mlp.gate.weight': 'ffn_gate_inp',
    'self_attn.q_proj.bias': 'attn_q',
    'self_attn.k_proj.bias': 'attn_k',
    'self_attn.v_proj.bias': 'attn_v',
    'self_attn.o_proj.bias': 'attn_output',
    'self_attn.sinks': 'attn_sinks',
    'mlp.gate.bias': 'ffn_gate_inp',
    'mlp.experts.gate_proj.bias': 'ffn_gate_exps',
    'mlp.experts.up_proj.bias': 'ffn_up_exps',
    'mlp.experts.down_proj.bias': 'ffn_down_exps',
  };
  if (sandwich) {
    const norm = Object.keys(SANDWICH_NORMS).find((k) => m && SANDWICH_NORMS[k](Number(m[1])) === canonical);
    if (norm) return `blk.${m![1]}.${norm}.weight`;
  }
  const short = m ? own[m[2]] ?? perLayer[m[2]] : undefined;
  return m && short ? `blk.${m[1]}.${short}.${m[2].endsWith('.bias') ? 'bias' : 'weight'}` : canonical;
}

