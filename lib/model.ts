/**
 * loadModel(path): a text-generation model from any weight format weightmap reads, with its
 * tokenizer and chat template, over the engine of its architecture.
 *
 *   const model = await loadModel('qwen3-0.6b.ajc1');
 *   for await (const piece of model.generate('Once upon a time', { maxTokens: 64, temperature: 0.7 })) process.stdout.write(piece.text);
 *   const reply = await model.chat([{ role: 'user', content: 'Hi!' }], { enableThinking: false }).text();
 *   model.dispose();
 *
 * Engines: llama and qwen3 → the decoder engine; tllm → gpt; moondream → phi (text only).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import {
  ajc1ChatTemplate,
  checkMessages,
  jinjaChatTemplate,
  qwen3ChatTemplate,
  type Ajc1TemplateTexts,
  type ChatMessage,
  type ChatRenderOptions,
  type ChatTemplate,
} from './chat';
import { ChatSession, type ChatSessionOptions } from './chat-session';
import { DecoderEngine } from './engines/decoder';
import { GptEngine } from './engines/gpt';
import { MoondreamEngine } from './engines/moondream';
import { DisposedError, rangeError, UnsupportedError, WeightFormatError } from './errors';
import { readWeights } from './formats';
import { checkTokenIds, startGeneration, type GenerateOptions, type Generation, type LanguageSession } from './generate';
import { idsOnlyTokenizer } from './ids-tokenizer';
import { native } from './native';
import type { PipelineSpec } from './pipeline/coordinator';
import { SessionPool } from './session-pool';
import { encodeAsync, loadTokenizer, loadWeightsTokenizer, WORKER_MIN_CHARS, type EncodeOptions, type Tokenizer } from './tokenizers';
import { deferredGeneration } from './deferred-generation';
import { closeWeights, type FormatName, type ModelConfig, type ModelWeights } from './weights';

export interface LoadModelOptions {
  /** A tokenizer file or folder, or a Tokenizer, instead of the one found with the weights. */
  tokenizer?: string | Tokenizer;
  /** Engine threads (the calling thread counts); default: the physical cores. */
  threads?: number;
  /** Positions each session (KV cache) holds; default min(the model's maximum, 4096). */
  contextLength?: number;
  /**
   * Decoder models: 'none' (default) uses the weights as stored; 'q8_0' quantizes float matrices at
   * load (faster, approximate); 'f32' dequantizes everything (exact, slower).
   */
  quant?: 'none' | 'q8_0' | 'f32';
  /**
   * Decoder models: the element type of each session's KV cache. 'f16' halves the bytes per
   * position and per decoded token against 'f32' (exact); 'q8_0' is smaller still and least exact.
   * Default: 'f16' for Q8_0 and GGUF-quantized weights, else 'f32' (SessionOptions.kvCache in
   * lib/engines/decoder.ts).
   */
  kvCache?: 'f16' | 'f32' | 'q8_0';
  /** Input format (default: detected). */
  format?: FormatName;
  /**
   * Run a sepweight tree's layers on pipeline stages (`weightmap stage`, which take their own
   * threads and quant) instead of here: [{ layers: '0-13', address: 'host:port' | [replicas] }, ...]
   * (see lib/pipeline/coordinator.ts).
   */
  pipeline?: PipelineSpec;
}

export interface ChatOptions extends GenerateOptions, ChatRenderOptions {}

export interface ModelInfo {
  path: string;
  format: FormatName;
  architecture: string;
  threads: number;
  /** The kernel set in use ("avx2", "avx512", ...). */
  isa: string;
  contextLength: number;
  loadMs: number;
}

/** What Model needs from an engine (lib/engines/*). */
interface LanguageEngine {
  readonly vocabSize: number;
  readonly threads: number;
  /** The kernel set the engine runs, when it says. */
  readonly isa?: string;
  createSession(contextLength: number): LanguageSession;
  dispose(): void;
}

const DEFAULT_CONTEXT = 4096;

export class Model {
  /** Stop tokens of plain generation: the model's EOS and BOS ids. */
  readonly stopTokens: readonly number[];
  private readonly pool: SessionPool;
  private closed = false;

