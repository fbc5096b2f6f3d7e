/**
 * loadModel(path): a text-generation model from any weight format weightmap reads, with its
 * tokenizer and chat template, over the engine of its architecture.
 *
 *   const model = await loadModel('qwen3-0.6b.ajc1');
 *   for await (const piece of model.generate('Once upon a time', { maxTokens: 64, temperature: 0.7 })) process.stdout.write(piece.text);
 *   const reply = await model.chat([{ role: 'user', content: 'Hi!' }], { enableThinking: false }).text();
 *   model.dispose();
 *
 * The engine and the model class come from the architecture registry (lib/architectures): the
 * decoder variants → the decoder engine; tllm → gpt; moondream → phi + vit (MoondreamModel).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { architectureOf, type EngineName, type ModelClassName } from '../architectures';
import { DECODER_QUANTS, KV_CACHE_TYPES, type BuiltinChatTemplate, type DecoderQuant, type KvCacheType } from '../architectures/decoder';
import { ajc1ChatTemplate, jinjaChatTemplate, qwen3ChatTemplate, type Ajc1TemplateTexts, type ChatTemplate } from '../generation/chat';
import { DecoderEngine } from '../engines/decoder';
import { defaultContextLength } from '../engines/kv-session';
import type { MoondreamEngine } from '../engines/moondream';
import { rangeError, UnsupportedError, WeightFormatError } from '../base/errors';
import { readWeights } from '../formats';
import { idsOnlyTokenizer } from './ids-tokenizer';
import { Model, type LanguageEngine, type ModelInfo } from './language-model';
import { lazy } from '../base/lazy';
import { native } from '../addon/native';
import type { PipelineSpec } from '../pipeline/coordinator';
import type { Tokenizer } from '../tokenizers';
import { modelFolder, resolveTokenizer } from '../tokenizer-loading/resolve';
import { prefetchWeightsTokenizer } from '../tokenizer-loading/prefetch';
import { closeWeights, type FormatName, type ModelWeights } from '../addon/weights';

export { Model } from './language-model';
export type { ChatOptions, ChatPrompt, KvCacheUsage, ModelInfo } from './language-model';

/** Options of `loadModel()` and `loadMoondream()`. */
export interface LoadModelOptions {
  /** A tokenizer file or folder, or a Tokenizer, instead of the one found with the weights. */
  tokenizer?: string | Tokenizer;
  /** Engine threads (the calling thread counts); default: the physical cores. */
  threads?: number;
  /**
   * Positions each session (KV cache) holds: a number up to the model's maximum (a larger one is a
   * RangeError), or 'max' for the model's maximum. Default: min(the model's maximum, 4096).
   */
  contextLength?: number | 'max';
  /**
   * Decoder models: 'none' (default) uses the weights as stored; 'q8_0' quantizes float matrices at
   * load (faster, approximate); 'f32' dequantizes everything (exact, slower).
   */
  quant?: DecoderQuant;
  /**
   * Decoder models: the element type of each session's KV cache. 'f16' halves the bytes per
   * position and per decoded token against 'f32' (exact); 'q8_0' is smaller still and least exact.
   * Default: 'f16' for Q8_0 and GGUF-quantized weights, else 'f32' (SessionOptions.kvCache in
   * lib/engines/decoder.ts).
   */
  kvCache?: KvCacheType;
  /** Input format (default: detected). */
  format?: FormatName;
  /**
   * Run a sepweight tree's layers on pipeline stages (`weightmap stage`, which take their own
   * threads and quant) instead of here: [{ layers: '0-13', address: 'host:port' | [replicas] }, ...]
   * (see lib/pipeline/coordinator.ts).
   */
  pipeline?: PipelineSpec;
  /**
   * A llama.cpp mmproj GGUF (the vision encoder and projector) for this language model: the model
   * is then a VisionModel, whose chat() takes image parts in message content.
   */
  mmproj?: string;
}

type LanguageEngineName = Exclude<EngineName, 'bert' | 'vit'>;

