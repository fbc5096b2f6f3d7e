/**
 * Chat templates: messages → the prompt text a chat model was trained on.
 *  - Qwen3's ChatML with thinking on/off, implemented here (FORMATS.md §5.4),
 *  - a model's own Jinja `chat_template` (tokenizer_config.json, GGUF tokenizer.chat_template)
 *    rendered by @huggingface/jinja,
 *  - qwen3.c's `.template*` files (ajc1): when they are Qwen3's, the Qwen3 template; otherwise
 *    runq's single-turn substitution of `%s`.
 */
import { parseTemplate, renderBounded } from '../chat-template/bounded-render';
import { renderInWorker } from '../chat-template/render-client';
import { rangeError, UnsupportedError } from '../base/errors';
import type { ToolCall, ToolDefinition } from './tool-call-types';
import { HARMONY_STOP_TOKENS, isHarmonyTemplate } from './harmony';

/** Who wrote a chat message. */
export type ChatRole = 'system' | 'user' | 'assistant' | 'tool';

/** One message of a conversation, as OpenAI's chat API shapes it. */
export interface ChatMessage {
  role: ChatRole;
  content: string;
  /** An assistant turn's thinking, when kept apart from `content` (else read from <think>…</think> in it). */
  reasoningContent?: string;
  /** An assistant turn's tool calls (arguments as JSON text). */
  toolCalls?: readonly ToolCall[];
  /** A tool message: the id of the call it answers. */
  toolCallId?: string;
  /** A tool message: the name of the tool that answered. */
  name?: string;
}

/** How a chat template renders a conversation. */
export interface ChatRenderOptions {
  /** Qwen3 thinking mode: true lets the model think first; false (the default) closes an empty think block. */
  enableThinking?: boolean;
  /** Append the opening of the assistant's turn. Default true. */
  addGenerationPrompt?: boolean;
  /** Tools the template describes to the model (passed as `tools`, as Hugging Face's apply_chat_template does). */
  tools?: readonly ToolDefinition[];
  /**
   * More variables for a Jinja template (apply_chat_template's kwargs: `reasoning_effort`, ...).
   * They never replace messages, tools, add_generation_prompt, enable_thinking or the special tokens.
   */
  templateKwargs?: Readonly<Record<string, unknown>>;
}

/** A model's chat template: renders messages to the prompt text and names the texts that end a reply. */
export interface ChatTemplate {
  /** 'qwen3', 'jinja' or 'ajc1'. */
  readonly kind: string;
  /** The prompt text of `messages`, ending with the opening of the assistant's turn unless `addGenerationPrompt` is false. */
  /** A Jinja template's source (what lib/tools/formats.ts reads the tool-call format from). */
  readonly source?: string;
  /** The prompt text of `messages`, ending with the opening of the assistant's turn unless `addGenerationPrompt` is false. */
  render(messages: readonly ChatMessage[], options?: ChatRenderOptions): string;
  /** render() off the JS thread where the template is code from a model file (a Jinja template, in its worker). */
  renderAsync(messages: readonly ChatMessage[], options?: ChatRenderOptions): Promise<string>;
  /** Text that ends an assistant turn when no single stop token does (checked as stop strings). */
  readonly stopStrings: readonly string[];
  /** Token texts that end an assistant turn (looked up in the vocabulary as stop tokens). */
  readonly stopTokenTexts: readonly string[];
}

const ROLES = new Set<ChatRole>(['system', 'user', 'assistant', 'tool']);

export function checkMessages(messages: readonly ChatMessage[]): void {
  if (!Array.isArray(messages)) throw new TypeError('messages must be an array of { role, content }');
  messages.forEach((m, i) => {
    if (typeof m !== 'object' || m === null) throw new TypeError(`messages[${i}] must be an object`);
    if (!ROLES.has(m.role)) throw new TypeError(`messages[${i}].role must be one of system, user, assistant, tool; got ${String(m.role)}`);
    if (typeof m.content !== 'string') throw new TypeError(`messages[${i}].content must be a string`);
    if (m.reasoningContent !== undefined && typeof m.reasoningContent !== 'string') {
      throw new TypeError(`messages[${i}].reasoningContent must be a string`);
    }
    if (m.toolCalls !== undefined) {
      if (!Array.isArray(m.toolCalls)) throw new TypeError(`messages[${i}].toolCalls must be an array`);
      (m.toolCalls as readonly ToolCall[]).forEach((c, j) => {
        if (typeof c !== 'object' || c === null || typeof c.name !== 'string' || typeof c.arguments !== 'string' || typeof c.id !== 'string') {
          throw new TypeError(`messages[${i}].toolCalls[${j}] must be { id, name, arguments } with string values`);
        }
      });
    }
    if (m.toolCallId !== undefined && typeof m.toolCallId !== 'string') throw new TypeError(`messages[${i}].toolCallId must be a string`);
    if (m.name !== undefined && typeof m.name !== 'string') throw new TypeError(`messages[${i}].name must be a string`);
  });
}

