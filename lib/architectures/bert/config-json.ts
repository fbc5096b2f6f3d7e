/**
 * BERT's HF config.json both ways, with the sentence-transformers files beside it (modules.json,
 * sentence_bert_config.json, <pooling>/config.json). Without them a BERT reads as mean pooling, no
 * normalization and max_seq_length = max_position_embeddings (a decision: what embedding users
 * most often want).
 */
import { UnsupportedError } from '../../base/errors';
import { Fields, isObject, type HfJson } from '../config-fields';
import { bertMaxSequence, type BertClassifierConfig, type BertConfig, type BertModelType } from './index';

/** The sentence-transformers files beside a BERT config.json, as parsed JSON. */
export interface SentenceTransformersFiles {
  /** modules.json: the pipeline (Transformer, Pooling, Normalize, ...). */
  modules?: unknown;
  /** sentence_bert_config.json: max_seq_length, do_lower_case. */
  sentenceBert?: HfJson;
  /** <pooling path>/config.json (1_Pooling/config.json). */
  pooling?: HfJson;
}

function poolingMode(pooling: HfJson | undefined, path: string | undefined): BertConfig['pooling'] {
  if (!pooling) return 'mean';
  const f = new Fields(pooling, path);
  const modes: BertConfig['pooling'][] = [];
  if (f.bool('pooling_mode_mean_tokens', false)) modes.push('mean');
  if (f.bool('pooling_mode_cls_token', false)) modes.push('cls');
  if (f.bool('pooling_mode_max_tokens', false)) modes.push('max');
  for (const other of ['pooling_mode_mean_sqrt_len_tokens', 'pooling_mode_weightedmean_tokens', 'pooling_mode_lasttoken']) {
    if (f.bool(other, false)) f.fail('UNSUPPORTED', `sentence-transformers pooling '${other}'`, { found: true });
  }
  if (modes.length !== 1) {
    return f.fail('CONFIG_MISMATCH', 'exactly one pooling mode must be set', { expected: 'one of mean, cls, max', found: modes });
  }
  return modes[0];
}

function moduleTypes(modules: unknown): string[] {
  if (!Array.isArray(modules)) return [];
  return modules.filter(isObject).map((m) => (typeof m.type === 'string' ? m.type : ''));
}

/** 'xlm-roberta' for XLM-RoBERTa's model_type or classes (XLMRobertaModel, ...), else 'bert'. */
function modelTypeOf(hf: HfJson): BertModelType {
  const classes = Array.isArray(hf.architectures) ? hf.architectures : [];
  return hf.model_type === 'xlm-roberta' || classes.some((c) => typeof c === 'string' && c.startsWith('XLMRoberta')) ? 'xlm-roberta' : 'bert';
}

/**
 * nomic-bert's config.json (NomicBertModel: GPT-2-style key names), in the form llama.cpp's
 * converter accepts: SwiGLU, no biases, post-norm, rotary over the whole head without
 * interleaving or scaling (anything else is refused).
 */
function nomicBertConfig(f: Fields, st: SentenceTransformersFiles, path: string | undefined): BertConfig {
  const act = f.str('activation_function') ?? 'swiglu';
  if (act !== 'swiglu') f.fail('UNSUPPORTED', `nomic-bert activation '${act}'`, { expected: 'swiglu', found: act });
  for (const [key, want] of [['qkv_proj_bias', false], ['mlp_fc1_bias', false], ['mlp_fc2_bias', false], ['prenorm', false], ['rotary_emb_interleaved', false], ['causal', false]] as const) {
    if (f.bool(key, want) !== want) f.fail('UNSUPPORTED', `nomic-bert with ${key} = ${!want}`, { expected: want, found: !want });
  }
  if (f.num('rotary_emb_fraction', 1) !== 1) f.fail('UNSUPPORTED', 'nomic-bert with rotary over part of the head', { expected: 1, found: f.num('rotary_emb_fraction', 1) });
  for (const key of ['rotary_emb_scale_base', 'rotary_scaling_factor']) {
    const v = f.raw(key);
    if (v !== undefined && v !== null) f.fail('UNSUPPORTED', `nomic-bert with ${key}`, { expected: null, found: v });
  }
  const hiddenSize = f.int('n_embd');
  const numHeads = f.int('n_head');
  if (hiddenSize % numHeads !== 0 || (hiddenSize / numHeads) % 2 !== 0) f.fail('CONFIG_MISMATCH', 'n_embd is not a multiple of n_head with an even head size', { expected: `multiple of ${2 * numHeads}`, found: hiddenSize });
  const maxPositionEmbeddings = f.int('n_positions', 2048);
  const sb = st.sentenceBert ? new Fields(st.sentenceBert, path) : undefined;
  const maxSeqLength = sb?.int('max_seq_length', maxPositionEmbeddings) ?? maxPositionEmbeddings;
  if (maxSeqLength > maxPositionEmbeddings) f.fail('CONFIG_MISMATCH', 'max_seq_length exceeds n_positions', { expected: `<= ${maxPositionEmbeddings}`, found: maxSeqLength });
  return {
    architecture: 'bert',
    modelType: 'nomic-bert',
    hiddenSize,
    numLayers: f.int('n_layer'),
    numHeads,
    intermediateSize: f.int('n_inner'),
    vocabSize: f.int('vocab_size'),
    maxPositionEmbeddings,
    typeVocabSize: f.int('type_vocab_size', 2),
    layerNormEps: f.num('layer_norm_epsilon', 1e-12),
    hiddenAct: 'swiglu',
    ropeTheta: f.num('rotary_emb_base', 10000),
    maxSeqLength,
    pooling: poolingMode(st.pooling, path),
    normalize: moduleTypes(st.modules).some((t) => t.endsWith('models.Normalize')),
  };
}

