/**
 * A mixture-of-experts FFN's tensors (DecoderConfig.numExperts; Qwen3-MoE): the router
 * [numExperts, hidden] and one SwiGLU expert per index, canonical names HF's
 * (`mlp.experts.E.{gate,up,down}_proj.weight`). GGUF stacks each projection's experts into one 3-D
 * tensor (`ffn_{gate,up,down}_exps` [numExperts, rows, cols]), read under the stacked canonical
 * name below and viewed per expert (expertStackParts: an expert table of views into the mapping,
 * never a copy); its writer stacks them back (expertStacks). Counts are checked here, before any
 * list proportional to them is made.
 */
import { DECODER_NAMES, type ConfigKeys, type DecoderConfig, type FusedPart } from './config';

/** The most experts a layer may have (llama.cpp's LLAMA_MAX_EXPERTS): a larger count is a hostile or foreign file. */
export const MAX_EXPERTS = 1024;

/** The config fields of a mixture of experts (writers that store them list these as held). */
export const EXPERT_FIELDS = ['numExperts', 'numExpertsPerToken', 'expertIntermediateSize', 'normTopkProb'] as const;

type Sizes = Pick<DecoderConfig, 'hiddenSize' | 'numLayers' | 'numExperts' | 'numExpertsPerToken' | 'expertIntermediateSize'>;
export type ExpertProjection = 'gate' | 'up' | 'down';
const PROJECTIONS: readonly ExpertProjection[] = ['gate', 'up', 'down'];
const EXPERT_NAME = { gate: DECODER_NAMES.expertGate, up: DECODER_NAMES.expertUp, down: DECODER_NAMES.expertDown } as const;

/** A config's problem with its expert counts (for the readers' typed errors), or undefined. */
export function expertCountsProblem(c: Pick<DecoderConfig, 'numExperts' | 'numExpertsPerToken' | 'expertIntermediateSize'>): string | undefined {
  const e = c.numExperts ?? 0, k = c.numExpertsPerToken ?? 0;
  if (!Number.isSafeInteger(e) || e < 1 || e > MAX_EXPERTS) return `the expert count must be in 1..${MAX_EXPERTS}`;
  if (!Number.isSafeInteger(k) || k < 1 || k > e) return `the experts used per token must be in 1..${e} (the expert count)`;
  if (!Number.isSafeInteger(c.expertIntermediateSize) || c.expertIntermediateSize! < 1) return 'the expert FFN width must be a positive integer';
  return undefined;
}

/** A config reader's typed error for bad expert counts (before any list proportional to them is made); `names` are the file's two keys. */
export function checkExpertCounts(keys: ConfigKeys, c: DecoderConfig, names: [string, string]): void {
  const problem = expertCountsProblem(c);
  if (problem) {
    keys.fail('CONFIG_MISMATCH', problem, {
      expected: `${names[0]} in 1..${MAX_EXPERTS}, ${names[1]} <= ${names[0]}`,
      found: { [names[0]]: c.numExperts, [names[1]]: c.numExpertsPerToken },
    });
  }
}

/** The stacked experts of one projection of layer l, as GGUF holds them (a name of no HF checkpoint). */
export function expertStackName(l: number, p: ExpertProjection): string {
  return `model.layers.${l}.mlp.experts.${p}_proj.weight`;
}

const STACK = /^model\.layers\.(0|[1-9][0-9]*)\.mlp\.experts\.(gate|up|down)_proj\.weight$/;

/** [rows, cols] of one expert's matrix of projection p. */
function expertShape(c: Sizes, p: ExpertProjection): [number, number] {
  const ff = c.expertIntermediateSize!, d = c.hiddenSize;
  return p === 'down' ? [d, ff] : [ff, d];
}

/** The router and expert tensors of layer l, canonical names and shapes. */
export function expertLayerShapes(c: Sizes, l: number): { name: string; shape: number[] }[] {
  const out: { name: string; shape: number[] }[] = [{ name: DECODER_NAMES.router(l), shape: [c.numExperts!, c.hiddenSize] }];
  for (let e = 0; e < c.numExperts!; e++) for (const p of PROJECTIONS) out.push({ name: EXPERT_NAME[p](l, e), shape: expertShape(c, p) });
  return out;
}

/** The 3-D shape [numExperts, rows, cols] of a stacked name (expertStackName), undefined for other names. */
export function expertStackShape(c: Sizes, name: string): number[] | undefined {
  const m = STACK.exec(name);
  if (!m || !c.numExperts) return undefined;
  return [c.numExperts, ...expertShape(c, m[2] as ExpertProjection)];
}

/**
 * The experts of a stacked tensor as row blocks of it seen as [numExperts · rows, cols]: expert e
 * is rows [e · rows, (e + 1) · rows). Undefined for a name that is not stacked.
 */
export function expertStackParts(c: Sizes, name: string): FusedPart[] | undefined {
  const shape = expertStackShape(c, name);
  if (!shape) return undefined;
  const m = STACK.exec(name)!;
  const l = Number(m[1]), p = m[2] as ExpertProjection, rows = shape[1];
  return Array.from({ length: shape[0] }, (_, e) => ({ name: EXPERT_NAME[p](l, e), row0: e * rows, rows }));
}

/** What a GGUF writer stacks: [stacked name, its experts' names in order] per layer and projection. */
export function expertStacks(c: Sizes): [string, string[]][] {
  if (!c.numExperts) return [];
  const out: [string, string[]][] = [];
  for (let l = 0; l < c.numLayers; l++) {
    for (const p of PROJECTIONS) out.push([expertStackName(l, p), Array.from({ length: c.numExperts }, (_, e) => EXPERT_NAME[p](l, e))]);
  }
  return out;
}

/**
 * What one token reads of the experts, in bytes, given each tensor's stored size: k of the
 * numExperts experts of each layer (an average expert's bytes times k). Undefined for a dense config.
 */
export function expertBytes(c: Sizes, byteLength: (name: string) => number | undefined): { experts: number; activeExperts: number; expertBytes: number; activeExpertBytes: number } | undefined {
  if (!c.numExperts || !c.numExpertsPerToken) return undefined;
  let total = 0;
  for (let l = 0; l < c.numLayers; l++) {
    for (let e = 0; e < c.numExperts; e++) for (const p of PROJECTIONS) total += byteLength(EXPERT_NAME[p](l, e)) ?? 0;
  }
  return { experts: c.numExperts, activeExperts: c.numExpertsPerToken, expertBytes: total, activeExpertBytes: (total * c.numExpertsPerToken) / c.numExperts };
}