/** The engines of loadModel by registry name; each is a LanguageEngine (Moondream's kept whole for its vision side). */
const LANGUAGE_ENGINES: Record<LanguageEngineName, (weights: ModelWeights, options: LoadModelOptions) => Promise<LanguageEngine>> = {
  decoder: async (weights, options) => {
    const engine = await DecoderEngine.load(weights, { threads: options.threads, ...(options.quant ? { quant: options.quant } : {}) });
    // Concurrent generations decode together: their one-token steps run as batched steps.
    return {
      vocabSize: engine.vocabSize,
      threads: engine.threads,
      isa: engine.isa,
      createSession: (contextLength) => engine.createSession({ contextLength, batched: true, ...(options.kvCache ? { kvCache: options.kvCache } : {}) }),
      onBatchStep: (listener) => engine.onBatchStep(listener),
      dispose: () => engine.dispose(),
    };
  },
  gpt: async (weights, options) => (await import('../engines/gpt')).GptEngine.load(weights, { threads: options.threads }),
  moondream: async (weights, options) => (await import('../engines/moondream')).MoondreamEngine.load(weights, { threads: options.threads }),
};

// Loaded for a Moondream model only (a decoder's first token does not compile the vision side).
const moondreamModel = lazy(() => (require('./moondream-model') as typeof import('./moondream-model')).MoondreamModel);

/** The model classes of loadModel by registry name, over the engine the registry pairs them with. */
const MODEL_CLASSES = {
  Model: (engine: LanguageEngine, ...rest: ModelRest) => new Model(engine, ...rest),
  MoondreamModel: (engine: LanguageEngine, ...rest: ModelRest) => new (moondreamModel())(engine as MoondreamEngine, ...rest),
};

/** The TS chat templates a registry entry names as its default. */
const BUILTIN_CHAT_TEMPLATES: Record<BuiltinChatTemplate, ChatTemplate> = { qwen3: qwen3ChatTemplate };

/** What to load instead, for the registry's model classes that loadModel does not make. */
const OTHER_LOADERS: Record<Exclude<ModelClassName, keyof typeof MODEL_CLASSES>, string> = {
  Embedder: 'is a BERT embedding model: load it with loadEmbedder() (command line: weightmap embed)',
  Reranker: 'is a cross-encoder: load it with loadReranker()',
  VisionProjector: "is a vision encoder and projector (an mmproj GGUF): load its language model with it, loadModel(languageModel, { mmproj })",
};

type ModelRest = ConstructorParameters<typeof Model> extends [unknown, ...infer R] ? R : never;

async function loadEngine(weights: ModelWeights, options: LoadModelOptions): Promise<LanguageEngine> {
  if (options.pipeline) return (await import('../pipeline/coordinator')).PipelineEngine.connect(weights, options.pipeline);
  const arch = architectureOf(weights.config);
  if (!arch) throw new UnsupportedError(`${weights.path}: no text-generation engine for architecture '${weights.config.architecture}'`);
  if (!(arch.modelClass in MODEL_CLASSES)) throw new UnsupportedError(`${weights.path} ${OTHER_LOADERS[arch.modelClass as keyof typeof OTHER_LOADERS]}`);
  if (!arch.quantizesOnLoad && options.quant !== undefined && options.quant !== 'none') throw new UnsupportedError(`the ${arch.name} engine has no quant option`);
  return LANGUAGE_ENGINES[arch.engine as LanguageEngineName](weights, options);
}

