/**
 * A model's reply → its text content and tool calls, in the form of its family (formats.ts). A call
 * the output ended inside (the token limit) is never returned: it is dropped, with the text after
 * the content. Output that does not hold well-formed calls (possible only without the constraint)
 * is all content.
 */
import { randomBytes } from 'node:crypto';
import { parseHarmonyReply } from '../generation/harmony';
import type { ToolCallFormat } from './formats';
import type { ToolCall } from './types';

/** A reply split into its text and the tool calls parsed out of it. */
export interface ParsedReply {
  content: string;
  calls: ToolCall[];
  /** The output ended inside a call (it was dropped). */
  cutShort: boolean;
}

export function newToolCallId(): string {
  return `call_${randomBytes(12).toString('hex')}`;
}

/** { name, <argumentsKey> } → a call, or undefined when `value` is not one. */
function callOf(value: unknown, format: ToolCallFormat): ToolCall | undefined {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) return undefined;
  const v = value as Record<string, unknown>;
  const args = v[format.argumentsKey] ?? v.arguments ?? v.parameters ?? {};
  if (typeof v.name !== 'string' || typeof args !== 'object' || args === null) return undefined;
  return { id: newToolCallId(), name: v.name, arguments: JSON.stringify(args) };
}

function parseJson(text: string): { ok: true; value: unknown } | { ok: false } {
  try {
    return { ok: true, value: JSON.parse(text) };
  } catch {
    return { ok: false };
  }
}

const CLOSE_TAG = '</tool_call>';

/** `ended`: false when the output stopped at the token limit (a call still open there was cut short). */
export function parseToolCalls(text: string, format: ToolCallFormat, ended: boolean): ParsedReply {
  if (format.family === 'harmony') {
    // The reasoning (the analysis channel) is not the reply's content; a caller that wants it parses with parseHarmonyReply.
    const { content, calls, cutShort } = parseHarmonyReply(text, ended, newToolCallId);
    return { content, calls, cutShort };
  }
  const whole: ParsedReply = { content: text, calls: [], cutShort: false };
  if (format.open === '') {
    const trimmed = text.trim();
    if (!trimmed.startsWith('{')) return whole;
    const parsed = parseJson(trimmed);
    if (!parsed.ok) return ended ? whole : { content: '', calls: [], cutShort: true };
    const call = callOf(parsed.value, format);
    return call ? { content: '', calls: [call], cutShort: false } : whole;
  }
  const first = text.indexOf(format.open);
  if (first < 0) return whole;
  const content = text.slice(0, first).trim();
  if (format.array) {
    const parsed = parseJson(text.slice(first + format.open.length).trim());
    if (!parsed.ok) return ended ? whole : { content, calls: [], cutShort: true };
    const calls = Array.isArray(parsed.value) ? parsed.value.map((v) => callOf(v, format)) : [callOf(parsed.value, format)];
    return calls.length > 0 && calls.every((c) => c !== undefined) ? { content, calls: calls as ToolCall[], cutShort: false } : whole;
  }
  const blocks = text.slice(first + format.open.length).split(format.open);
  const calls: ToolCall[] = [];
  for (let i = 0; i < blocks.length; i++) {
    const close = blocks[i].indexOf(CLOSE_TAG);
    const body = (close < 0 ? blocks[i] : blocks[i].slice(0, close)).trim();
    const parsed = parseJson(body);
    const call = parsed.ok ? callOf(parsed.value, format) : undefined;
    if (call === undefined) {
      // The last block, cut by the token limit: dropped; a malformed one elsewhere: not calls at all.
      if (i === blocks.length - 1 && !ended && close < 0) return { content, calls, cutShort: true };
      return whole;
    }
    calls.push(call);
  }
  return { content, calls, cutShort: false };
}