/** BertConfig from a config.json plus the sentence-transformers files. */
export function bertConfigFromHfJson(hf: HfJson, st: SentenceTransformersFiles = {}, path?: string): BertConfig {
  const f = new Fields(hf, path);
  if (hf.model_type === 'nomic_bert') return nomicBertConfig(f, st, path);
  const modelType = modelTypeOf(hf);
  // XLM-RoBERTa counts positions from padding_idx + 1 (its pad_token_id, 1 in every release).
  const positionOffset = modelType === 'xlm-roberta' ? f.int('pad_token_id', 1) + 1 : 0;
  const act = f.str('hidden_act') ?? 'gelu';
  let hiddenAct: BertConfig['hiddenAct'];
  if (act === 'gelu') hiddenAct = 'gelu';
  else if (act === 'gelu_new' || act === 'gelu_pytorch_tanh') hiddenAct = 'gelu_tanh';
  else return f.fail('UNSUPPORTED', `BERT activation '${act}'`, { found: act });
  const posType = f.str('position_embedding_type') ?? 'absolute';
  if (posType !== 'absolute') f.fail('UNSUPPORTED', `position_embedding_type '${posType}'`, { found: posType });
  const hiddenSize = f.int('hidden_size');
  const numHeads = f.int('num_attention_heads');
  if (hiddenSize % numHeads !== 0) f.fail('CONFIG_MISMATCH', 'hidden_size is not a multiple of num_attention_heads', { expected: `multiple of ${numHeads}`, found: hiddenSize });
  const maxPositionEmbeddings = f.int('max_position_embeddings', 512);
  if (positionOffset >= maxPositionEmbeddings) {
    f.fail('CONFIG_MISMATCH', 'pad_token_id + 1 (the first position) is past max_position_embeddings', { expected: `< ${maxPositionEmbeddings}`, found: positionOffset });
  }
  const longest = bertMaxSequence({ maxPositionEmbeddings, positionOffset });
  const sb = st.sentenceBert ? new Fields(st.sentenceBert, path) : undefined;
  const maxSeqLength = sb?.int('max_seq_length', longest) ?? longest;
  if (maxSeqLength > longest) {
    f.fail('CONFIG_MISMATCH', 'max_seq_length exceeds the positions the model has', { expected: `<= ${longest}`, found: maxSeqLength });
  }
  return {
    architecture: 'bert',
    ...(modelType === 'xlm-roberta' ? { modelType, positionOffset } : {}),
    hiddenSize,
    numLayers: f.int('num_hidden_layers'),
    numHeads,
    intermediateSize: f.int('intermediate_size'),
    vocabSize: f.int('vocab_size'),
    maxPositionEmbeddings,
    typeVocabSize: f.int('type_vocab_size', 2),
    layerNormEps: f.num('layer_norm_eps', 1e-12),
    hiddenAct,
    maxSeqLength,
    pooling: poolingMode(st.pooling, path),
    normalize: moduleTypes(st.modules).some((t) => t.endsWith('models.Normalize')),
  };
}

