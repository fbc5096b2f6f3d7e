/**
 * A conversation that remembers its messages (node-llama-cpp's LlamaChatSession shape):
 *
 *   const session = new ChatSession(model, { systemPrompt: 'Be brief.' });
 *   const answer = await session.prompt('Hi!', { onTextChunk: (t) => process.stdout.write(t) });
 *   const next = await session.prompt('And then?');
 *
 * Each turn renders the whole conversation; the model's session pool keeps the KV cache, so only
 * the new messages are fed.
 */
import type { ChatMessage, ChatRenderOptions, ChatTemplate } from '../generation/chat';
import { HarmonyStreamer, isHarmonyTemplate } from '../generation/harmony';
import type { GenerateOptions, Generation, StopReason } from '../generation/generate';
import type { ToolChatOptions } from '../tools/tool-prompt';

/** Options of `model.chat()`: generation and sampling options, how the template renders, and tools. */
export interface ChatOptions extends GenerateOptions, ChatRenderOptions, ToolChatOptions {}

/** What a session needs of its model (lib/models/language-model.ts's Model). */
export interface ChatModel {
  /** The reply to `messages` (Model.chat). */
  chat(messages: readonly ChatMessage[], options?: ChatOptions): Generation;
  /** Its template (a Harmony one's replies are read by their channels). */
  readonly chatTemplate?: ChatTemplate | undefined;
}

/** How a ChatSession starts: a system prompt and earlier messages. */
export interface ChatSessionOptions {
  systemPrompt?: string;
  /** Messages to start from (after the system prompt). */
  history?: readonly ChatMessage[];
}

/** Options of `session.prompt()`: those of `model.chat()` plus a callback for the text as it comes. */
export interface PromptOptions extends ChatOptions {
  /** Called with each piece of text as it is generated. */
  onTextChunk?: (text: string) => void;
}

/** A conversation that remembers its messages: `await session.prompt(text)` resolves to the reply, which joins the history. Made by `model.createChatSession()` or `new ChatSession(model)`. */
export class ChatSession {
  private readonly history: ChatMessage[] = [];
  private busy = false;
  /** Why the last reply ended. */
  lastStopReason: StopReason | undefined;

  constructor(
    readonly model: ChatModel,
    options: ChatSessionOptions = {},
  ) {
    if (options.systemPrompt !== undefined) {
      if (typeof options.systemPrompt !== 'string') throw new TypeError('systemPrompt must be a string');
      this.history.push({ role: 'system', content: options.systemPrompt });
    }
    if (options.history) this.history.push(...options.history.map((m) => ({ ...m })));
  }

  /** The conversation so far (copies). */
  get messages(): ChatMessage[] {
    return this.history.map((m) => ({ ...m }));
  }

  /**
   * Sends a user message and resolves to the assistant's reply, which joins the conversation.
   * If generation fails or is aborted, the conversation is left as it was before the call.
   */
  async prompt(text: string, options: PromptOptions = {}): Promise<string> {
    if (typeof text !== 'string') throw new TypeError('prompt(text): text must be a string');
    if (this.busy) throw new Error('ChatSession.prompt: the previous prompt has not finished');
    this.busy = true;
    const { onTextChunk, ...chatOptions } = options;
    this.history.push({ role: 'user', content: text });
    try {
      const generation = this.model.chat(this.history, chatOptions);
      // A Harmony reply (gpt-oss): the final channel is the reply, the analysis channel its reasoning.
      const channels = isHarmonyTemplate(this.model.chatTemplate?.source) ? new HarmonyStreamer(() => '') : undefined;
      let reply = '';
      let reasoning = '';
      const add = (text: string) => {
        reply += text;
        if (text && onTextChunk) onTextChunk(text);
      };
      for await (const piece of generation) {
        if (!channels) add(piece.text);
        else {
          const out = channels.push(piece.text);
          reasoning += out.reasoning;
          add(out.content);
        }
      }
      if (channels) {
        const rest = channels.finish(generation.stopReason !== 'max-tokens' && generation.stopReason !== 'context-full');
        reasoning += rest.reasoning;
        add(rest.content);
      }
      this.history.push({ role: 'assistant', content: reply, ...(reasoning ? { reasoningContent: reasoning } : {}) });
      this.lastStopReason = generation.stopReason;
      return reply;
    } catch (error) {
      this.history.pop();
      throw error;
    } finally {
      this.busy = false;
    }
  }

  /** Forgets the conversation except the system prompt. */
  reset(): void {
    const system = this.history[0]?.role === 'system' ? this.history[0] : undefined;
    this.history.length = 0;
    if (system) this.history.push(system);
  }
}
