import { HARMONY_MARKERS, isHarmonyTemplate } from '../generation/harmony';

/**
 * How a model family writes a tool call, told from its chat template's own text (nothing here is
 * chosen by the model's name):
 *  - hermes (Qwen2.5, Qwen3, Hermes, and any template that writes `<tool_call>`):
 *    `<tool_call>\n{"name": …, "arguments": {…}}\n</tool_call>`, one block per call;
 *  - mistral (a template that writes `[TOOL_CALLS]`): `[TOOL_CALLS][{"name": …, "arguments": {…}}, …]`;
 *  - llama3 (Llama 3.1+/3.2: a template with `<|start_header_id|>` that renders `tools`): the reply is
 *    the call, `{"name": …, "parameters": {…}}`;
 *  - harmony (gpt-oss: a template that writes `<|channel|>`, `<|message|>` and `<|call|>`, lib/generation/harmony.ts):
 *    `<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>`, one message per call;
 *  - generic, the fallback for a template that does not render tools (Gemma 3's among them): the
 *    tools are described in a system message and the model answers in the hermes form.
 */
export type ToolFamily = 'hermes' | 'mistral' | 'llama3' | 'harmony' | 'generic';

/** How a template family writes tool calls (read from the chat template; a documented generic fallback otherwise). */
export interface ToolCallFormat {
  readonly family: ToolFamily;
  /** The text that opens a call in the model's output ('' : the whole reply is the call; Harmony: the `<|message|>` after a `to=functions.NAME` header). */
  readonly open: string;
  /** The key that holds the arguments object. */
  readonly argumentsKey: 'arguments' | 'parameters';
  /** The calls come as one JSON array after `open` (Mistral). */
  readonly array: boolean;
  /** The template renders `tools` itself (else the generic fallback describes them). */
  readonly templateRendersTools: boolean;
}

/** The tool-call format a chat template writes (hermes, Mistral, Llama 3, Harmony, or the generic fallback). */
export function detectToolFormat(templateSource: string | undefined): ToolCallFormat {
  const source = templateSource ?? '';
  const rendersTools = /\btools\b/.test(source);
  if (isHarmonyTemplate(source)) return { family: 'harmony', open: HARMONY_MARKERS.message, argumentsKey: 'arguments', array: false, templateRendersTools: rendersTools };
  if (source.includes('<tool_call>')) return { family: 'hermes', open: '<tool_call>', argumentsKey: 'arguments', array: false, templateRendersTools: rendersTools };
  if (source.includes('[TOOL_CALLS]')) return { family: 'mistral', open: '[TOOL_CALLS]', argumentsKey: 'arguments', array: true, templateRendersTools: rendersTools };
  if (source.includes('<|start_header_id|>') && rendersTools) return { family: 'llama3', open: '', argumentsKey: 'parameters', array: false, templateRendersTools: true };
  return { family: 'generic', open: '<tool_call>', argumentsKey: 'arguments', array: false, templateRendersTools: false };
}