  constructor(
    private readonly engine: LanguageEngine,
    private readonly weights: ModelWeights,
    readonly tokenizer: Tokenizer,
    /** undefined: chat() is not available. */
    readonly chatTemplate: ChatTemplate | undefined,
    readonly contextLength: number,
    readonly info: ModelInfo,
  ) {
    this.pool = new SessionPool(() => engine.createSession(contextLength));
    const stops = new Set<number>();
    const config = weights.config as { bosTokenId?: number; eosTokenIds?: number[]; text?: { bosTokenId: number; eosTokenId: number } };
    for (const id of [config.bosTokenId, ...(config.eosTokenIds ?? []), config.text?.bosTokenId, config.text?.eosTokenId,
      tokenizer.specialIds.bos, tokenizer.specialIds.eos]) {
      if (id !== undefined && id >= 0 && id < engine.vocabSize) stops.add(id);
    }
    this.stopTokens = [...stops].sort((a, b) => a - b);
  }

  get config(): ModelConfig {
    return this.weights.config;
  }

  get vocabSize(): number {
    return this.engine.vocabSize;
  }

  get disposed(): boolean {
    return this.closed;
  }

  /** Sessions (KV caches) in use and kept idle for reuse; idle ones are bounded (least recently used dropped). */
  get sessions(): { busy: number; idle: number } {
    return this.pool.size;
  }

  /** Token ids of `text` (with the tokenizer's BOS where the model expects one). */
  encode(text: string): number[] {
    return this.tokenizer.encode(text);
  }

  /** encode() off the JS thread for long texts (the tokenizer worker; see tokenizers/worker-client.ts). */
  async encodeAsync(text: string, options?: EncodeOptions): Promise<number[]> {
    this.live();
    return (await encodeAsync(this.tokenizer, [text], options))[0];
  }

  /** The logits [V] after the last of `ids`, all fed as one prefill from position 0. */
  async logits(ids: ArrayLike<number>, options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    const input = this.checkIds(ids);
    if (input.length === 0) throw rangeError('logits: no token ids');
    if (input.length > this.contextLength) throw rangeError(`logits: ${input.length} ids exceed the context length ${this.contextLength}`);
    const lease = this.pool.acquire([]);
    try {
      if (lease.session.position > 0) lease.session.truncate(0);
      return await lease.session.eval(input, options);
    } finally {
      lease.release();
    }
  }

  /**
   * Generates after a prompt (text, encoded with the tokenizer's BOS where the model expects one,
   * or token ids). Iterate the result for { token, text } pieces, or `await gen.text()`.
   */
  generate(prompt: string | ArrayLike<number>, options: GenerateOptions = {}): Generation {
    this.live();
    const start = (ids: number[]) => startGeneration(this.host(), ids, { ...options, stopTokens: options.stopTokens ?? this.stopTokens });
    return typeof prompt === 'string' ? this.startOnText(prompt, undefined, start) : start(this.checkIds(prompt));
  }

  /** The prompt text of a conversation, ending with the opening of the assistant's turn. */
  renderChat(messages: readonly ChatMessage[], options: ChatRenderOptions = {}): string {
    if (!this.chatTemplate) {
      throw new UnsupportedError(`${this.info.path} has no chat template (tokenizer_config.json chat_template, GGUF tokenizer.chat_template or ajc1 .template)`);
    }
    return this.chatTemplate.render(messages, options);
  }

  /**
   * The assistant's reply to `messages`. Sessions keep their caches: the next turn (the same
   * messages plus the reply and a new user message) feeds only what follows the shared prefix.
   */
  chat(messages: readonly ChatMessage[], options: ChatOptions = {}): Generation {
    this.live();
    checkMessages(messages);
    const text = this.renderChat(messages, options);
    // Templates write their own special tokens (BOS included) as text.
    const stops = new Set(options.stopTokens ?? this.stopTokens);
    for (const t of this.chatTemplate!.stopTokenTexts) {
      const id = this.tokenizer.tokenToId(t);
      if (id !== undefined) stops.add(id);
    }
    const stopStrings = [...this.chatTemplate!.stopStrings, ...(options.stop === undefined ? [] : typeof options.stop === 'string' ? [options.stop] : options.stop)];
    const start = (ids: number[]) => startGeneration(this.host(), ids, { ...options, stopTokens: [...stops], stop: stopStrings });
    return this.startOnText(text, { addSpecialTokens: false }, start);
  }