function readJsonIfPresent(path: string): any {
  if (!fs.existsSync(path)) return undefined;
  try {
    return JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (error) {
    throw new WeightFormatError('BAD_HEADER', `not valid JSON: ${(error as Error).message}`, { path });
  }
}

function tokenText(value: unknown): string | undefined {
  if (typeof value === 'string') return value;
  if (value && typeof value === 'object' && typeof (value as { content?: unknown }).content === 'string') return (value as { content: string }).content;
  return undefined;
}

/**
 * The chat template: the model's own Jinja template (tokenizer_config.json beside the tokenizer the
 * caller named or beside the model, or GGUF metadata), else qwen3.c's .template files, else Qwen3's
 * for a qwen3 model; undefined otherwise.
 */
function resolveChatTemplate(weights: ModelWeights, folders: string[], tokenizer: Tokenizer): ChatTemplate | undefined {
  let config: any;
  for (const folder of folders) {
    config = readJsonIfPresent(nodePath.join(folder, 'tokenizer_config.json'));
    if (config !== undefined) break;
  }
  let source: unknown = config?.chat_template;
  if (Array.isArray(source)) source = source.find((t) => t?.name === 'default')?.template ?? source[0]?.template;
  const tokens = {
    bosToken: tokenText(config?.bos_token) ?? (tokenizer.specialIds.bos !== undefined ? tokenizer.idToToken(tokenizer.specialIds.bos) : undefined),
    eosToken: tokenText(config?.eos_token) ?? (tokenizer.specialIds.eos !== undefined ? tokenizer.idToToken(tokenizer.specialIds.eos) : undefined),
  };
  if (typeof source !== 'string' && typeof weights.metadata['tokenizer.chat_template'] === 'string') {
    source = weights.metadata['tokenizer.chat_template'];
  }
  if (typeof source === 'string' && source.length > 0) return jinjaChatTemplate(source, tokens);
  const templates = weights.metadata.templates as Ajc1TemplateTexts | undefined;
  if (templates && typeof templates === 'object' && templates.default !== undefined) return ajc1ChatTemplate(templates);
  const builtin = architectureOf(weights.config)?.defaultChatTemplate;
  return builtin === undefined ? undefined : BUILTIN_CHAT_TEMPLATES[builtin];
}

function checkLoadOptions(options: LoadModelOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
  const { threads, contextLength } = options;
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 0 && threads <= 1024)) {
    throw rangeError(`threads must be an integer in [0, 1024] (0 = physical cores), got ${threads}`);
  }
  if (contextLength !== undefined && contextLength !== 'max' && !(Number.isInteger(contextLength) && contextLength >= 1)) {
    throw rangeError(`contextLength must be an integer >= 1 or 'max', got ${String(contextLength)}`);
  }
  if (options.mmproj !== undefined && (typeof options.mmproj !== 'string' || options.mmproj === '')) throw new TypeError('mmproj must be the path of an mmproj GGUF');
  if (options.quant !== undefined && !DECODER_QUANTS.includes(options.quant)) {
    throw rangeError(`quant must be one of ${DECODER_QUANTS.join(', ')}, got ${String(options.quant)}`);
  }
  if (options.kvCache !== undefined && !KV_CACHE_TYPES.includes(options.kvCache)) {
    throw rangeError(`kvCache must be one of ${KV_CACHE_TYPES.join(', ')}, got ${String(options.kvCache)}`);
  }
}

/**
 * Whether the ids a tokenizer has past the model's logits are only special tokens (or unused), a
 * few at most: Gemma 3's tokenizer.json puts <image_soft_token> at 262144, one past the text
 * model's 262144 logits. The model can neither produce them nor be fed them (checkTokenIds).
 */
function onlyControlTokensPast(tokenizer: Tokenizer, logits: number): boolean {
  if (tokenizer.vocabSize - logits > 1024) return false;
  for (let id = logits; id < tokenizer.vocabSize; id++) if (tokenizer.idToToken(id) !== undefined && !tokenizer.isSpecial(id)) return false;
  return true;
}

/** The positions a session holds: as asked, the model's maximum for 'max', else the default. */
function resolveContextLength(asked: number | 'max' | undefined, maxContext: number): number {
  if (asked === undefined || (asked === 'max' && !Number.isFinite(maxContext))) return defaultContextLength(maxContext);
  if (asked === 'max') return maxContext;
  if (asked > maxContext) throw rangeError(`contextLength ${asked} exceeds this model's maximum ${maxContext}; pass ${maxContext} or 'max'`);
  return asked;
}

const visionModel = lazy(() => (require('./vision-model') as typeof import('./vision-model')).VisionModel);

