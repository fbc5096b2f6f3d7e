/**
 * The decoder variants (Llama, Qwen2, Qwen3, Mistral, Gemma 3, Granite, SmolLM3, Phi-3), their
 * config (DecoderConfig), and their canonical tensor names and shapes (HF transformers' keys,
 * [out,in] matrices). Every reader of a decoder format names its tensors with these, every writer
 * maps from them, and the engine looks them up here. Each family's row lives in its folder
 * (lib/architectures/<family>/), gathered by ./variants.ts; a variant that differs from Llama by
 * features the engine has (biases, QK-norm, sandwich norms, GeGLU) is its row.
 */
import { DECODER_NAMES, type ConfigKeys, type DecoderArchitecture, type DecoderConfig, type DecoderVariant, type FusedPart, type FusedRole, type ScalarField, type VariantScalar } from './config';
import { expertLayerShapes, expertStackParts } from './experts';
import { fusedTensorName } from './gguf-names';
import { DECODER_VARIANTS } from './variants';

export * from './config';
export * from './experts';
export * from './layers';
export * from './gguf-names';
export { DECODER_VARIANTS } from './variants';

/** The variant's scalars (none for most). */
export function variantScalars(architecture: DecoderArchitecture): readonly VariantScalar[] {
  const v: DecoderVariant = DECODER_VARIANTS[architecture];
  return v.scalars ?? [];
}

/** Every field some variant maps with a VariantScalar (the formats that map them hold these). */
export const SCALAR_FIELDS: readonly ScalarField[] = [...new Set(Object.keys(DECODER_VARIANTS).flatMap((a) => variantScalars(a as DecoderArchitecture).map((s) => s.field)))];

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
export function variantFields(architecture: DecoderArchitecture, hiddenSize: number): Pick<DecoderConfig, 'qkNorm' | 'qkvBias' | 'sandwichNorms' | 'activation' | 'embeddingScale' | 'noRopeLayerInterval'> {
  const v: DecoderVariant = DECODER_VARIANTS[architecture];
  return {
    qkNorm: v.qkNorm,
    ...(v.qkvBias ? { qkvBias: true } : {}),
    ...(v.noRopeLayerInterval ? { noRopeLayerInterval: v.noRopeLayerInterval } : {}),
    // √hidden as llama.cpp scales (f32); transformers rounds it to the weights' dtype first (34 for the 1B's bf16, not 33.94).
    ...(v.sandwichNorms ? { sandwichNorms: true } : {}),
    ...(v.activation && v.activation !== 'silu' ? { activation: v.activation } : {}),
    ...(v.embeddingScaleSqrtHidden ? { embeddingScale: Math.sqrt(hiddenSize) } : {}),
  };
}

/**
 * normWeightOffset as a format stores a variant's norms: HF checkpoints w (1, the norm scales by
 * 1 + w), llama.cpp's GGUF 1 + w (0); undefined for variants whose norms scale by w.
 */
export function normWeightOffsetOf(architecture: DecoderArchitecture, form: 'hf' | 'gguf'): number | undefined {
  if (!DECODER_VARIANTS[architecture].normWeightsPlusOne) return undefined;
  return form === 'hf' ? 1 : 0;
}

/** "Llama, Qwen2, ... or Phi-3": every variant's title, for messages. */
export function decoderTitles(): string {
  const titles = Object.values(DECODER_VARIANTS).map((v) => v.title);
  return titles.length > 1 ? `${titles.slice(0, -1).join(', ')} or ${titles[titles.length - 1]}` : titles.join('');
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
  pooling: 'a retrieval pooling (an embedder or reranker)',
  bidirectional: 'bidirectional attention',
  ropeFreqFactors: 'RoPE frequency factors (Llama 3 scaling)',
  slidingWindow: 'a sliding window',
  sandwichNorms: 'post-attention/post-FFN norms',
  embeddingScale: 'an embedding scale',
  attentionScale: 'an attention multiplier',
  residualScale: 'a residual multiplier',
  logitsScaling: 'a logits scaling',
  noRopeLayerInterval: 'layers without RoPE',
  ropeDim: 'partial rotary embeddings',
  numExperts: 'a mixture of experts',
  numExpertsPerToken: 'a mixture of experts',
  expertIntermediateSize: 'a mixture of experts',
  normTopkProb: 'a mixture of experts',
  expertBiases: 'expert biases',
  swigluLimit: 'a clamped SwiGLU',
  attentionSinks: 'attention sinks',
  attentionOutputBias: 'an attention output bias',
  ropeYarnFactor: 'YaRN RoPE scaling',
  ropeYarnOriginalContext: 'YaRN RoPE scaling',
  ropeYarnBetaFast: 'YaRN RoPE scaling',
  ropeYarnBetaSlow: 'YaRN RoPE scaling',
  ropeAttentionFactor: 'YaRN RoPE scaling',
  ropeYarnUnroundedDims: "unrounded YaRN correction dims (rope_scaling truncate: false)",
};


/**
 * The fields of a decoder config beyond plain Llama's that are in use (not undefined or false),
 * less the ones a format `holds`: a writer refuses a config with any, so a field a new variant
 * brings is refused everywhere until a format says it holds it.
 */
