/**
 * The architecture registry: one entry per model architecture weightmap runs. An entry says
 *
 *   - its family (the engines' view: decoder variants share one engine, features per variant),
 *   - how HF config.json names it (model_type, or the `architectures` class when model_type is
 *     absent) and, for decoders, GGUF `general.architecture`; the config readers of
 *     lib/formats/containers/hf-config.ts and gguf.ts turn those files into its config, and each seed format
 *     (TLLM, MOON, EMBD, sepweight, ajc1, llama2.c) has its own fixed layout in its reader,
 *   - its canonical tensor names and shapes (tensors), and how HF checkpoint keys map to them,
 *   - which engine runs it and which class loadModel / loadEmbedder wraps that engine in
 *     (lib/models/model.ts and lib/models/embedder.ts map these names to code),
 *   - the positions one sequence may hold.
 *
 * A decoder variant is one row of DECODER_VARIANTS (its family's folder, gathered by
 * ./decoder/variants.ts): the entries here are made from it, and formats and loaders ask this
 * registry, never the name, what to do with a config.
 */
import type { Architecture, ModelConfig } from './model-config';
import { bertCheckpointName, bertClassifierHfName, bertClassifierTensorSpecs, bertFusedParts, bertTensorSpecs, type BertConfig } from './bert';
import { DECODER_VARIANTS, decoderCheckpointNames, decoderFusedParts, decoderTensorShapes, type BuiltinChatTemplate, type DecoderArchitecture, type DecoderConfig, type DecoderRetrieval, type FusedPart } from './decoder';
import { clipTensorSpecs, type ClipConfig } from './clip';
import { moondreamCheckpointName, moondreamTensorSpecs, type MoondreamConfig } from './moondream';
import { tllmTensorSpecs, type TllmConfig } from './tllm';

export type Family = 'decoder' | 'gpt' | 'moondream' | 'bert' | 'vit';
/** The engine (lib/engines/<engine>.ts over native/engines) that runs an architecture. */
export type EngineName = 'decoder' | 'gpt' | 'moondream' | 'bert' | 'vit';
/**
 * The class that wraps the engine: Model and MoondreamModel (loadModel), Embedder (loadEmbedder),
 * Reranker (loadReranker), VisionProjector (an mmproj: loadModel's `mmproj` option beside its language model).
 */
export type ModelClassName = 'Model' | 'MoondreamModel' | 'Embedder' | 'Reranker' | 'VisionProjector';
export type KnownArchitecture = Exclude<Architecture, 'unknown'>;

export interface ArchitectureEntry<C extends ModelConfig = ModelConfig> {
  name: KnownArchitecture;
  family: Family;
  /** HF config.json: the `model_type` values that name it, and the `architectures` classes that do when model_type is absent. */
  hf: {
    modelTypes: readonly string[];
    classPattern?: RegExp;
    /** Classes that name it whatever the model_type says: a head over another entry's model ("bert" + BertForSequenceClassification). */
    classes?: readonly string[];
  };
  engine: EngineName;
  modelClass: ModelClassName;
  /** Every tensor the model has, canonical name and [out,in] shape; optional ones (a tied head, BERT's pooler) marked. */
  tensors(config: C): { name: string; shape: number[]; optional: boolean }[];
  /** The canonical name of each key of an HF checkpoint holding `keys`; null: a key the model does not use. */
  checkpointNames(keys: readonly string[]): (key: string) => string | null;
  /** The way back: the name an HF checkpoint of it gives a canonical tensor (absent: the canonical name). */
  hfTensorName?(config: C): (name: string) => string;
  /** The one-to-many step: the row blocks of a fused checkpoint tensor (by its canonical name), undefined for others. */
  fusedParts?(config: C): (name: string) => FusedPart[] | undefined;
  /** Positions one sequence may hold (Infinity: no text-generation engine runs it). */
  maxSeqLen(config: C): number;
  /** The layer counts of a config, by the config.json key that sets each (readers check them against the tensor count). */
  layerCounts(config: C): [string, number][];
  /**
   * Where an HF folder of it keeps its vocabulary: 'wordpiece' (vocab.txt / tokenizer.json, which
   * the reader hands to writers that embed one, as EMBD, and which the writer writes from the
   * vocabulary); absent: tokenizer files copied or made as a decoder's.
   */
  hfVocabulary?: 'wordpiece';
  /** Its own formats (TLLM, MOON) keep the tokenizer files beside the weights file. */
  tokenizerBesideWeights?: boolean;
  /** Its HF folder's sentence-transformers files (modules.json, sentence_bert_config.json, the pooling config) are part of its config. */
  sentenceTransformers?: boolean;
  /** Written to GGUF in llama.cpp's encoder layout (formats/containers/gguf-bert.ts: its tensor names, `bert.*` keys, WPM vocabulary). */
  ggufEncoder?: boolean;
  /** Its engine quantizes the weights at load (loadModel's `quant` option). */
  quantizesOnLoad?: boolean;
  /** The chat template used when the model brings none (a template of lib/generation/chat.ts, by name: the registry imports no generation code). */
  defaultChatTemplate?: BuiltinChatTemplate;
}