/** The language model and its mmproj (options.mmproj) as a VisionModel; the mmproj's width must be the model's. */
async function withVision(options: LoadModelOptions, engine: LanguageEngine, ...rest: ModelRest): Promise<Model> {
  const weights = rest[0];
  const arch = architectureOf(weights.config);
  if (options.pipeline || arch?.modelClass !== 'Model') throw new UnsupportedError(`${weights.path}: an mmproj goes with a language model loaded whole, not a ${weights.config.architecture} model${options.pipeline ? ' on pipeline stages' : ''}`);
  const mm = await readWeights(options.mmproj!);
  try {
    if (architectureOf(mm.config)?.modelClass !== 'VisionProjector') throw new UnsupportedError(`${mm.path} is not an mmproj GGUF (its architecture is ${mm.config.architecture})`);
    const width = (weights.config as { hiddenSize?: number }).hiddenSize;
    const projected = (mm.config as { projectionDim: number }).projectionDim;
    if (width !== projected) {
      throw new WeightFormatError('CONFIG_MISMATCH', 'the mmproj projects to another width than the language model has', { path: mm.path, expected: width, found: projected });
    }
    const { VisionEngine } = await import('../engines/vision');
    const vision = await VisionEngine.load(mm, { threads: options.threads });
    return new (visionModel())(engine, vision, mm, ...rest);
  } catch (error) {
    closeWeights(mm);
    throw error;
  }
}

/** Reads the weights at `path` (format found by its bytes), binds them to their engine, finds the tokenizer. */
export async function loadModel(path: string, options: LoadModelOptions = {}): Promise<Model> {
  if (typeof path !== 'string') throw new TypeError('loadModel(path): path must be a string');
  if (path === '') throw Object.assign(new TypeError('loadModel(path): path is an empty string; pass a weight file or folder'), { code: 'ERR_INVALID_ARG_VALUE' });
  checkLoadOptions(options);
  const started = Date.now();
  // A tokenizer the caller names replaces the vocabulary sidecars: they are not even read.
  const readOptions = {
    ...(options.format ? { format: options.format } : {}),
    ...(options.tokenizer !== undefined ? { vocabulary: false } : {}),
    ...(options.pipeline ? (await import('../pipeline/stage-files')).COORDINATOR_READ : {}),
    // The engine reads every weight in place: mapping them starts while the header is parsed.
    ...(!options.pipeline && (options.quant ?? 'none') === 'none' ? { prefaultWeights: true } : {}),
  };
  // The cached tokenizer is read off this thread while this thread reads the weights.
  const prefetch = options.tokenizer === undefined && !options.pipeline ? prefetchWeightsTokenizer(path) : undefined;
  const weights = await readWeights(path, readOptions);
  let engine: LanguageEngine | undefined;
  try {
    const folder = modelFolder(path);
    // Checked before the engine loads (which takes a while on a large model).
    const maxContext = architectureOf(weights.config)?.maxSeqLen(weights.config) ?? Infinity;
    const contextLength = resolveContextLength(options.contextLength, maxContext);
    // The tokenizer loads (in its worker) while the engine binds the weights.
    const loadingTokenizer = resolveTokenizer(weights, options.tokenizer, prefetch);
    loadingTokenizer.catch(() => undefined); // awaited below, unless the engine fails first
    engine = await loadEngine(weights, options);
    const tokenizer = (await loadingTokenizer) ?? idsOnlyTokenizer(engine.vocabSize, weights.path);
    if (tokenizer.vocabSize > engine.vocabSize && !onlyControlTokensPast(tokenizer, engine.vocabSize)) {
      throw new WeightFormatError('CONFIG_MISMATCH', 'the tokenizer has more tokens than the model has logits', {
        path: weights.path,
        expected: `<= ${engine.vocabSize}`,
        found: tokenizer.vocabSize,
      });
    }
    const templateFolders = typeof options.tokenizer === 'string' ? [modelFolder(options.tokenizer), folder] : [folder];
    const chatTemplate = resolveChatTemplate(weights, templateFolders, tokenizer);
    const info: ModelInfo = {
      path: weights.path,
      format: weights.format,
      architecture: weights.config.architecture,
      threads: engine.threads,
      isa: engine.isa ?? native().kernels.isa(),
      contextLength,
      maxContextLength: Number.isFinite(maxContext) ? maxContext : contextLength,
      loadMs: Date.now() - started,
    };
    const modelClass = options.pipeline ? 'Model' : architectureOf(weights.config)!.modelClass;
    if (options.mmproj !== undefined) return await withVision(options, engine, weights, tokenizer, chatTemplate, contextLength, info);
    return MODEL_CLASSES[modelClass as keyof typeof MODEL_CLASSES](engine, weights, tokenizer, chatTemplate, contextLength, info);
  } catch (error) {
    engine?.dispose();
    closeWeights(weights);
    throw error;
  }
}
