/**
 * The config (MoondreamConfig) and canonical tensor names and shapes of Moondream2 (HF
 * vikhyatk/moondream2, 2025-01 layout: `model.text.*`, `model.vision.*`), with [out,in] linear weights. MOON stores the vision and
 * projection matrices [in,out]: its views carry the reversed shape and `transposed: true`.
 */

/** Moondream2 (FORMATS.md §2): phi-style text model plus the SigLIP-style vision encoder. */
export interface MoondreamConfig {
  architecture: 'moondream';
  text: {
    hiddenSize: number;
    numLayers: number;
    numHeads: number;
    headDim: number;
    rotaryDim: number;
    ropeTheta: number;
    intermediateSize: number;
    vocabSize: number;
    maxSeqLen: number;
    layerNormEps: number;
    bosTokenId: number;
    eosTokenId: number;
  };
  vision: {
    hiddenSize: number;
    numLayers: number;
    numHeads: number;
    headDim: number;
    intermediateSize: number;
    patchSize: number;
    imageSize: number;
    numPatches: number;
    layerNormEps: number;
    projHidden: number;
  };
}

export const MOONDREAM_NAMES = {
  wte: 'model.text.wte',
  textLn: (l: number, p: 'weight' | 'bias') => `model.text.blocks.${l}.ln.${p}`,
  textQkv: (l: number, p: 'weight' | 'bias') => `model.text.blocks.${l}.attn.qkv.${p}`,
  textProj: (l: number, p: 'weight' | 'bias') => `model.text.blocks.${l}.attn.proj.${p}`,
  textFc1: (l: number, p: 'weight' | 'bias') => `model.text.blocks.${l}.mlp.fc1.${p}`,
  textFc2: (l: number, p: 'weight' | 'bias') => `model.text.blocks.${l}.mlp.fc2.${p}`,
  postLn: (p: 'weight' | 'bias') => `model.text.post_ln.${p}`,
  lmHead: (p: 'weight' | 'bias') => `model.text.lm_head.${p}`,
  patchEmb: (p: 'weight' | 'bias') => `model.vision.patch_emb.${p}`,
  posEmb: 'model.vision.pos_emb',
  visLn1: (l: number, p: 'weight' | 'bias') => `model.vision.blocks.${l}.ln1.${p}`,
  visQkv: (l: number, p: 'weight' | 'bias') => `model.vision.blocks.${l}.attn.qkv.${p}`,
  visProj: (l: number, p: 'weight' | 'bias') => `model.vision.blocks.${l}.attn.proj.${p}`,
  visLn2: (l: number, p: 'weight' | 'bias') => `model.vision.blocks.${l}.ln2.${p}`,
  visFc1: (l: number, p: 'weight' | 'bias') => `model.vision.blocks.${l}.mlp.fc1.${p}`,
  visFc2: (l: number, p: 'weight' | 'bias') => `model.vision.blocks.${l}.mlp.fc2.${p}`,
  visPostLn: (p: 'weight' | 'bias') => `model.vision.post_ln.${p}`,
  projFc1: (p: 'weight' | 'bias') => `model.vision.proj_mlp.fc1.${p}`,
  projFc2: (p: 'weight' | 'bias') => `model.vision.proj_mlp.fc2.${p}`,
} as const;

/** Moondream2's published hyperparameters (FORMATS.md §2.3), used when no config.json is given. */
export const MOONDREAM2_CONFIG: MoondreamConfig = {
  architecture: 'moondream',
  text: {
    hiddenSize: 2048,
    numLayers: 24,
    numHeads: 32,
    headDim: 64,
    rotaryDim: 32,
    ropeTheta: 10000,
    intermediateSize: 8192,
    vocabSize: 51200,
    maxSeqLen: 2048,
    layerNormEps: 1e-5,
    bosTokenId: 50256,
    eosTokenId: 50256,
  },
  vision: {
    hiddenSize: 1152,
    numLayers: 27,
    numHeads: 16,
    headDim: 72,
    intermediateSize: 4304,
    patchSize: 14,
    imageSize: 378,
    numPatches: 729,
    layerNormEps: 1e-5,
    projHidden: 8192,
  },
};

export interface MoondreamTensorSpec {
  name: string;
  /** Canonical (HF) shape: linear weights [out,in]. */
  shape: number[];
  /** A vision-side linear weight, which MOON stores [in,out]. */
  visionLinear: boolean;
}

/** Every tensor of the model with its canonical shape, text first, in HF order. */
export function moondreamTensorSpecs(c: MoondreamConfig): MoondreamTensorSpec[] {
  const N = MOONDREAM_NAMES;
  const t = c.text;
  const v = c.vision;
  const d = t.hiddenSize;
  const D = v.hiddenSize;
  const out: MoondreamTensorSpec[] = [];
  const add = (name: string, shape: number[], visionLinear = false) => out.push({ name, shape, visionLinear });
  add(N.wte, [t.vocabSize, d]);
  for (let l = 0; l < t.numLayers; l++) {
    add(N.textLn(l, 'weight'), [d]);
    add(N.textLn(l, 'bias'), [d]);
    add(N.textQkv(l, 'weight'), [3 * d, d]);
    add(N.textQkv(l, 'bias'), [3 * d]);
    add(N.textProj(l, 'weight'), [d, d]);
    add(N.textProj(l, 'bias'), [d]);
    add(N.textFc1(l, 'weight'), [t.intermediateSize, d]);
    add(N.textFc1(l, 'bias'), [t.intermediateSize]);
    add(N.textFc2(l, 'weight'), [d, t.intermediateSize]);
    add(N.textFc2(l, 'bias'), [d]);
  }
  add(N.postLn('weight'), [d]);
  add(N.postLn('bias'), [d]);
  add(N.lmHead('weight'), [t.vocabSize, d]);
  add(N.lmHead('bias'), [t.vocabSize]);
  const patchIn = 3 * v.patchSize * v.patchSize;
  add(N.patchEmb('weight'), [D, patchIn], true);
  add(N.patchEmb('bias'), [D]);
  add(N.posEmb, [1, v.numPatches, D]);
  for (let l = 0; l < v.numLayers; l++) {
    add(N.visLn1(l, 'weight'), [D]);
    add(N.visLn1(l, 'bias'), [D]);
    add(N.visQkv(l, 'weight'), [3 * D, D], true);
    add(N.visQkv(l, 'bias'), [3 * D]);
    add(N.visProj(l, 'weight'), [D, D], true);
    add(N.visProj(l, 'bias'), [D]);
    add(N.visLn2(l, 'weight'), [D]);
    add(N.visLn2(l, 'bias'), [D]);
    add(N.visFc1(l, 'weight'), [v.intermediateSize, D], true);
    add(N.visFc1(l, 'bias'), [v.intermediateSize]);
    add(N.visFc2(l, 'weight'), [D, v.intermediateSize], true);
    add(N.visFc2(l, 'bias'), [D]);
  }
  add(N.visPostLn('weight'), [D]);
  add(N.visPostLn('bias'), [D]);
  add(N.projFc1('weight'), [v.projHidden, 2 * D], true);
  add(N.projFc1('bias'), [v.projHidden]);
  add(N.projFc2('weight'), [d, v.projHidden], true);
  add(N.projFc2('bias'), [d]);
  return out;
}

/** moondream2 checkpoints also hold the region (detection/pointing) heads, which MOON does not keep: null for those. */
export function moondreamCheckpointName(key: string): string | null {
  return key.startsWith('model.region.') || key.startsWith('region.') ? null : key;
}
