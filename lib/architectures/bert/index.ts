/**
 * The config (BertConfig) and canonical tensor names and shapes of BERT / MiniLM encoders (HF
 * transformers' BertModel keys without a `bert.` prefix, [out,in] matrices), in the seed EMBD
 * order: 5 embedding tensors, then 16 per layer, then the optional pooler.
 */

/**
 * BERT / MiniLM sentence embedders (FORMATS.md §3), XLM-RoBERTa's (the same encoder, its
 * positions counted from padding_idx + 1) and nomic-bert's (rotary positions instead of a
 * position table, a SwiGLU feed-forward, no biases, q/k/v fused in the checkpoint).
 */
export interface BertConfig {
  architecture: 'bert';
  /** The config.json model_type it came from and is written back as; absent: 'bert'. */
  modelType?: BertModelType;
  /**
   * The position-table row of a sequence's first token: XLM-RoBERTa's padding_idx + 1 (HF's
   * create_position_ids_from_input_ids on unpadded input); absent: 0. A sequence holds up to
   * maxPositionEmbeddings - positionOffset tokens.
   */
  positionOffset?: number;
  hiddenSize: number;
  numLayers: number;
  numHeads: number;
  intermediateSize: number;
  vocabSize: number;
  maxPositionEmbeddings: number;
  typeVocabSize: number;
  layerNormEps: number;
  /** The feed-forward's activation; 'swiglu': silu(x·Wgateᵀ) ⊙ (x·W1ᵀ) (nomic-bert). */
  hiddenAct: 'gelu' | 'gelu_tanh' | 'swiglu';
  /** Rotary positions with this base (NeoX halves over the whole head) instead of a position table (nomic-bert). */
  ropeTheta?: number;
  /** sentence-transformers' max_seq_length (truncation), ≤ maxPositionEmbeddings. */
  maxSeqLength: number;
  pooling: 'mean' | 'cls' | 'max';
  normalize: boolean;
}

/** The config.json model_types the BERT encoder runs. */
export type BertModelType = 'bert' | 'xlm-roberta' | 'nomic-bert';

/** Where a cross-encoder of this config puts a pair's special tokens (lib/tokenizers/pair.ts): RoBERTa's layout for XLM-R. */
export function bertPairLayout(c: Pick<BertConfig, 'modelType'>): 'bert' | 'roberta' {
  return c.modelType === 'xlm-roberta' ? 'roberta' : 'bert';
}

/** The most tokens one sequence of the encoder holds (the position rows past the offset). */
export function bertMaxSequence(c: Pick<BertConfig, 'maxPositionEmbeddings' | 'positionOffset'>): number {
  return c.maxPositionEmbeddings - (c.positionOffset ?? 0);
}

/**
 * BERT cross-encoders (HF BertForSequenceClassification: ms-marco-MiniLM and its kin): the
 * encoder of BertConfig with a token type per token, then the head on the [CLS] row,
 * classifier(tanh(pooler(h))), one logit per label. Rerankers score with one label.
 */
export interface BertClassifierConfig extends Omit<BertConfig, 'architecture' | 'pooling' | 'normalize'> {
  architecture: 'bert-classifier';
  /** Outputs of the classifier (config.json's id2label / num_labels; GGUF classifier.output_labels). */
  numLabels: number;
  /** The label names, in id order. */
  labels: string[];
  /**
   * The head starts with pooler.dense + tanh: always in an HF checkpoint; llama.cpp's converter
   * drops the pooler, so its GGUFs run the classifier on the [CLS] row directly (as llama.cpp does).
   */
  pooler: boolean;
  /**
   * What the checkpoint says turns the logit into its score (sentence-transformers'
   * `activation_fn`, or the older `sbert_ce_default_activation_function`): 'sigmoid' or 'none';
   * undefined where the file says nothing.
   */
  scoreActivation?: 'none' | 'sigmoid';
}

/** general.architecture of the GGUFs llama.cpp writes for BERT encoders and cross-encoders. */
export const BERT_GGUF_ARCHITECTURE = 'bert';

/** general.architecture of llama.cpp's nomic-bert (rotary, SwiGLU, fused attn_qkv, no biases). */
export const NOMIC_BERT_GGUF_ARCHITECTURE = 'nomic-bert';

/** Whether a GGUF's general.architecture is nomic-bert's (its keys say rotary and SwiGLU). */
export function isNomicBertGguf(generalArchitecture: string | undefined): boolean {
  return generalArchitecture === NOMIC_BERT_GGUF_ARCHITECTURE;
}

