/**
 * Qwen3-MoE (HF `Qwen3MoeForCausalLM`, GGUF `qwen3moe`): Qwen3's attention (QK-norm) with a
 * mixture-of-experts FFN in every layer (transformers' Qwen3MoeSparseMoeBlock, llama.cpp's
 * src/models/qwen3moe.cpp with build_moe_ffn): router logits → softmax over all experts → the top k
 * → their probabilities renormalized to sum 1 when normTopkProb → Σ w·SwiGLU expert.
 *
 * Canonical tensors are HF's: the router `mlp.gate.weight` [numExperts, hidden] and one tensor per
 * expert (`mlp.experts.E.{gate,up,down}_proj.weight`). GGUF stacks each projection's experts into
 * one 3-D tensor (`ffn_{gate,up,down}_exps` [numExperts, rows, cols]); its reader views each
 * expert's rows of it (moeStackedParts: an expert table of views into the mapping, never a copy)
 * and its writer stacks them back (moeStackedTensors). This module imports nothing: decoder.ts
 * takes the variant row and these helpers.
 */

/** The DECODER_VARIANTS row (checked against DecoderVariant there). */
export const QWEN3_MOE_VARIANT = {
  qkNorm: true, qkvBias: false, ggufRopePairing: 'half', ggufDefaultEps: 1e-6, ggufArchitecture: 'qwen3moe',
  hfModelTypes: ['qwen3_moe'], hfClass: 'Qwen3MoeForCausalLM', hfClassPattern: /^Qwen3MoeForCausalLM$/, hfDefaultMaxPositions: 32768,
  defaultChatTemplate: 'qwen3', gemma: false, experts: true,
} as const;

/** The config fields of a mixture-of-experts FFN (all absent: a dense FFN). */
export interface MoeFields {
  /** Experts per layer (HF num_experts, GGUF expert_count); every layer's FFN is a mixture of them. */
  numExperts?: number;
  /** Experts each token is routed to (HF num_experts_per_tok, GGUF expert_used_count). */
  numExpertsPerToken?: number;
  /** Each expert's FFN width (HF moe_intermediate_size, GGUF expert_feed_forward_length). */
  expertIntermediateSize?: number;
  /** The k routing weights renormalized to sum 1 (HF norm_topk_prob; llama.cpp's qwen3moe always does). */
  normTopkProb?: boolean;
}

/** The MoeFields names (writers that store them list these as held). */
export const MOE_FIELDS: readonly (keyof MoeFields)[] = ['numExperts', 'numExpertsPerToken', 'expertIntermediateSize', 'normTopkProb'];

/** The most experts a layer may have (llama.cpp's LLAMA_MAX_EXPERTS): a larger count is a hostile or foreign file. */
export const MAX_EXPERTS = 1024;

/** The transformers Qwen3MoeConfig defaults of the keys a config.json may omit. */
export const QWEN3_MOE_HF_DEFAULTS = { num_experts: 128, num_experts_per_tok: 8, moe_intermediate_size: 768, norm_topk_prob: false, decoder_sparse_step: 1 } as const;

/** A MoE config's problem with its counts (for the readers' typed errors), or undefined. */
export function moeCountsProblem(m: MoeFields): string | undefined {
  const e = m.numExperts ?? 0, k = m.numExpertsPerToken ?? 0;
  if (!Number.isSafeInteger(e) || e < 1 || e > MAX_EXPERTS) return `the expert count must be in 1..${MAX_EXPERTS}`;
  if (!Number.isSafeInteger(k) || k < 1 || k > e) return `the experts used per token must be in 1..${e} (the expert count)`;
  if (!Number.isSafeInteger(m.expertIntermediateSize) || m.expertIntermediateSize! < 1) return 'the expert FFN width must be a positive integer';
  return undefined;
}

type Projection = 'gate' | 'up' | 'down';
const PROJECTIONS: readonly Projection[] = ['gate', 'up', 'down'];

export const MOE_NAMES = {
  router: (l: number) => `model.layers.${l}.mlp.gate.weight`,
  expert: (l: number, e: number, p: Projection) => `model.layers.${l}.mlp.experts.${e}.${p}_proj.weight`,
  /** The stacked experts of one projection, as GGUF holds them (a name of no HF checkpoint). */
  stacked: (l: number, p: Projection) => `model.layers.${l}.mlp.experts.${p}_proj.weight`,
} as const;

/** The llama.cpp name of each MoE tensor kind (blk.N.<this>.weight). */
const GGUF_SHORT: Record<Projection | 'router', string> = { router: 'ffn_gate_inp', gate: 'ffn_gate_exps', up: 'ffn_up_exps', down: 'ffn_down_exps' };

