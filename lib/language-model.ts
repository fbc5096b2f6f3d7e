/**
 * Model: a text-generation model bound to its engine, with its tokenizer and chat template
 * (loadModel in lib/model.ts makes one). generate(), chat(), logits(), sessions from a pool
 * that keeps KV caches for reuse.
 */
import {
  checkMessages,
  type ChatMessage,
  type ChatRenderOptions,
  type ChatTemplate,
} from './chat';
import type { ChatOptions, ChatSession, ChatSessionOptions } from './chat-session';
import { deferredGeneration } from './deferred-generation';
import { DisposedError, rangeError, UnsupportedError } from './errors';
import { checkTokenIds, startGeneration, type Generation, type GenerateOptions, type LanguageSession } from './generate';
import { SessionPool } from './session-pool';
import type { EncodeOptions, Tokenizer } from './tokenizers';
import { encodeAsync, WORKER_MIN_CHARS } from './tokenizer-loading';
import { closeWeights, type FormatName, type ModelWeights } from './weights';
import type { ModelConfig } from './architectures/model-config';

export type { ChatOptions } from './chat-session';

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
export interface LanguageEngine {
  readonly vocabSize: number;
  readonly threads: number;
  /** The kernel set the engine runs, when it says. */
  readonly isa?: string;
  createSession(contextLength: number): LanguageSession;
  dispose(): void;
}

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