/** Whether a GGUF's general.architecture is one the BERT encoder runs (llama.cpp's BERT, nomic-bert). */
export function isBertGguf(generalArchitecture: string | undefined): boolean {
  return generalArchitecture === BERT_GGUF_ARCHITECTURE || generalArchitecture === NOMIC_BERT_GGUF_ARCHITECTURE;
}

export const BERT_NAMES = {
  wordEmbeddings: 'embeddings.word_embeddings.weight',
  positionEmbeddings: 'embeddings.position_embeddings.weight',
  tokenTypeEmbeddings: 'embeddings.token_type_embeddings.weight',
  embeddingsNorm: 'embeddings.LayerNorm.weight',
  embeddingsNormBias: 'embeddings.LayerNorm.bias',
  query: (l: number) => `encoder.layer.${l}.attention.self.query.weight`,
  queryBias: (l: number) => `encoder.layer.${l}.attention.self.query.bias`,
  key: (l: number) => `encoder.layer.${l}.attention.self.key.weight`,
  keyBias: (l: number) => `encoder.layer.${l}.attention.self.key.bias`,
  value: (l: number) => `encoder.layer.${l}.attention.self.value.weight`,
  valueBias: (l: number) => `encoder.layer.${l}.attention.self.value.bias`,
  attnOut: (l: number) => `encoder.layer.${l}.attention.output.dense.weight`,
  attnOutBias: (l: number) => `encoder.layer.${l}.attention.output.dense.bias`,
  attnNorm: (l: number) => `encoder.layer.${l}.attention.output.LayerNorm.weight`,
  attnNormBias: (l: number) => `encoder.layer.${l}.attention.output.LayerNorm.bias`,
  intermediate: (l: number) => `encoder.layer.${l}.intermediate.dense.weight`,
  intermediateBias: (l: number) => `encoder.layer.${l}.intermediate.dense.bias`,
  output: (l: number) => `encoder.layer.${l}.output.dense.weight`,
  outputBias: (l: number) => `encoder.layer.${l}.output.dense.bias`,
  outputNorm: (l: number) => `encoder.layer.${l}.output.LayerNorm.weight`,
  outputNormBias: (l: number) => `encoder.layer.${l}.output.LayerNorm.bias`,
  /** nomic-bert: the SwiGLU gate (fc12), and q/k/v as one [3H, H] checkpoint tensor (Wqkv). */
  gate: (l: number) => `encoder.layer.${l}.intermediate.gate.weight`,
  qkv: (l: number) => `encoder.layer.${l}.attention.self.qkv.weight`,
  pooler: 'pooler.dense.weight',
  poolerBias: 'pooler.dense.bias',
  classifier: 'classifier.weight',
  classifierBias: 'classifier.bias',
} as const;

export interface BertTensorSpec {
  name: string;
  shape: number[];
  /** The pooler: allowed, never required. */
  optional: boolean;
}

/** Every tensor of the encoder in EMBD order; the two pooler tensors last, marked optional. */
export function bertTensorSpecs(c: BertConfig): BertTensorSpec[] {
  const h = c.hiddenSize;
  const i = c.intermediateSize;
  const t = (name: string, shape: number[], optional = false): BertTensorSpec => ({ name, shape, optional });
  // nomic-bert: no position table, no linear biases (allowed, as llama.cpp allows them), a gate.
  const rotary = c.ropeTheta !== undefined;
  const out = [
    t(BERT_NAMES.wordEmbeddings, [c.vocabSize, h]),
    ...(rotary ? [] : [t(BERT_NAMES.positionEmbeddings, [c.maxPositionEmbeddings, h])]),
    t(BERT_NAMES.tokenTypeEmbeddings, [c.typeVocabSize, h]),
    t(BERT_NAMES.embeddingsNorm, [h]),
    t(BERT_NAMES.embeddingsNormBias, [h]),
  ];
  for (let l = 0; l < c.numLayers; l++) {
    out.push(
      t(BERT_NAMES.query(l), [h, h]), t(BERT_NAMES.queryBias(l), [h], rotary),
      t(BERT_NAMES.key(l), [h, h]), t(BERT_NAMES.keyBias(l), [h], rotary),
      t(BERT_NAMES.value(l), [h, h]), t(BERT_NAMES.valueBias(l), [h], rotary),
      t(BERT_NAMES.attnOut(l), [h, h]), t(BERT_NAMES.attnOutBias(l), [h], rotary),
      t(BERT_NAMES.attnNorm(l), [h]), t(BERT_NAMES.attnNormBias(l), [h]),
      t(BERT_NAMES.intermediate(l), [i, h]), t(BERT_NAMES.intermediateBias(l), [i], rotary),
      ...(c.hiddenAct === 'swiglu' ? [t(BERT_NAMES.gate(l), [i, h])] : []),
      t(BERT_NAMES.output(l), [h, i]), t(BERT_NAMES.outputBias(l), [h], rotary),
      t(BERT_NAMES.outputNorm(l), [h]), t(BERT_NAMES.outputNormBias(l), [h]),
    );
  }
  out.push(t(BERT_NAMES.pooler, [h, h], true), t(BERT_NAMES.poolerBias, [h], true));
  return out;
}

