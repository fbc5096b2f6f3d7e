/** Tool calling: the definitions a caller gives, the calls a model makes, and the bounds on both. */
import { checkSchemaNesting } from '../constrain/json-schema';
import { rangeError } from '../base/errors';

export type { ToolCall, ToolDefinition } from '../generation/tool-call-types';
import type { ToolDefinition } from '../generation/tool-call-types';

/** 'auto': the model decides; 'none': no call; 'required': one call is forced; { name }: that tool's call is forced. */
export type ToolChoice = 'auto' | 'none' | 'required' | { name: string };

/** The one source of the bounds on tool definitions. */
export const TOOL_LIMITS = Object.freeze({
  /** Tools in one request. */
  maxTools: 128,
  /** OpenAI's rule for function names. */
  namePattern: /^[A-Za-z0-9_-]{1,64}$/,
  /** Calls in one reply written as one array (Mistral's form). */
  maxCallsPerReply: 16,
  /** Handler rounds an agent loop runs before it stops (the default of maxRounds). */
  maxRounds: 8,
});

/** Throws TypeError naming the field for a definition list that is not one (the server turns it into a 400). */
export function checkTools(tools: readonly ToolDefinition[], field = 'tools'): void {
  if (!Array.isArray(tools)) throw new TypeError(`${field} must be an array of tool definitions`);
  if (tools.length > TOOL_LIMITS.maxTools) throw rangeError(`${field}: at most ${TOOL_LIMITS.maxTools} tools, got ${tools.length}`);
  const names = new Set<string>();
  tools.forEach((t, i) => {
    if (typeof t !== 'object' || t === null) throw new TypeError(`${field}[${i}] must be an object`);
    if (typeof t.name !== 'string' || !TOOL_LIMITS.namePattern.test(t.name)) throw new TypeError(`${field}[${i}].name must match ${TOOL_LIMITS.namePattern.source}`);
    if (names.has(t.name)) throw new TypeError(`${field}[${i}].name: '${t.name}' is defined twice`);
    names.add(t.name);
    const p = t.parameters;
    if (p !== undefined && (typeof p !== 'object' || p === null || Array.isArray(p))) throw new TypeError(`${field}[${i}].parameters must be a JSON schema object`);
    if (p !== undefined) checkSchemaNesting(p);
  });
}

/** The tools a choice lets the model call ([] for 'none'); TypeError for a named tool that is not defined. */
export function toolsOfChoice(tools: readonly ToolDefinition[], choice: ToolChoice, field = 'tool_choice'): readonly ToolDefinition[] {
  if (choice === 'none') return [];
  if (choice === 'auto' || choice === 'required') return tools;
  if (typeof choice !== 'object' || choice === null || typeof choice.name !== 'string') throw new TypeError(`${field} must be 'auto', 'none', 'required' or { name }`);
  const tool = tools.find((t) => t.name === choice.name);
  if (!tool) throw new TypeError(`${field}: no tool named '${choice.name}' is defined`);
  return [tool];
}
