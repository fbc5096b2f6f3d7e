/**
 * The agent loop (node-llama-cpp's functions, the AI SDK's tools with maxSteps): the model replies;
 * each call to a tool that has a handler is run and its result fed back as a tool message; the
 * model replies again, until a reply without calls, a call to a tool without a handler (returned to
 * the caller), or maxRounds handler rounds. toolChoice applies to the first reply ('auto' after,
 * else a forced call would be forced forever). The signal aborts the generation and is handed to
 * the handlers.
 *
 *   const result = await model.chatWithTools(messages, {
 *     tools: [{ name: 'get_weather', parameters: {...}, handler: async ({ city }) => ({ temp: 21 }) }],
 *   });
 */
import type { ChatMessage } from '../generation/chat';
import type { ChatOptions } from './chat-session';
import { AbortError, rangeError } from '../base/errors';
import type { Generation, StopReason, ToolCallConstraint } from '../generation/generate';
import type { ToolCallFormat } from '../tools/formats';
import { parseToolCalls } from '../tools/parse';
import { TOOL_LIMITS, type ToolCall, type ToolDefinition } from '../tools/types';

/** A prompt as Model.chatPrompt encodes it (lib/models/language-model.ts's ChatPrompt, stated here so the loop imports no model). */
interface ChatPrompt {
  readonly ids: readonly number[];
  readonly tools?: { readonly format: ToolCallFormat; readonly constraint: ToolCallConstraint | undefined };
}

/** What a tool handler is given beside its arguments. */
export interface ToolHandlerContext {
  signal?: AbortSignal;
  call: ToolCall;
}

export interface ToolWithHandler extends ToolDefinition {
  /** Runs the call: its result (a string as it is, anything else as JSON) is fed back to the model. */
  handler?: (args: any, context: ToolHandlerContext) => unknown;
}

/** Options of the agent loop: chat options, tools with handlers, and the bound on rounds. */
export interface ToolChatLoopOptions extends Omit<ChatOptions, 'tools'> {
  tools: readonly ToolWithHandler[];
  /** Handler rounds at most (default TOOL_LIMITS.maxRounds). */
  maxRounds?: number;
}

/** What the agent loop ends with: the final reply and the conversation it grew. */
export interface ToolChatResult {
  /** The last reply's text (its calls taken out). */
  content: string;
  /** The last reply's calls that were not run (a tool without a handler, or maxRounds reached). */
  toolCalls: ToolCall[];
  /** Why the last reply ended: 'tool-call' when it ended with a call. */
  stopReason: StopReason | undefined;
  /** The messages this loop added: assistant turns (with their calls) and tool results, the last reply included. */
  messages: ChatMessage[];
  /** Handler rounds run. */
  rounds: number;
}

/** What the loop needs of a model (lib/models/language-model.ts's Model). */
export interface ToolChatModel {
  chatPrompt(messages: readonly ChatMessage[], options?: ChatOptions): Promise<ChatPrompt>;
  chat(prompt: ChatPrompt, options?: ChatOptions): Generation;
}

function resultText(value: unknown): string {
  if (typeof value === 'string') return value;
  const json = JSON.stringify(value);
  return json === undefined ? 'null' : json;
}

export async function chatWithTools(model: ToolChatModel, messages: readonly ChatMessage[], options: ToolChatLoopOptions): Promise<ToolChatResult> {
  const { tools, maxRounds = TOOL_LIMITS.maxRounds, ...chatOptions } = options;
  if (!Number.isInteger(maxRounds) || maxRounds < 0) throw rangeError(`maxRounds must be an integer >= 0, got ${String(maxRounds)}`);
  const definitions = tools.map(({ handler: _h, ...definition }) => definition);
  const handlers = new Map(tools.map((t) => [t.name, t.handler]));
  const added: ChatMessage[] = [];
  let toolChoice = chatOptions.toolChoice;
  for (let rounds = 0; ; rounds++) {
    const opts: ChatOptions = { ...chatOptions, tools: definitions, ...(toolChoice !== undefined ? { toolChoice } : {}) };
    const prompt = await model.chatPrompt([...messages, ...added], opts);
    const generation = model.chat(prompt, opts);
    const text = await generation.text();
    const stopReason = generation.stopReason;
    const ended = stopReason !== 'max-tokens' && stopReason !== 'context-full';
    const reply = parseToolCalls(text, prompt.tools!.format, ended);
    added.push({ role: 'assistant', content: reply.content, ...(reply.calls.length ? { toolCalls: reply.calls } : {}) });
    const runnable = reply.calls.length > 0 && reply.calls.every((c) => handlers.get(c.name) !== undefined);
    if (!runnable || rounds >= maxRounds) return { content: reply.content, toolCalls: reply.calls, stopReason, messages: added, rounds };
    for (const call of reply.calls) {
      if (options.signal?.aborted) throw new AbortError(undefined, { cause: options.signal.reason });
      let result: string;
      try {
        result = resultText(await handlers.get(call.name)!(JSON.parse(call.arguments), { call, ...(options.signal ? { signal: options.signal } : {}) }));
      } catch (error) {
        if (options.signal?.aborted) throw new AbortError(undefined, { cause: error });
        // The model is told, as the AI SDK and node-llama-cpp tell it.
        result = JSON.stringify({ error: error instanceof Error ? error.message : String(error) });
      }
      added.push({ role: 'tool', content: result, toolCallId: call.id, name: call.name });
    }
    toolChoice = 'auto';
  }
}