type Sizes = { hiddenSize: number; numLayers: number } & MoeFields;

/** [rows, cols] of one expert's matrix of projection p. */
function expertShape(c: Sizes, p: Projection): [number, number] {
  const ff = c.expertIntermediateSize!, d = c.hiddenSize;
  return p === 'down' ? [d, ff] : [ff, d];
}

/** The router and expert tensors of layer l, canonical names and shapes. */
export function moeLayerShapes(c: Sizes, l: number): { name: string; shape: number[] }[] {
  const out: { name: string; shape: number[] }[] = [{ name: MOE_NAMES.router(l), shape: [c.numExperts!, c.hiddenSize] }];
  for (let e = 0; e < c.numExperts!; e++) for (const p of PROJECTIONS) out.push({ name: MOE_NAMES.expert(l, e, p), shape: expertShape(c, p) });
  return out;
}

/** The 3-D shape [numExperts, rows, cols] of a stacked name (MOE_NAMES.stacked), undefined for other names. */
export function moeStackedShape(c: Sizes, name: string): number[] | undefined {
  const m = /^model\.layers\.(0|[1-9][0-9]*)\.mlp\.experts\.(gate|up|down)_proj\.weight$/.exec(name);
  if (!m || !c.numExperts) return undefined;
  return [c.numExperts, ...expertShape(c, m[2] as Projection)];
}

/**
 * The experts of a stacked tensor as row blocks of it seen as [numExperts · rows, cols]: expert e
 * is rows [e · rows, (e + 1) · rows). Undefined for a name that is not stacked.
 */
export function moeStackedParts(c: Sizes, name: string): { name: string; row0: number; rows: number }[] | undefined {
  const shape = moeStackedShape(c, name);
  if (!shape) return undefined;
  const m = /^model\.layers\.(\d+)\.mlp\.experts\.(gate|up|down)_proj/.exec(name)!;
  const l = Number(m[1]), p = m[2] as Projection, rows = shape[1];
  return Array.from({ length: shape[0] }, (_, e) => ({ name: MOE_NAMES.expert(l, e, p), row0: e * rows, rows }));
}

/** What a writer stacks for GGUF: [stacked name, its experts' names in order] per layer and projection. */
export function moeStackedTensors(c: Sizes): [string, string[]][] {
  if (!c.numExperts) return [];
  const out: [string, string[]][] = [];
  for (let l = 0; l < c.numLayers; l++) {
    for (const p of PROJECTIONS) out.push([MOE_NAMES.stacked(l, p), Array.from({ length: c.numExperts }, (_, e) => MOE_NAMES.expert(l, e, p))]);
  }
  return out;
}

/** The canonical name of a llama.cpp MoE tensor short name in layer l (ffn_gate_inp, ffn_*_exps), or undefined. */
export function moeCanonicalOfGguf(short: string, l: number): string | undefined {
  if (short === GGUF_SHORT.router) return MOE_NAMES.router(l);
  const p = PROJECTIONS.find((q) => GGUF_SHORT[q] === short);
  return p ? MOE_NAMES.stacked(l, p) : undefined;
}

/** The llama.cpp name of a canonical router or stacked name, or undefined. */
export function moeGgufName(canonical: string): string | undefined {
  const m = /^model\.layers\.(0|[1-9][0-9]*)\.mlp\.(gate\.weight|experts\.(gate|up|down)_proj\.weight)$/.exec(canonical);
  if (!m) return undefined;
  return `blk.${m[1]}.${m[3] ? GGUF_SHORT[m[3] as Projection] : GGUF_SHORT.router}.weight`;
}

/**
 * What one token reads of a MoE model's layers, in bytes, given each tensor's stored size: every
 * non-expert tensor of a layer (attention, norms, router) and k of the numExperts experts of each
 * (an average expert's bytes times k). Undefined for a dense config.
 */
export function moeBytesPerToken(c: Sizes, byteLength: (name: string) => number | undefined): { experts: number; activeExperts: number; expertBytes: number; activeExpertBytes: number } | undefined {
  if (!c.numExperts || !c.numExpertsPerToken) return undefined;
  let expertBytes = 0;
  for (let l = 0; l < c.numLayers; l++) {
    for (let e = 0; e < c.numExperts; e++) for (const p of PROJECTIONS) expertBytes += byteLength(MOE_NAMES.expert(l, e, p)) ?? 0;
  }
  return { experts: c.numExperts, activeExperts: c.numExpertsPerToken, expertBytes, activeExpertBytes: (expertBytes * c.numExpertsPerToken) / c.numExperts };
}