function stripChars(s: string, chars: string, where: 'start' | 'end' | 'both'): string {
  let a = 0;
  let b = s.length;
  if (where !== 'end') while (a < b && chars.includes(s[a])) a++;
  if (where !== 'start') while (b > a && chars.includes(s[b - 1])) b--;
  return s.slice(a, b);
}

const isToolResponse = (content: string) => content.startsWith('<tool_response>') && content.endsWith('</tool_response>');

/**
 * Qwen3's chat template (its tokenizer_config.json chat_template without tools): a leading system
 * message, user turns, assistant turns whose thinking is kept only after the last user query, tool
 * responses grouped into a user turn, and the generation prompt `<|im_start|>assistant\n`, followed
 * by an empty think block when thinking is off.
 */
export const qwen3ChatTemplate: ChatTemplate = {
  kind: 'qwen3',
  stopStrings: [],
  stopTokenTexts: ['<|im_end|>', '<|endoftext|>'],
  async renderAsync(messages, options) {
    return this.render(messages, options);
  },
  render(messages, options = {}) {
    checkMessages(messages);
    let out = '';
    if (messages[0]?.role === 'system') out += `<|im_start|>system\n${messages[0].content}<|im_end|>\n`;
    // The last user message that is a real query (not a tool response).
    let lastQuery = messages.length - 1;
    for (let i = messages.length - 1; i >= 0; i--) {
      if (messages[i].role === 'user' && !isToolResponse(messages[i].content)) {
        lastQuery = i;
        break;
      }
    }
    messages.forEach((m, i) => {
      let content = m.content;
      if (m.role === 'user' || (m.role === 'system' && i > 0)) {
        out += `<|im_start|>${m.role}\n${content}<|im_end|>\n`;
      } else if (m.role === 'assistant') {
        let reasoning = '';
        if (m.reasoningContent !== undefined) {
          reasoning = m.reasoningContent;
        } else if (content.includes('</think>')) {
          const beforeClose = content.split('</think>')[0];
          const opened = stripChars(beforeClose, '\n', 'end').split('<think>');
          reasoning = stripChars(opened[opened.length - 1], '\n', 'start');
          const parts = content.split('</think>');
          content = stripChars(parts[parts.length - 1], '\n', 'start');
        }
        const last = i === messages.length - 1;
        if (i > lastQuery && (last || reasoning)) {
          out += `<|im_start|>assistant\n<think>\n${stripChars(reasoning, '\n', 'both')}\n</think>\n\n${stripChars(content, '\n', 'start')}`;
        } else {
          out += `<|im_start|>assistant\n${content}`;
        }
        out += '<|im_end|>\n';
      } else if (m.role === 'tool') {
        if (i === 0 || messages[i - 1].role !== 'tool') out += '<|im_start|>user';
        out += `\n<tool_response>\n${content}\n</tool_response>`;
        if (i === messages.length - 1 || messages[i + 1].role !== 'tool') out += '<|im_end|>\n';
      }
    });
    if (options.addGenerationPrompt !== false) {
      out += '<|im_start|>assistant\n';
      if (options.enableThinking !== true) out += '<think>\n\n</think>\n\n';
    }
    return out;
  },
};

/** Special-token texts a Jinja template may refer to (bos_token, eos_token, ...). */
export interface JinjaTemplateTokens {
  bosToken?: string;
  eosToken?: string;
  padToken?: string;
  unkToken?: string;
}

/**
 * A model's own Jinja chat template (HF tokenizer_config.json `chat_template`, GGUF
 * `tokenizer.chat_template`). It is code from the file: it renders within TEMPLATE_BUDGET
 * (chat-template/budget.ts) in steps, sizes and time, renderAsync in a worker that is ended when
 * it overruns; past a bound the render is a ChatTemplateError.
 */
export function jinjaChatTemplate(source: string, tokens: JinjaTemplateTokens = {}): ChatTemplate {
  if (typeof source !== 'string' || source.length === 0) throw new TypeError('the chat template source must be a non-empty string');
  const template = parseTemplate(source);
  // Harmony's `<|end|>` ends one message of a reply, not the reply: its replies end at `<|return|>` or `<|call|>`.
  const harmony = isHarmonyTemplate(source);
  const stopTokenTexts = [tokens.eosToken, ...(harmony ? HARMONY_STOP_TOKENS : ['<|im_end|>', '<|eot_id|>', '<|end|>', '<end_of_turn>'])].filter(
    (t, i, all): t is string => typeof t === 'string' && t.length > 0 && (t === tokens.eosToken || source.includes(t)) && all.indexOf(t) === i,
  );
  // A template that reads an assistant turn's reasoning as `thinking` (gpt-oss's) gets it under that name too.
  const thinkingKey = /\.thinking\b|"thinking" in message/.test(source);
  const contextOf = (messages: readonly ChatMessage[], options: ChatRenderOptions): Record<string, unknown> => {
    checkMessages(messages);
    return {
      ...options.templateKwargs,
      messages: messages.map((m) => ({
        role: m.role,
        content: m.content,
        ...(m.reasoningContent !== undefined ? { reasoning_content: m.reasoningContent, ...(thinkingKey ? { thinking: m.reasoningContent } : {}) } : {}),
        ...(m.toolCalls?.length ? { tool_calls: m.toolCalls.map(templateToolCall) } : {}),
        ...(m.toolCallId !== undefined ? { tool_call_id: m.toolCallId } : {}),
        ...(m.name !== undefined ? { name: m.name } : {}),
      })),
      ...(options.tools?.length ? { tools: options.tools.map(templateTool) } : {}),
      add_generation_prompt: options.addGenerationPrompt !== false,
      enable_thinking: options.enableThinking === true,
      bos_token: tokens.bosToken ?? '',
      eos_token: tokens.eosToken ?? '',
      pad_token: tokens.padToken ?? '',
      unk_token: tokens.unkToken ?? '',
    };
  };
  return {
    kind: 'jinja',
    source,
    stopStrings: [],
    stopTokenTexts,
    render: (messages, options = {}) => renderBounded(template, contextOf(messages, options)),
    renderAsync: async (messages, options = {}) => renderInWorker(source, contextOf(messages, options)),
  };
}