/** The cross-encoder's tensors: the encoder's, the pooler (required when the config has it) and the classifier. */
export function bertClassifierTensorSpecs(c: BertClassifierConfig): BertTensorSpec[] {
  const encoder = bertTensorSpecs({ ...c, architecture: 'bert', pooling: 'cls', normalize: false });
  return [
    ...encoder.map((t) => (t.optional ? { ...t, optional: !c.pooler } : t)),
    { name: BERT_NAMES.classifier, shape: [c.numLabels, c.hiddenSize], optional: false },
    { name: BERT_NAMES.classifierBias, shape: [c.numLabels], optional: false },
  ];
}

/** nomic-bert's checkpoint names (NomicBertModel) -> BERT's; Wqkv -> the fused qkv (bertFusedParts). */
const NOMIC_LAYER: Record<string, string> = {
  'attn.Wqkv': 'attention.self.qkv',
  'attn.out_proj': 'attention.output.dense',
  norm1: 'attention.output.LayerNorm',
  'mlp.fc11': 'intermediate.dense',
  'mlp.fc12': 'intermediate.gate',
  'mlp.fc2': 'output.dense',
  norm2: 'output.LayerNorm',
};

/** An HF checkpoint key -> canonical name (`bert.` / `roberta.` prefix and TF-era gamma/beta dropped, nomic-bert's names mapped); null: the MLM head and position ids. */
export function bertCheckpointName(key: string): string | null {
  const nomic = /^encoder\.layers\.(\d+)\.(.+)\.(weight|bias)$/.exec(key);
  if (nomic && NOMIC_LAYER[nomic[2]]) return `encoder.layer.${nomic[1]}.${NOMIC_LAYER[nomic[2]]}.${nomic[3]}`;
  if (key.startsWith('emb_ln.')) return key.replace(/^emb_ln\./, 'embeddings.LayerNorm.');
  let n = key.startsWith('bert.') ? key.slice(5) : key.startsWith('roberta.') ? key.slice(8) : key;
  if (n === 'embeddings.position_ids' || n.startsWith('cls.') || n.startsWith('lm_head.')) return null;
  n = n.replace(/\.LayerNorm\.gamma$/, '.LayerNorm.weight').replace(/\.LayerNorm\.beta$/, '.LayerNorm.bias');
  // RoBERTa's classification head is BERT's pooler + classifier under other names.
  return n.replace(/^classifier\.dense\./, 'pooler.dense.').replace(/^classifier\.out_proj\./, 'classifier.');
}

/** The row blocks of nomic-bert's fused q/k/v ([3H, H]: q, k, v) by canonical name; undefined for other tensors. */
export function bertFusedParts(c: Pick<BertConfig, 'hiddenSize'>): (name: string) => { name: string; row0: number; rows: number }[] | undefined {
  const h = c.hiddenSize;
  return (name) => {
    const m = /^encoder\.layer\.(\d+)\.attention\.self\.qkv\.weight$/.exec(name);
    if (!m) return undefined;
    const l = Number(m[1]);
    return [{ name: BERT_NAMES.query(l), row0: 0, rows: h }, { name: BERT_NAMES.key(l), row0: h, rows: h }, { name: BERT_NAMES.value(l), row0: 2 * h, rows: h }];
  };
}

/**
 * The checkpoint name HF's class uses for a canonical name: XLMRobertaForSequenceClassification's
 * `roberta.` prefix and head names (classifier.dense, classifier.out_proj); others as they are.
 */
export function bertClassifierHfName(c: Pick<BertConfig, 'modelType'>): (name: string) => string {
  if (c.modelType !== 'xlm-roberta') return (name) => name;
  return (name) => {
    if (name.startsWith('pooler.dense.')) return name.replace(/^pooler\.dense\./, 'classifier.dense.');
    if (name.startsWith('classifier.')) return name.replace(/^classifier\./, 'classifier.out_proj.');
    return `roberta.${name}`;
  };
}
