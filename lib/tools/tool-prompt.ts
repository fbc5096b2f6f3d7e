/**
 * The tool part of a chat prompt: the tools handed to the model's own template (which describes
 * them in its own words), or, for a template that does not render tools, the generic fallback: a
 * system message that describes them and asks for hermes-style `<tool_call>` blocks, earlier calls
 * written as such blocks and tool results as `<tool_response>` user turns. Then the constraint the
 * generation follows: with 'required' or a named tool the prompt ends with the family's opening and
 * the call is forced; with 'auto' a call the model opens is written under the grammar.
 */
import type { ChatMessage, ChatRenderOptions, ChatTemplate } from '../generation/chat';
import type { ToolCallConstraint } from '../generation/generate';
import type { CompiledJsonSchema } from '../constrain';
import { harmonyCallHeader, HARMONY_MARKERS, parseHarmonyHeader } from '../generation/harmony';
import { prepareArgumentGrammars, prepareToolCallGrammar, prepareWordGrammar } from './call-grammar';
import { detectToolFormat, type ToolCallFormat } from './formats';
import { checkTools, TOOL_LIMITS, toolsOfChoice, type ToolChoice, type ToolDefinition } from './types';

/** The tool options of `model.chat()`: tools, tool_choice and parallel calls. */
export interface ToolChatOptions {
  tools?: readonly ToolDefinition[];
  /** Default 'auto'. */
  toolChoice?: ToolChoice;
  /** More than one call in a reply (with 'auto'). Default true. */
  parallelToolCalls?: boolean;
}

export interface ToolPrompt {
  messages: readonly ChatMessage[];
  render: ChatRenderOptions;
  format: ToolCallFormat;
  /** The text the prompt ends with to force a call ('' when none is forced). */
  forcedOpen: string;
  constraint: ToolCallConstraint | undefined;
}

