/**
 * The config (TllmConfig) and canonical tensor names and shapes of the TLLM GPT-style model
 * (FORMATS.md §1), HF-style keys. Shapes here are canonical ([out,in] for linear layers); the TLLM file stores those matrices
 * [in,out], so its views carry the reversed shape and `transposed: true`.
 */

/** The TLLM GPT-style model (FORMATS.md §1). Matrices stored [in,out]. */
export interface TllmConfig {
  architecture: 'tllm';
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  intermediateSize: number;
  maxSeqLen: number;
  vocabSize: number;
  dropout: number;
  layerNormEps: number;
}

/**
 * The model's tensors by role, as canonical names (`{layer}`: the layer index); the gpt engine asks
 * the weights spec for each role's name (GptEngine passes this table as spec.names).
 */
export const TLLM_TENSOR_ROLES = {
  embed: 'model.embed_tokens.weight',
  positions: 'model.embed_positions.weight',
  q: 'model.layers.{layer}.self_attn.q_proj.weight',
  k: 'model.layers.{layer}.self_attn.k_proj.weight',
  v: 'model.layers.{layer}.self_attn.v_proj.weight',
  o: 'model.layers.{layer}.self_attn.o_proj.weight',
  fc1: 'model.layers.{layer}.mlp.fc1.weight',
  fc1Bias: 'model.layers.{layer}.mlp.fc1.bias',
  fc2: 'model.layers.{layer}.mlp.fc2.weight',
  fc2Bias: 'model.layers.{layer}.mlp.fc2.bias',
  ln1: 'model.layers.{layer}.input_layernorm.weight',
  ln1Bias: 'model.layers.{layer}.input_layernorm.bias',
  ln2: 'model.layers.{layer}.post_attention_layernorm.weight',
  ln2Bias: 'model.layers.{layer}.post_attention_layernorm.bias',
  lmHead: 'lm_head.weight',
} as const;

function layerName(role: keyof typeof TLLM_TENSOR_ROLES): (l: number) => string {
  return (l) => TLLM_TENSOR_ROLES[role].replace('{layer}', String(l));
}

export const TLLM_NAMES = {
  embed: TLLM_TENSOR_ROLES.embed,
  positions: TLLM_TENSOR_ROLES.positions,
  q: layerName('q'),
  k: layerName('k'),
  v: layerName('v'),
  o: layerName('o'),
  fc1: layerName('fc1'),
  fc1Bias: layerName('fc1Bias'),
  fc2: layerName('fc2'),
  fc2Bias: layerName('fc2Bias'),
  ln1: layerName('ln1'),
  ln1Bias: layerName('ln1Bias'),
  ln2: layerName('ln2'),
  ln2Bias: layerName('ln2Bias'),
  lmHead: TLLM_TENSOR_ROLES.lmHead,
} as const;

export interface TllmTensorSpec {
  name: string;
  /** Canonical shape ([out,in] for linear layers). */
  shape: number[];
  /** A linear layer's weight: TLLM stores it [in,out]. */
  linear: boolean;
}

/**
 * Every tensor of the model, in TLLM file order, one at a time: a reader walks them against the
 * file and stops at the first disagreement, whatever num_layers the header claims.
 */
export function* tllmTensorSpecsInOrder(c: TllmConfig): Generator<TllmTensorSpec> {
  const d = c.hiddenSize;
  const f = c.intermediateSize;
  yield { name: TLLM_NAMES.embed, shape: [c.vocabSize, d], linear: false };
  yield { name: TLLM_NAMES.positions, shape: [c.maxSeqLen, d], linear: false };
  for (let l = 0; l < c.numLayers; l++) {
    yield { name: TLLM_NAMES.q(l), shape: [d, d], linear: true };
    yield { name: TLLM_NAMES.k(l), shape: [d, d], linear: true };
    yield { name: TLLM_NAMES.v(l), shape: [d, d], linear: true };
    yield { name: TLLM_NAMES.o(l), shape: [d, d], linear: true };
    yield { name: TLLM_NAMES.fc1(l), shape: [f, d], linear: true };
    yield { name: TLLM_NAMES.fc1Bias(l), shape: [f], linear: false };
    yield { name: TLLM_NAMES.fc2(l), shape: [d, f], linear: true };
    yield { name: TLLM_NAMES.fc2Bias(l), shape: [d], linear: false };
    yield { name: TLLM_NAMES.ln1(l), shape: [d], linear: false };
    yield { name: TLLM_NAMES.ln1Bias(l), shape: [d], linear: false };
    yield { name: TLLM_NAMES.ln2(l), shape: [d], linear: false };
    yield { name: TLLM_NAMES.ln2Bias(l), shape: [d], linear: false };
  }
  yield { name: TLLM_NAMES.lmHead, shape: [c.vocabSize, d], linear: true };
}

/** Every tensor of the model, in TLLM file order. */
export function tllmTensorSpecs(c: TllmConfig): TllmTensorSpec[] {
  return [...tllmTensorSpecsInOrder(c)];
}