/** The config type of each family (and of the engine of the same name). */
export interface FamilyConfigs {
  decoder: DecoderConfig;
  gpt: TllmConfig;
  moondream: MoondreamConfig;
  bert: BertConfig;
  vit: ClipConfig;
}

/** Whether the registry runs `config` on `engine` (and so which config type it is). */
export function runsOn<E extends EngineName>(config: ModelConfig, engine: E): config is FamilyConfigs[E] {
  return ARCHITECTURES.get(config.architecture)?.engine === engine;
}

/** Whether the registry puts `config` in `family` (and so which config type it is). */
export function isFamily<F extends Family>(config: ModelConfig, family: F): config is FamilyConfigs[F] {
  return ARCHITECTURES.get(config.architecture)?.family === family;
}

function decoderEntry(name: DecoderArchitecture): ArchitectureEntry {
  const v = DECODER_VARIANTS[name];
  return entry<DecoderConfig>({
    name,
    family: 'decoder',
    hf: { modelTypes: v.hfModelTypes, classPattern: v.hfClassPattern },
    engine: 'decoder',
    modelClass: 'Model',
    checkpointNames: decoderCheckpointNames,
    fusedParts: decoderFusedParts,
    tensors(c) {
      const required = new Set(decoderTensorShapes(c).map((s) => s.name));
      return decoderTensorShapes({ ...c, tieWordEmbeddings: false }).map((s) => ({ ...s, optional: !required.has(s.name) }));
    },
    maxSeqLen: (c) => c.maxSeqLen,
    layerCounts: (c) => [['num_hidden_layers', c.numLayers]],
    quantizesOnLoad: true,
    // A decoder embedder's Pooling module (Qwen3-Embedding: last token) is part of its config (DecoderConfig.pooling).
    sentenceTransformers: true,
    ...(v.defaultChatTemplate ? { defaultChatTemplate: v.defaultChatTemplate } : {}),
  });
}

function entry<C extends ModelConfig>(e: ArchitectureEntry<C>): ArchitectureEntry {
  return e as unknown as ArchitectureEntry;
}

