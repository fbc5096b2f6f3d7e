/**
 * A streamed reply with tools: text before a call streams as content (text that might still turn
 * into the call's opening held back); from the opening on, the reply is held and, when it ends,
 * parsed (lib/tools/parse.ts) into OpenAI's tool_calls deltas: per call its index, id, type and
 * name with empty arguments, then the arguments. A call the output ended inside is dropped.
 */
import type { ToolCallFormat } from '../tools/formats';
import { parseToolCalls } from '../tools/parse';
import type { ToolCall } from '../tools/types';

export interface ToolCallDelta {
  index: number;
  id?: string;
  type?: 'function';
  function: { name?: string; arguments: string };
}

export class ToolCallStreamer {
  private text = '';
  /** Length of text already sent as content. */
  private sent = 0;
  private opened = false;

  constructor(private readonly format: ToolCallFormat) {}

  /** Adds text; returns the content now safe to send. */
  push(piece: string): string {
    this.text += piece;
    if (this.opened) return '';
    const open = this.format.open;
    // The whole reply may be the call (Llama 3): held once it starts like one.
    if (open === '') {
      if (this.text.trimStart().startsWith('{') || this.text.trim() === '') {
        this.opened = this.text.trim() !== '';
        return '';
      }
      return this.release(this.text.length);
    }
    const at = this.text.indexOf(open, this.sent);
    if (at >= 0) {
      this.opened = true;
      return this.release(at);
    }
    let hold = 0;
    for (let k = Math.min(open.length - 1, this.text.length - this.sent); k > 0; k--) {
      if (this.text.endsWith(open.slice(0, k))) {
        hold = k;
        break;
      }
    }
    return this.release(this.text.length - hold);
  }

  /** At the end: the content still held (when no call came) and the calls. `ended`: false at the token limit. */
  finish(ended: boolean): { content: string; calls: ToolCall[] } {
    if (!this.opened) return { content: this.release(this.text.length), calls: [] };
    const reply = parseToolCalls(this.text, this.format, ended);
    if (reply.calls.length === 0 && !reply.cutShort) return { content: this.release(this.text.length), calls: [] };
    // The content before the opening went out already (trimmed in the whole reply, sent as it came here).
    return { content: '', calls: reply.calls };
  }

  private release(to: number): string {
    const out = this.text.slice(this.sent, to);
    this.sent = Math.max(this.sent, to);
    return out;
  }
}

export function toolCallDeltas(calls: readonly ToolCall[]): ToolCallDelta[] {
  return calls.flatMap((c, index) => [
    { index, id: c.id, type: 'function' as const, function: { name: c.name, arguments: '' } },
    { index, function: { arguments: c.arguments } },
  ]);
}
