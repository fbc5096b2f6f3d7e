/**
 * Model: a text-generation model bound to its engine, with its tokenizer and chat template
 * (loadModel in lib/models/model.ts makes one). generate(), chat(), logits(), sessions from a pool
 * that keeps KV caches for reuse.
 */
import {
  checkMessages,
  type ChatMessage,
  type ChatRenderOptions,
  type ChatTemplate,
} from '../generation/chat';
import { encodeChatPrompt } from './chat-prompt';
import type { ToolCallFormat } from '../tools/formats';
import type { ToolChatLoopOptions, ToolChatResult } from './tool-agent';
import type { ToolChatOptions } from '../tools/tool-prompt';
import type { ChatOptions, ChatSession, ChatSessionOptions } from './chat-session';
import { deferredGeneration } from '../generation/deferred-generation';
import { isHarmonyTemplate } from '../generation/harmony';
import { DisposedError, rangeError, UnsupportedError } from '../base/errors';
import { checkTokenIds, startGeneration, type Generation, type GenerateOptions, type LanguageSession, type ToolCallConstraint } from '../generation/generate';
import { SessionPool } from '../generation/session-pool';
import type { DraftSource, DraftTarget } from '../generation/speculative';
import { checkSameVocabulary, modelDrafter } from './draft-model';
import type { EncodeOptions, Tokenizer } from '../tokenizers';
import { encodeAsync, WORKER_MIN_CHARS } from '../tokenizer-loading';
import { closeWeights, type FormatName, type ModelWeights } from '../addon/weights';
import type { ModelConfig } from '../architectures/model-config';

export type { ChatOptions } from './chat-session';

/** A conversation's prompt as Model.chatPrompt encodes it, for Model.chat. */
export interface ChatPrompt {
  readonly ids: readonly number[];
  /** With tools: how the model writes a call (parse the reply with lib/tools parseToolCalls) and the constraint chat() applies. */
  readonly tools?: { readonly format: ToolCallFormat; readonly constraint: ToolCallConstraint | undefined };
}

/** What a loaded model is and how it runs (`model.info`). */
export interface ModelInfo {
  /** The weight file or folder it was loaded from. */
  path: string;
  format: FormatName;
  /** The architecture name of its config ("qwen3", "llama", "moondream", ...). */
  architecture: string;
  /** Engine threads (the calling thread counts). */
  threads: number;
  /** The kernel set in use ("avx2", "avx512", ...). */
  isa: string;
  /** Positions each session holds (LoadModelOptions.contextLength). */
  contextLength: number;
  /** The most positions this model's architecture and config allow. */
  maxContextLength: number;
  /** Milliseconds from loadModel's call to the model being ready. */
  loadMs: number;
}

/** What Model needs from an engine (lib/engines/*). */
export interface LanguageEngine {
  readonly vocabSize: number;
  readonly threads: number;
  /** The kernel set the engine runs, when it says. */
  readonly isa?: string;
  createSession(contextLength: number): LanguageSession;
  /** Engines that batch concurrent decode steps: calls `listener` with each batched step's row count; returns the unsubscribe. */
  onBatchStep?(listener: (rows: number) => void): () => void;
  dispose(): void;
}

/** The KV caches of a model's sessions, in bytes (KvCacheUsage of SessionPool). */
export interface KvCacheUsage {
  /** Allocated now by the sessions generations are using. */
  busyBytes: number;
  /** Allocated now by the idle sessions kept for prefix reuse. */
  idleBytes: number;
  /** One session's cache at its full context; 0 until a session has been made (or when the engine does not say). */
  sessionBytes: number;
}

/** A loaded text-generation model (`loadModel()`): generate, chat, logits, over a pool of sessions whose KV caches are kept between calls. */
export class Model {
  /** Stop tokens of plain generation: the model's EOS and BOS ids. */
  readonly stopTokens: readonly number[];
  private readonly pool: SessionPool;
  private closed = false;