const ENTRIES: readonly ArchitectureEntry[] = [
  ...(Object.keys(DECODER_VARIANTS) as DecoderArchitecture[]).map(decoderEntry),
  entry<Extract<ModelConfig, { architecture: 'tllm' }>>({
    name: 'tllm',
    family: 'gpt',
    hf: { modelTypes: ['tllm'] },
    engine: 'gpt',
    modelClass: 'Model',
    checkpointNames: () => (key) => key,
    tensors: (c) => tllmTensorSpecs(c).map((s) => ({ name: s.name, shape: s.shape, optional: false })),
    maxSeqLen: (c) => c.maxSeqLen,
    layerCounts: (c) => [['num_hidden_layers', c.numLayers]],
    tokenizerBesideWeights: true,
  }),
  entry<Extract<ModelConfig, { architecture: 'moondream' }>>({
    name: 'moondream',
    family: 'moondream',
    hf: { modelTypes: ['moondream1', 'moondream'], classPattern: /^HfMoondream$/ },
    engine: 'moondream',
    modelClass: 'MoondreamModel',
    checkpointNames: () => moondreamCheckpointName,
    tensors: (c) => moondreamTensorSpecs(c).map((s) => ({ name: s.name, shape: s.shape, optional: false })),
    maxSeqLen: (c) => c.text.maxSeqLen,
    layerCounts: (c) => [['text_layers', c.text.numLayers], ['vision_layers', c.vision.numLayers]],
    tokenizerBesideWeights: true,
  }),
  entry<Extract<ModelConfig, { architecture: 'bert' }>>({
    name: 'bert',
    family: 'bert',
    hf: { modelTypes: ['bert', 'xlm-roberta', 'nomic_bert'], classPattern: /^(Bert|XLMRoberta|NomicBert)/ },
    engine: 'bert',
    modelClass: 'Embedder',
    checkpointNames: () => bertCheckpointName,
    fusedParts: (c) => bertFusedParts(c),
    tensors: (c) => bertTensorSpecs(c),
    maxSeqLen: () => Infinity,
    layerCounts: (c) => [['num_hidden_layers', c.numLayers]],
    hfVocabulary: 'wordpiece',
    sentenceTransformers: true,
    ggufEncoder: true,
  }),
  entry<Extract<ModelConfig, { architecture: 'bert-classifier' }>>({
    name: 'bert-classifier',
    family: 'bert',
    hf: { modelTypes: [], classes: ['BertForSequenceClassification', 'XLMRobertaForSequenceClassification'] },
    engine: 'bert',
    modelClass: 'Reranker',
    checkpointNames: () => bertCheckpointName,
    hfTensorName: (c) => bertClassifierHfName(c),
    tensors: (c) => bertClassifierTensorSpecs(c),
    maxSeqLen: () => Infinity,
    layerCounts: (c) => [['num_hidden_layers', c.numLayers]],
    hfVocabulary: 'wordpiece',
    ggufEncoder: true,
  }),
  entry<ClipConfig>({
    name: 'clip',
    family: 'vit',
    hf: { modelTypes: [] },
    engine: 'vit',
    modelClass: 'VisionProjector',
    checkpointNames: () => (key) => key,
    tensors: (c) => clipTensorSpecs(c).map((s) => ({ ...s, optional: false })),
    maxSeqLen: () => Infinity,
    layerCounts: (c) => [['clip.vision.block_count', c.numLayers]],
  }),
];

export const ARCHITECTURES: ReadonlyMap<string, ArchitectureEntry> = new Map(ENTRIES.map((e) => [e.name, e]));

/** The entry of a config's architecture; undefined for 'unknown'. */
export function architectureOf(config: ModelConfig): ArchitectureEntry | undefined {
  return ARCHITECTURES.get(config.architecture);
}

/**
 * The class that wraps `config`'s engine: its entry's, except for a decoder with a retrieval
 * pooling (DecoderConfig.pooling: 'last' / 'mean' an Embedder, 'rank' a Reranker). undefined for 'unknown'.
 */
export function modelClassOf(config: ModelConfig): ModelClassName | undefined {
  const e = architectureOf(config);
  if (e?.family === 'decoder') {
    const pooling = (config as DecoderConfig).pooling;
    if (pooling === 'rank') return 'Reranker';
    if (pooling !== undefined) return 'Embedder';
  }
  return e?.modelClass;
}

/** What a reranker config runs as: a cross-encoder (a BERT head), a yes/no reranker (a decoder family's, DecoderRetrieval), or neither. */
export function rerankerKindOf(config: ModelConfig, asked?: 'cross-encoder' | 'yes-no'): 'cross-encoder' | 'yes-no' | undefined {
  const e = architectureOf(config);
  if (!e) return undefined;
  if (e.family === 'bert') return modelClassOf(config) === 'Reranker' && asked !== 'yes-no' ? 'cross-encoder' : undefined;
  const yesNo = e.family === 'decoder' && DECODER_VARIANTS[(config as DecoderConfig).architecture].retrieval !== undefined;
  return yesNo && (asked === 'yes-no' || (asked === undefined && modelClassOf(config) === 'Reranker')) ? 'yes-no' : undefined;
}

/** The retrieval formats of a decoder config's family (Qwen3's), if it has them. */
export function retrievalOf(config: ModelConfig): DecoderRetrieval | undefined {
  return architectureOf(config)?.family === 'decoder' ? DECODER_VARIANTS[(config as DecoderConfig).architecture].retrieval : undefined;
}

/** Which architecture an HF config.json describes: a head class (`hf.classes`), else model_type, else its `architectures` classes. */
export function architectureOfHf(modelType: string | undefined, classes: readonly string[]): ArchitectureEntry | undefined {
  const head = ENTRIES.find((e) => e.hf.classes?.some((c) => classes.includes(c)));
  if (head) return head;
  if (modelType !== undefined) return ENTRIES.find((e) => e.hf.modelTypes.includes(modelType));
  return ENTRIES.find((e) => e.hf.classPattern !== undefined && classes.some((c) => e.hf.classPattern!.test(c)));
}