/** A call as templates read it (Hugging Face's shape: arguments an object, as the templates `tojson` them). */
function templateToolCall(call: ToolCall): Record<string, unknown> {
  let args: unknown;
  try {
    args = JSON.parse(call.arguments);
  } catch {
    args = call.arguments; // not JSON: the templates that test `is string` write it as it is
  }
  return { id: call.id, type: 'function', function: { name: call.name, arguments: args } };
}

/** A tool as templates read it (OpenAI's and Hugging Face's shape). */
function templateTool(tool: ToolDefinition): Record<string, unknown> {
  const fn: Record<string, unknown> = { name: tool.name };
  if (tool.description !== undefined) fn.description = tool.description;
  fn.parameters = tool.parameters ?? { type: 'object', properties: {} };
  return { type: 'function', function: fn };
}

/** qwen3.c's four prompt templates (`%s` = the user text; in the system variants: system, then user). */
export interface Ajc1TemplateTexts {
  default?: string;
  withThinking?: string;
  withSystem?: string;
  withSystemAndThinking?: string;
}

/** True when the runq templates are exactly what the Qwen3 template renders for one turn. */
function areQwen3Templates(t: Ajc1TemplateTexts): boolean {
  const user = [{ role: 'user' as const, content: '%s' }];
  const system = [{ role: 'system' as const, content: '%s' }, ...user];
  const expected: [string | undefined, string][] = [
    [t.default, qwen3ChatTemplate.render(user, { enableThinking: false })],
    [t.withThinking, qwen3ChatTemplate.render(user, { enableThinking: true })],
    [t.withSystem, qwen3ChatTemplate.render(system, { enableThinking: false })],
    [t.withSystemAndThinking, qwen3ChatTemplate.render(system, { enableThinking: true })],
  ];
  return t.default !== undefined && expected.every(([have, want]) => have === undefined || have === want);
}

/** Replaces the `%s` placeholders in order, as runq's sprintf does (other text, `%` included, stays). */
function fillPlaceholders(template: string, values: string[]): string {
  const parts = template.split('%s');
  let out = parts[0];
  for (let i = 1; i < parts.length; i++) out += (values[i - 1] ?? '') + parts[i];
  return out;
}

/**
 * The chat template of an ajc1 checkpoint: Qwen3's (multi-turn) when its `.template*` files are
 * Qwen3's, else runq's own behaviour: the last user message (and the first system message) in the
 * one-turn template, earlier turns left out.
 */
export function ajc1ChatTemplate(texts: Ajc1TemplateTexts): ChatTemplate {
  if (areQwen3Templates(texts)) return qwen3ChatTemplate;
  if (texts.default === undefined) throw new UnsupportedError('the ajc1 checkpoint has no .template file');
  return {
    kind: 'ajc1',
    stopStrings: [],
    stopTokenTexts: [],
    async renderAsync(messages, options) {
      return this.render(messages, options);
    },
    render(messages, options = {}) {
      checkMessages(messages);
      const user = [...messages].reverse().find((m) => m.role === 'user');
      if (!user) throw rangeError('chat: the messages hold no user message');
      const system = messages[0]?.role === 'system' ? messages[0].content : undefined;
      const thinking = options.enableThinking === true;
      const withSystem = thinking ? texts.withSystemAndThinking : texts.withSystem;
      if (system !== undefined && withSystem !== undefined) return fillPlaceholders(withSystem, [system, user.content]);
      return fillPlaceholders((thinking ? texts.withThinking : undefined) ?? texts.default!, [user.content]);
    },
  };
}

/**
 * Splits an assistant reply into its thinking and its answer (Qwen3 emits `<think>…</think>` first
 * when thinking is on). Text without a closed think block is all answer.
 */
export function splitThinking(text: string): { reasoning: string; content: string } {
  const close = text.indexOf('</think>');
  if (close < 0) return { reasoning: '', content: text };
  const open = text.lastIndexOf('<think>', close);
  const reasoning = text.slice(open < 0 ? 0 : open + '<think>'.length, close);
  return { reasoning: stripChars(reasoning, '\n', 'both'), content: stripChars(text.slice(close + '</think>'.length), '\n', 'start') };
}