/** config.json and the sentence-transformers files for a BertConfig. */
export function hfFilesFromBert(c: BertConfig): { config: HfJson; modules: HfJson[]; sentenceBert: HfJson; pooling: HfJson } {
  if (c.modelType === 'nomic-bert') throw new UnsupportedError('writing a nomic-bert encoder to an HF folder is not supported');
  const modules: HfJson[] = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ];
  if (c.normalize) modules.push({ idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' });
  return {
    config: {
      ...(c.modelType === 'xlm-roberta'
        ? { architectures: ['XLMRobertaModel'], model_type: 'xlm-roberta', pad_token_id: (c.positionOffset ?? 2) - 1 }
        : { architectures: ['BertModel'], model_type: 'bert' }),
      hidden_size: c.hiddenSize,
      num_hidden_layers: c.numLayers,
      num_attention_heads: c.numHeads,
      intermediate_size: c.intermediateSize,
      vocab_size: c.vocabSize,
      max_position_embeddings: c.maxPositionEmbeddings,
      type_vocab_size: c.typeVocabSize,
      layer_norm_eps: c.layerNormEps,
      hidden_act: c.hiddenAct === 'gelu' ? 'gelu' : 'gelu_new',
      position_embedding_type: 'absolute',
    },
    modules,
    sentenceBert: { max_seq_length: c.maxSeqLength, do_lower_case: false },
    pooling: {
      word_embedding_dimension: c.hiddenSize,
      pooling_mode_cls_token: c.pooling === 'cls',
      pooling_mode_mean_tokens: c.pooling === 'mean',
      pooling_mode_max_tokens: c.pooling === 'max',
      pooling_mode_mean_sqrt_len_tokens: false,
    },
  };
}

/** sentence-transformers' names of the activations a cross-encoder's score may take. */
const SCORE_ACTIVATIONS: Record<string, NonNullable<BertClassifierConfig['scoreActivation']>> = {
  'torch.nn.modules.activation.Sigmoid': 'sigmoid',
  'torch.nn.modules.linear.Identity': 'none',
};

/**
 * BertClassifierConfig from a BertForSequenceClassification config.json: the encoder's sizes as
 * BERT's, the labels from id2label (else num_labels, else transformers' default of 2), the score
 * activation from `sentence_transformers.activation_fn` (else the older
 * `sbert_ce_default_activation_function`).
 */
export function bertClassifierConfigFromHfJson(hf: HfJson, path?: string): BertClassifierConfig {
  const { architecture: _a, pooling: _p, normalize: _n, ...encoder } = bertConfigFromHfJson(hf, {}, path);
  const f = new Fields(hf, path);
  let labels: string[];
  if (isObject(hf.id2label)) {
    const id2label = hf.id2label;
    const entries = Object.keys(id2label);
    labels = entries.map((_, i) => {
      const name = id2label[String(i)];
      if (typeof name !== 'string') f.fail('CONFIG_MISMATCH', `id2label has no label ${i}`, { expected: `ids 0..${entries.length - 1}`, found: entries });
      return name as string;
    });
  } else {
    labels = Array.from({ length: f.int('num_labels', 2) }, (_, i) => `LABEL_${i}`);
  }
  if (labels.length < 1) f.fail('CONFIG_MISMATCH', 'the classifier has no labels', { expected: '>= 1 label', found: 0 });
  const st = isObject(hf.sentence_transformers) ? hf.sentence_transformers.activation_fn : undefined;
  const activationName = st ?? hf.sbert_ce_default_activation_function;
  let scoreActivation: BertClassifierConfig['scoreActivation'];
  if (activationName !== undefined && activationName !== null) {
    scoreActivation = typeof activationName === 'string' ? SCORE_ACTIVATIONS[activationName] : undefined;
    if (!scoreActivation) f.fail('UNSUPPORTED', `cross-encoder activation ${JSON.stringify(activationName)}`, { found: activationName });
  }
  return {
    architecture: 'bert-classifier',
    ...encoder,
    maxSeqLength: bertMaxSequence(encoder),
    numLabels: labels.length,
    labels,
    pooler: true,
    ...(scoreActivation ? { scoreActivation } : {}),
  };
}

/** config.json of a BertClassifierConfig (BertForSequenceClassification). */
export function hfConfigFromBertClassifier(c: BertClassifierConfig): HfJson {
  const { config } = hfFilesFromBert({ ...c, architecture: 'bert', pooling: 'cls', normalize: false });
  return {
    ...config,
    architectures: [c.modelType === 'xlm-roberta' ? 'XLMRobertaForSequenceClassification' : 'BertForSequenceClassification'],
    id2label: Object.fromEntries(c.labels.map((l, i) => [String(i), l])),
    label2id: Object.fromEntries(c.labels.map((l, i) => [l, i])),
    ...(c.scoreActivation ? { sentence_transformers: { activation_fn: c.scoreActivation === 'sigmoid' ? 'torch.nn.modules.activation.Sigmoid' : 'torch.nn.modules.linear.Identity' } } : {}),
  };
}