/** JSON as templates' `tojson` writes it (Python's json.dumps: ', ' and ': ' separators). */
function templateJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(templateJson).join(', ')}]`;
  if (typeof value === 'object' && value !== null) {
    return `{${Object.entries(value)
      .filter(([, v]) => v !== undefined)
      .map(([k, v]) => `${JSON.stringify(k)}: ${templateJson(v)}`)
      .join(', ')}}`;
  }
  return JSON.stringify(value) ?? 'null';
}

/** The tool definitions in a system message (the words of Qwen3's template, the fallback's only prompt). */
function describeTools(tools: readonly ToolDefinition[]): string {
  const lines = tools.map((t) =>
    templateJson({ type: 'function', function: { name: t.name, ...(t.description !== undefined ? { description: t.description } : {}), parameters: t.parameters ?? { type: 'object', properties: {} } } }),
  );
  return (
    '# Tools\n\nYou may call one or more functions to assist with the user query.\n\nYou are provided with function signatures within <tools></tools> XML tags:\n<tools>\n' +
    lines.join('\n') +
    '\n</tools>\n\nFor each function call, return a json object with function name and arguments within <tool_call></tool_call> XML tags:\n<tool_call>\n{"name": <function-name>, "arguments": <args-json-object>}\n</tool_call>'
  );
}

/** Messages for a template that knows nothing of tools. */
function fallbackMessages(messages: readonly ChatMessage[], tools: readonly ToolDefinition[]): ChatMessage[] {
  const out: ChatMessage[] = [];
  const system = tools.length ? describeTools(tools) : '';
  if (system) {
    if (messages[0]?.role === 'system') out.push({ role: 'system', content: `${messages[0].content}\n\n${system}` });
    else out.push({ role: 'system', content: system });
  }
  messages.forEach((m, i) => {
    if (i === 0 && m.role === 'system' && system) return;
    if (m.role === 'assistant' && m.toolCalls?.length) {
      const calls = m.toolCalls.map((c) => `<tool_call>\n{"name": ${JSON.stringify(c.name)}, "arguments": ${c.arguments}}\n</tool_call>`);
      out.push({ role: 'assistant', content: [m.content, ...calls].filter((s) => s).join('\n') });
    } else if (m.role === 'tool') {
      const response = `<tool_response>\n${m.content}\n</tool_response>`;
      const last = out[out.length - 1];
      if (i > 0 && messages[i - 1].role === 'tool' && last?.role === 'user') last.content += `\n${response}`;
      else out.push({ role: 'user', content: response });
    } else {
      out.push({ role: m.role, content: m.content, ...(m.reasoningContent !== undefined ? { reasoningContent: m.reasoningContent } : {}) });
    }
  });
  return out;
}

/**
 * Harmony's calls (gpt-oss): the arguments are the message after a `to=functions.NAME` header,
 * generated under that tool's parameters schema. One tool forced: the prompt ends with its whole
 * header. Several, one of them required: the prompt ends with `<|channel|>commentary to=functions.`,
 * the model writes one of the names under the mask, the header's special tokens (which no mask
 * allows) are fed after it, and that tool's schema constrains the arguments; with 'auto' every call
 * the model opens is constrained so.
 */
async function harmonyConstraint(callable: readonly ToolDefinition[], forced: boolean, single: boolean): Promise<ToolCallConstraint & { lead: string }> {
  const compiled = await prepareArgumentGrammars(callable);
  const grammars = new Map<string, CompiledJsonSchema>(callable.map((t, i) => [t.name, compiled[i]]));
  if (forced && callable.length === 1) {
    const open = harmonyCallHeader(callable[0].name);
    return { open, grammar: grammars.get(callable[0].name)!, forced: true, single: true, lead: open };
  }
  const grammarFor = (header: string) => {
    // the header of the message the opening ends (after the last marker that closed or opened one)
    const from = Math.max(header.lastIndexOf(HARMONY_MARKERS.start), header.lastIndexOf(HARMONY_MARKERS.end));
    const recipient = parseHarmonyHeader(from < 0 ? header : header.slice(from)).recipient;
    return recipient?.startsWith('functions.') ? grammars.get(recipient.slice('functions.'.length)) : undefined;
  };
  const grammar = grammars.get(callable[0].name)!;
  if (!forced) return { open: HARMONY_MARKERS.message, grammar, grammarFor, forced: false, single, lead: '' };
  // One of several: the name (and the space after it) under the mask, then `<|constrain|>json<|message|>` fed, then its arguments.
  const naming = { grammar: await prepareWordGrammar(callable.map((t) => `${t.name} `)), after: `${HARMONY_MARKERS.constrain}json${HARMONY_MARKERS.message}` };
  return { open: HARMONY_MARKERS.message, grammar, grammarFor, forced: true, single: true, lead: `${HARMONY_MARKERS.channel}commentary to=functions.`, naming };
}

export async function prepareToolPrompt(template: ChatTemplate, messages: readonly ChatMessage[], options: ChatRenderOptions & ToolChatOptions): Promise<ToolPrompt> {
  const tools = options.tools ?? [];
  checkTools(tools);
  const choice = options.toolChoice ?? 'auto';
  const callable = toolsOfChoice(tools, choice);
  const format = detectToolFormat(template.source);
  const { toolChoice: _c, parallelToolCalls: _p, ...render } = options;
  const own = format.templateRendersTools;
  const rendered = own ? messages : fallbackMessages(messages, tools);
  const forced = choice !== 'auto' && choice !== 'none';
  let constraint: ToolCallConstraint | undefined;
  if (format.family === 'harmony') {
    const harmony = callable.length > 0 ? await harmonyConstraint(callable, forced, forced || options.parallelToolCalls === false) : undefined;
    return { messages: rendered, render: { ...render, tools }, format, forcedOpen: harmony?.lead ?? '', constraint: harmony };
  }
  if (callable.length > 0 && (forced || format.open !== '')) {
    const single = forced || options.parallelToolCalls === false;
    const grammar = await prepareToolCallGrammar(callable, format, single ? 1 : TOOL_LIMITS.maxCallsPerReply);
    constraint = { open: format.open, grammar, forced, single };
  }
  return { messages: rendered, render: own ? { ...render, tools } : { ...render, tools: undefined }, format, forcedOpen: forced ? format.open : '', constraint };
}