  /** A conversation that remembers its messages: `await session.prompt('Hi!')`. */
  createChatSession(options: ChatSessionOptions = {}): ChatSession {
    this.live();
    if (!this.chatTemplate) this.renderChat([]); // throws the UnsupportedError
    return new ChatSession(this, options);
  }

  /** Releases the engine and the mapped weights; running generations are aborted. */
  dispose(): void {
    if (this.closed) return;
    this.closed = true;
    this.pool.dispose();
    this.engine.dispose();
    closeWeights(this.weights);
  }

  [Symbol.dispose](): void {
    this.dispose();
  }

  async [Symbol.asyncDispose](): Promise<void> {
    this.dispose();
  }

  /**
   * start(the ids of `text`): encoded here, or for a long text in the tokenizer worker, the
   * generation then starting when they come (so its errors come from the first next()).
   */
  private startOnText(text: string, options: EncodeOptions | undefined, start: (ids: number[]) => Generation): Generation {
    if (text.length >= WORKER_MIN_CHARS) return deferredGeneration(this.encodeAsync(text, options), start);
    return start(this.tokenizer.encode(text, options));
  }

  private host() {
    return {
      tokenizer: this.tokenizer,
      contextLength: this.contextLength,
      vocabSize: this.engine.vocabSize,
      acquire: (ids: readonly number[]) => this.pool.acquire(ids),
    };
  }

  private checkIds(ids: ArrayLike<number>): number[] {
    this.live();
    if (typeof ids !== 'object' || ids === null || typeof ids.length !== 'number') throw new TypeError('expected a prompt string or an array of token ids');
    return checkTokenIds(ids, this.engine.vocabSize);
  }

  private live(): void {
    if (this.closed) throw new DisposedError('Model');
  }
}

async function loadEngine(weights: ModelWeights, options: LoadModelOptions): Promise<LanguageEngine> {
  if (options.pipeline) return (await import('./pipeline/coordinator')).PipelineEngine.connect(weights, options.pipeline);
  const arch = weights.config.architecture;
  switch (arch) {
    case 'llama':
    case 'qwen2':
    case 'qwen3':
    case 'mistral':
    case 'gemma3': {
      const engine = await DecoderEngine.load(weights, { threads: options.threads, ...(options.quant ? { quant: options.quant } : {}) });
      // Concurrent generations decode together: their one-token steps run as batched steps.
      return {
        vocabSize: engine.vocabSize,
        threads: engine.threads,
        isa: engine.isa,
        createSession: (contextLength) => engine.createSession({ contextLength, batched: true, ...(options.kvCache ? { kvCache: options.kvCache } : {}) }),
        dispose: () => engine.dispose(),
      };
    }
    case 'tllm':
    case 'moondream': {
      if (options.quant !== undefined && options.quant !== 'none') throw new UnsupportedError(`the ${arch} engine has no quant option`);
      // Both engines are LanguageEngines as they are (Moondream's is kept whole for its vision side).
      return arch === 'tllm' ? GptEngine.load(weights, { threads: options.threads }) : MoondreamEngine.load(weights, { threads: options.threads });
    }
    case 'bert':
      throw new UnsupportedError(`${weights.path} is a BERT embedding model: load it with loadEmbedder() (command line: weightmap embed)`);
    default:
      throw new UnsupportedError(`${weights.path}: no text-generation engine for architecture '${arch}'`);
  }
}

/** Positions a text-generation model can hold (max_sequence_length); Infinity where no engine runs it (loadEngine says why). */
function maxSequenceLength(config: ModelConfig): number {
  switch (config.architecture) {
    case 'llama':
    case 'qwen3':
    case 'mistral':
    case 'gemma3':
    case 'tllm':
      return config.maxSeqLen;
    case 'moondream':
      return config.text.maxSeqLen;
    default:
      return Infinity;
  }
}

/** The folder a model lives in: the path itself for a folder, else its parent. */
function modelFolder(path: string): string {
  return fs.statSync(path).isDirectory() ? path : nodePath.dirname(path);
}

function readJsonIfPresent(path: string): any {
  if (!fs.existsSync(path)) return undefined;
  try {
    return JSON.parse(fs.readFileSync(path, 'utf8'));
  } catch (error) {
    throw new WeightFormatError('BAD_HEADER', `not valid JSON: ${(error as Error).message}`, { path });
  }
}

