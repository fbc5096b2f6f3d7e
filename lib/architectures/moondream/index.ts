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

/**
 * The tensors by role, as canonical names (`{layer}`: the layer index); the phi and vit engines ask
 * the weights spec for each role's name (MoondreamEngine passes this table as spec.names).
 */
export const MOONDREAM_TENSOR_ROLES: Readonly<Record<string, string>> = {
  wte: 'model.text.wte',
  'textLn.weight': 'model.text.blocks.{layer}.ln.weight',
  'textLn.bias': 'model.text.blocks.{layer}.ln.bias',
  'textQkv.weight': 'model.text.blocks.{layer}.attn.qkv.weight',
  'textQkv.bias': 'model.text.blocks.{layer}.attn.qkv.bias',
  'textProj.weight': 'model.text.blocks.{layer}.attn.proj.weight',
  'textProj.bias': 'model.text.blocks.{layer}.attn.proj.bias',
  'textFc1.weight': 'model.text.blocks.{layer}.mlp.fc1.weight',
  'textFc1.bias': 'model.text.blocks.{layer}.mlp.fc1.bias',
  'textFc2.weight': 'model.text.blocks.{layer}.mlp.fc2.weight',
  'textFc2.bias': 'model.text.blocks.{layer}.mlp.fc2.bias',
  'postLn.weight': 'model.text.post_ln.weight',
  'postLn.bias': 'model.text.post_ln.bias',
  'lmHead.weight': 'model.text.lm_head.weight',
  'lmHead.bias': 'model.text.lm_head.bias',
  'patchEmb.weight': 'model.vision.patch_emb.weight',
  'patchEmb.bias': 'model.vision.patch_emb.bias',
  posEmb: 'model.vision.pos_emb',
  'visLn1.weight': 'model.vision.blocks.{layer}.ln1.weight',
  'visLn1.bias': 'model.vision.blocks.{layer}.ln1.bias',
  'visQkv.weight': 'model.vision.blocks.{layer}.attn.qkv.weight',
  'visQkv.bias': 'model.vision.blocks.{layer}.attn.qkv.bias',
  'visProj.weight': 'model.vision.blocks.{layer}.attn.proj.weight',
  'visProj.bias': 'model.vision.blocks.{layer}.attn.proj.bias',
  'visLn2.weight': 'model.vision.blocks.{layer}.ln2.weight',
  'visLn2.bias': 'model.vision.blocks.{layer}.ln2.bias',
  'visFc1.weight': 'model.vision.blocks.{layer}.mlp.fc1.weight',
  'visFc1.bias': 'model.vision.blocks.{layer}.mlp.fc1.bias',
  'visFc2.weight': 'model.vision.blocks.{layer}.mlp.fc2.weight',
  'visFc2.bias': 'model.vision.blocks.{layer}.mlp.fc2.bias',
  'visPostLn.weight': 'model.vision.post_ln.weight',
  'visPostLn.bias': 'model.vision.post_ln.bias',
  'projFc1.weight': 'model.vision.proj_mlp.fc1.weight',
  'projFc1.bias': 'model.vision.proj_mlp.fc1.bias',
  'projFc2.weight': 'model.vision.proj_mlp.fc2.weight',
  'projFc2.bias': 'model.vision.proj_mlp.fc2.bias',
};

type Part = 'weight' | 'bias';
const named = (role: string, l?: number) => (l === undefined ? MOONDREAM_TENSOR_ROLES[role] : MOONDREAM_TENSOR_ROLES[role].replace('{layer}', String(l)));

export const MOONDREAM_NAMES = {
  wte: MOONDREAM_TENSOR_ROLES.wte,
  textLn: (l: number, p: Part) => named(`textLn.${p}`, l),
  textQkv: (l: number, p: Part) => named(`textQkv.${p}`, l),
  textProj: (l: number, p: Part) => named(`textProj.${p}`, l),
  textFc1: (l: number, p: Part) => named(`textFc1.${p}`, l),
  textFc2: (l: number, p: Part) => named(`textFc2.${p}`, l),
  postLn: (p: Part) => named(`postLn.${p}`),
  lmHead: (p: Part) => named(`lmHead.${p}`),
  patchEmb: (p: Part) => named(`patchEmb.${p}`),
  posEmb: MOONDREAM_TENSOR_ROLES.posEmb,
  visLn1: (l: number, p: Part) => named(`visLn1.${p}`, l),
  visQkv: (l: number, p: Part) => named(`visQkv.${p}`, l),
  visProj: (l: number, p: Part) => named(`visProj.${p}`, l),
  visLn2: (l: number, p: Part) => named(`visLn2.${p}`, l),
  visFc1: (l: number, p: Part) => named(`visFc1.${p}`, l),
  visFc2: (l: number, p: Part) => named(`visFc2.${p}`, l),
  visPostLn: (p: Part) => named(`visPostLn.${p}`),
  projFc1: (p: Part) => named(`projFc1.${p}`),
  projFc2: (p: Part) => named(`projFc2.${p}`),
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