export function unheldFields(c: Partial<DecoderConfig>, holds: readonly string[]): string[] {
  return Object.entries(c)
    .filter(([key, value]) => !LLAMA_FIELDS.has(key) && !holds.includes(key) && value !== undefined && value !== false)
    .map(([key]) => EXTRA_TITLES[key] ?? key)
    .filter((title, i, all) => all.indexOf(title) === i);
}

/** "Llama/Qwen3": the variants whose fixed fields (and experts, for a mixture-of-experts variant) a format holding `holds` can store, for messages. */
export function variantNames(holds: readonly string[]): string {
  return (Object.keys(DECODER_VARIANTS) as DecoderArchitecture[])
    .filter((a) => unheldFields({ ...variantFields(a, 1), ...(DECODER_VARIANTS[a].experts ? { numExperts: 1 } : {}) }, holds).length === 0)
    .map((a) => a[0].toUpperCase() + a.slice(1))
    .join('/');
}

/**
 * The variant of a GGUF file whose `general.architecture` is `name`: the one that claims the file
 * (ggufClaims, read through `kv`), else the one of that name without a claim (Llama for `llama`).
 */
export function decoderArchitectureOfGguf(name: unknown, kv?: ConfigKeys): DecoderArchitecture | undefined {
  const named = (Object.keys(DECODER_VARIANTS) as DecoderArchitecture[]).filter((a) => DECODER_VARIANTS[a].ggufArchitecture === name || DECODER_VARIANTS[a].ggufEmbeddingArchitecture === name);
  const claimed = kv && named.find((a) => DECODER_VARIANTS[a].hooks?.ggufClaims?.(kv));
  return claimed ?? named.find((a) => !DECODER_VARIANTS[a].hooks?.ggufClaims);
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

/** The rows of each role a fused tensor can join, for config `c`. */
function roleRows(c: DecoderConfig, role: FusedRole): number {
  if (role === 'q') return c.numHeads * c.headDim;
  if (role === 'k' || role === 'v') return c.numKvHeads * c.headDim;
  return c.intermediateSize;
}

/**
 * The row blocks of a fused checkpoint tensor (a variant's `fused` rows: Phi-3's qkv_proj,
 * gate_up_proj; GGUF's stacked experts, one block per expert), or undefined for a tensor that is
 * not fused: the one-to-many step of reading a checkpoint.
 */
export function decoderFusedParts(c: DecoderConfig): (name: string) => FusedPart[] | undefined {
  const fused = DECODER_VARIANTS[c.architecture].fused ?? [];
  return (name) => {
    const experts = expertStackParts(c, name);
    if (experts) return experts;
    const m = /^model\.layers\.(0|[1-9][0-9]*)\.(.+)\.weight$/.exec(name);
    const f = m ? fused.find((t) => t.hf === m[2]) : undefined;
    if (!m || !f) return undefined;
    const l = Number(m[1]);
    let row0 = 0;
    return f.parts.map((role) => {
      const rows = roleRows(c, role);
      const part = { name: DECODER_NAMES[role](l), row0, rows };
      row0 += rows;
      return part;
    });
  };
}

/** The fused tensors a writer stores for a variant with `fused` rows: [fused name, its parts in order]. */
export function decoderFusedTensors(c: DecoderConfig): [string, string[]][] {
  const fused = DECODER_VARIANTS[c.architecture].fused ?? [];
  return Array.from({ length: c.numLayers }, (_, l) => fused.map((f): [string, string[]] => [fusedTensorName(f, l), f.parts.map((role) => DECODER_NAMES[role](l))])).flat();
}

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
    if (c.attentionOutputBias) out.push({ name: DECODER_NAMES.oBias(l), shape: [d] });
    if (c.attentionSinks) out.push({ name: DECODER_NAMES.sinks(l), shape: [c.numHeads] });
    if (c.qkvBias) {
      out.push({ name: DECODER_NAMES.qBias(l), shape: [qDim] }, { name: DECODER_NAMES.kBias(l), shape: [kvDim] }, { name: DECODER_NAMES.vBias(l), shape: [kvDim] });
    }
    if (c.qkNorm) {
      out.push({ name: DECODER_NAMES.qNorm(l), shape: [c.headDim] }, { name: DECODER_NAMES.kNorm(l), shape: [c.headDim] });
    }
    out.push({ name: DECODER_NAMES.ffnNorm(l), shape: [d] });
    if (c.sandwichNorms) out.push({ name: DECODER_NAMES.preFfnNorm(l), shape: [d] }, { name: DECODER_NAMES.postFfnNorm(l), shape: [d] });
    if (c.numExperts) {
      out.push(...expertLayerShapes(c, l));
      if (c.expertBiases) {
        const e = c.numExperts, ff = c.expertIntermediateSize!;
        out.push(
          { name: DECODER_NAMES.routerBias(l), shape: [e] },
          { name: DECODER_NAMES.expertGateBiases(l), shape: [e, ff] },
          { name: DECODER_NAMES.expertUpBiases(l), shape: [e, ff] },
          { name: DECODER_NAMES.expertDownBiases(l), shape: [e, d] },
        );
      }
      continue;
    }
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