  constructor(
    protected readonly engine: LanguageEngine,
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

  /** The bytes the sessions' KV caches hold (what a server's metrics report). */
  get kvCache(): KvCacheUsage {
    return this.pool.cacheBytes();
  }

  /**
   * Calls `listener` with the row count of each batched decode step (concurrent generations
   * decoding together); undefined for engines that step each generation on its own. Returns the unsubscribe.
   */
  onBatchStep(listener: (rows: number) => void): (() => void) | undefined {
    return this.engine.onBatchStep?.(listener);
  }

  /** Token ids of `text` (with the tokenizer's BOS where the model expects one). */
  encode(text: string): number[] {
    return this.tokenizer.encode(text);
  }

  /** encode() off the JS thread for long texts (the tokenizer worker; see tokenizer-loading/worker-client.ts). */
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

  /**
   * Guesses for speculative decoding from this model (GenerateOptions.speculative.draft takes the
   * model itself): for each generation of a target with the same vocabulary, its greedy
   * continuation in a session of its own. Throws a TypeError where the vocabularies differ.
   */
  drafter(target: DraftTarget): DraftSource {
    this.live();
    checkSameVocabulary({ vocabSize: this.engine.vocabSize, tokenizer: this.tokenizer }, target);
    return modelDrafter((ids) => this.pool.acquire(ids), this.contextLength);
  }

  /**
   * The prompt text of a conversation, ending with the opening of the assistant's turn. A model's
   * own Jinja template renders here within its budget (lib/chat-template/budget.ts); chatPrompt
   * and chat render it off the JS thread.
   */
  renderChat(messages: readonly ChatMessage[], options: ChatRenderOptions = {}): string {
    return this.template().render(messages, options);
  }

  /**
   * The ids chat() feeds for `messages`: the template rendered once (off the JS thread where it is
   * the model's own), its markers encoded as special tokens and message content as text, never as
   * control tokens (lib/models/chat-prompt.ts). `ids.length` is the prompt's token count.
   */
  async chatPrompt(messages: readonly ChatMessage[], options: ChatRenderOptions & ToolChatOptions = {}): Promise<ChatPrompt> {
    this.live();
    const template = this.template();
    if (options.tools === undefined) return { ids: await encodeChatPrompt(template, this.tokenizer, messages, options) };
    checkMessages(messages);
    const { prepareToolPrompt } = require('../tools/tool-prompt') as typeof import('../tools/tool-prompt'); // loaded on first use
    const tool = await prepareToolPrompt(template, messages, options);
    const ids = await encodeChatPrompt(template, this.tokenizer, tool.messages, tool.render);
    // A forced call: the prompt ends with the family's opening (its marker a special token where it is one).
    const open = tool.forcedOpen ? (await encodeAsync(this.tokenizer, [tool.forcedOpen], { addSpecialTokens: false }))[0] : [];
    return { ids: [...ids, ...open], tools: { format: tool.format, constraint: tool.constraint } };
  }

  /**
   * The assistant's reply to `messages` (or to a prompt chatPrompt made of them). Sessions keep
   * their caches: the next turn (the same messages plus the reply and a new user message) feeds
   * only what follows the shared prefix.
   */
  chat(messages: readonly ChatMessage[] | ChatPrompt, options: ChatOptions = {}): Generation {
    this.live();
    const template = this.template();
    const { stopTokens, stop: stopStrings } = this.chatStops(template, options);
    const start = (prompt: ChatPrompt) => {
      const constraint = prompt.tools?.constraint;
      if (constraint && options.jsonSchema !== undefined) throw new TypeError('chat: jsonSchema and tools (with a tool choice other than none) cannot be combined');
      // A Harmony reply (gpt-oss) is read by its markers (channels, calls): they stay in the text (parseHarmonyReply).
      const harmony = isHarmonyTemplate(template.source) ? { special: true } : {};
      return startGeneration(this.host(), this.checkIds(prompt.ids), { ...options, ...harmony, stopTokens, stop: stopStrings, ...(constraint ? { toolCalls: constraint } : {}) });
    };
    if (!Array.isArray(messages) && typeof messages === 'object' && messages !== null && Array.isArray((messages as ChatPrompt).ids)) {
      return start(messages as ChatPrompt);
    }
    checkMessages(messages as readonly ChatMessage[]);
    let prompt: ChatPrompt | undefined;
    const ids = this.chatPrompt(messages as readonly ChatMessage[], options).then((p) => {
      prompt = p;
      return p.ids as number[];
    });
    return deferredGeneration(ids, () => start(prompt!));
  }

  /**
   * The agent loop (lib/models/tool-agent.ts): replies, runs the calls of tools that have handlers, feeds
   * their results back, and replies again, within maxRounds.
   */
  chatWithTools(messages: readonly ChatMessage[], options: ToolChatLoopOptions): Promise<ToolChatResult> {
    this.live();
    const { chatWithTools } = require('./tool-agent') as typeof import('./tool-agent'); // loaded on first use
    return chatWithTools(this, messages, options);
  }

  /** A conversation that remembers its messages: `await session.prompt('Hi!')`. */
  createChatSession(options: ChatSessionOptions = {}): ChatSession {
    this.live();
    this.template(); // throws the UnsupportedError of a model without one
    const { ChatSession } = require('./chat-session') as typeof import('./chat-session'); // loaded on first use
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

  /** dispose() for `using`: the model is released at the end of the block. */
  [Symbol.dispose](): void {
    this.dispose();
  }

  /** dispose() for `await using`. */
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

  /** @internal A chat reply's stops: the options' (or the model's) stop tokens plus the template's, its stop strings plus the options'. */
  protected chatStops(template: ChatTemplate, options: ChatOptions): { stopTokens: number[]; stop: string[] } {
    const stops = new Set(options.stopTokens ?? this.stopTokens);
    for (const t of template.stopTokenTexts) {
      const id = this.tokenizer.tokenToId(t);
      if (id !== undefined) stops.add(id);
    }
    return { stopTokens: [...stops], stop: [...template.stopStrings, ...(options.stop === undefined ? [] : typeof options.stop === 'string' ? [options.stop] : options.stop)] };
  }

  /** @internal The chat template, or the UnsupportedError of a model without one. */
  protected template(): ChatTemplate {
    if (!this.chatTemplate) {
      throw new UnsupportedError(`${this.info.path} has no chat template (tokenizer_config.json chat_template, GGUF tokenizer.chat_template or ajc1 .template)`);
    }
    return this.chatTemplate;
  }

  /** @internal What startGeneration needs of this model, its sessions from the pool. */
  protected host() {
    return {
      tokenizer: this.tokenizer,
      contextLength: this.contextLength,
      vocabSize: this.engine.vocabSize,
      acquire: (ids: readonly number[]) => this.pool.acquire(ids),
    };
  }

  /** @internal `ids` checked against the vocabulary, copied. */
  protected checkIds(ids: ArrayLike<number>): number[] {
    this.live();
    if (typeof ids !== 'object' || ids === null || typeof ids.length !== 'number') throw new TypeError('expected a prompt string or an array of token ids');
    return checkTokenIds(ids, this.engine.vocabSize);
  }

  /** @internal Throws DisposedError once disposed. */
  protected live(): void {
    if (this.closed) throw new DisposedError('Model');
  }
}