/**
 * The tokenizer: the caller's; else a tokenizer.json or vocab.json + merges.txt beside the model;
 * else the one inside or beside the weights (ajc1 .tokenizer, llama2.c tokenizer.bin, GGUF vocab,
 * the one a sepweight config.json names); else undefined: the model has no vocabulary and runs on
 * token ids (an ids-only tokenizer; text raises NoTokenizerError).
 */
async function resolveTokenizer(weights: ModelWeights, folder: string, given: LoadModelOptions['tokenizer']): Promise<Tokenizer | undefined> {
  if (given !== undefined) {
    if (typeof given === 'string') return loadTokenizer(given);
    if (typeof given === 'object' && given !== null && typeof given.encode === 'function') return given;
    throw new TypeError('tokenizer must be a path or a Tokenizer');
  }
  const at = (name: string) => nodePath.join(folder, name);
  if (fs.existsSync(at('tokenizer.json'))) return loadTokenizer(at('tokenizer.json'));
  if (fs.existsSync(at('vocab.json')) && fs.existsSync(at('merges.txt'))) return loadTokenizer(folder);
  if (weights.tokenizer) return loadWeightsTokenizer(weights, weights.tokenizer);
  // An HF folder weightmap wrote for a SentencePiece vocabulary holds llama2.c's tokenizer.bin.
  if (weights.format === 'safetensors' && fs.existsSync(at('tokenizer.bin'))) return loadTokenizer(at('tokenizer.bin'));
  if (weights.config.architecture === 'tllm' && fs.existsSync(at('vocab.txt')) && fs.existsSync(at('merges.txt'))) return loadTokenizer(folder);
  // No vocabulary (MOON and TLLM files carry none, FORMATS.md §1.6, §2): the model runs on token
  // ids; text raises NoTokenizerError.
  return undefined;
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
  if (weights.config.architecture === 'qwen3') return qwen3ChatTemplate;
  return undefined;
}

function checkLoadOptions(options: LoadModelOptions): void {
  if (typeof options !== 'object' || options === null) throw new TypeError('options must be an object');
  const { threads, contextLength } = options;
  if (threads !== undefined && !(Number.isInteger(threads) && threads >= 0 && threads <= 1024)) {
    throw rangeError(`threads must be an integer in [0, 1024] (0 = physical cores), got ${threads}`);
  }
  if (contextLength !== undefined && !(Number.isInteger(contextLength) && contextLength >= 1)) {
    throw rangeError(`contextLength must be an integer >= 1, got ${contextLength}`);
  }
  if (options.quant !== undefined && !['none', 'q8_0', 'f32'].includes(options.quant)) {
    throw rangeError(`quant must be 'none', 'q8_0' or 'f32', got ${String(options.quant)}`);
  }
  if (options.kvCache !== undefined && !['f16', 'f32', 'q8_0'].includes(options.kvCache)) {
    throw rangeError(`kvCache must be 'f16', 'f32' or 'q8_0', got ${String(options.kvCache)}`);
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
    ...(options.pipeline ? (await import('./pipeline/stage-files')).COORDINATOR_READ : {}),
  };
  const weights = await readWeights(path, readOptions);
  let engine: LanguageEngine | undefined;
  try {
    const folder = modelFolder(path);
    // Checked before the engine loads (which takes a while on a large model).
    const maxContext = maxSequenceLength(weights.config);
    const contextLength = options.contextLength ?? Math.min(maxContext, DEFAULT_CONTEXT);
    if (contextLength > maxContext) throw rangeError(`contextLength ${contextLength} exceeds this model's maximum ${maxContext}`);
    // The tokenizer loads (in its worker) while the engine binds the weights.
    const loadingTokenizer = resolveTokenizer(weights, folder, options.tokenizer);
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
      loadMs: Date.now() - started,
    };
    if (engine instanceof MoondreamEngine) {
      // Loaded here, not imported above: lib/moondream.ts extends Model.
      // eslint-disable-next-line @typescript-eslint/no-require-imports
      const { MoondreamModel } = require('./moondream') as typeof import('./moondream');
      return new MoondreamModel(engine, weights, tokenizer, chatTemplate, contextLength, info);
    }
    return new Model(engine, weights, tokenizer, chatTemplate, contextLength, info);
  } catch (error) {
    engine?.dispose();
    closeWeights(weights);
    throw error;
  }
}
