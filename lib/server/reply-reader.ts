/**
 * How a chat reply's text becomes reasoning, content and tool calls, whole or as it streams — one
 * reader for /v1/chat/completions and /v1/responses: a Harmony template's channels (gpt-oss:
 * analysis, final, commentary to=functions.*), else Qwen3-style `<think>` text (when thinking is
 * on) and the calls of the template's tool format (when the request lets the model call).
 */
import { splitThinking } from '../generation/chat';
import { HarmonyStreamer, parseHarmonyReply } from '../generation/harmony';
import type { ToolCallFormat } from '../tools/formats';
import { newToolCallId, parseToolCalls } from '../tools/parse';
import type { ToolCall } from '../tools/types';
import { ThinkingSplitter } from './thinking-stream';
import { ToolCallStreamer } from './tool-stream';

/** A reply's parts: the reasoning, the content and the calls (none when the model may make none, or the call was cut short). */
export interface ReplyParts {
  reasoning: string;
  content: string;
  calls: ToolCall[];
}

/** A reply read as it streams: text that may still turn into a marker, a tag or a call is held until it is told apart. */
export interface ReplyStream {
  push(text: string): { reasoning: string; content: string };
  /** The held text and the calls; `finished`: the reply ended by itself (a call cut by max_tokens is dropped). */
  finish(finished: boolean): ReplyParts;
}

export interface ReplyReader {
  whole(text: string, finished: boolean): ReplyParts;
  stream(): ReplyStream;
}

export interface ReplyReaderOptions {
  /** The template is Harmony's (lib/generation/harmony.ts isHarmonyTemplate). */
  harmony: boolean;
  /** `<think>` … `</think>` text is the reasoning. */
  thinking: boolean;
  /** The format calls are parsed in; undefined: the model may make none. */
  toolFormat: ToolCallFormat | undefined;
}

export function replyReader({ harmony, thinking, toolFormat }: ReplyReaderOptions): ReplyReader {
  if (harmony) {
    const allowed = (calls: ToolCall[]) => (toolFormat ? calls : []);
    return {
      whole: (text, finished) => {
        const r = parseHarmonyReply(text, finished, newToolCallId);
        return { reasoning: r.reasoning, content: r.content, calls: allowed(r.calls) };
      },
      stream: () => {
        const channels = new HarmonyStreamer(newToolCallId);
        return {
          push: (text) => channels.push(text),
          finish: (finished) => {
            const r = channels.finish(finished);
            return { reasoning: r.reasoning, content: r.content, calls: allowed(r.calls) };
          },
        };
      },
    };
  }
  return {
    whole: (text, finished) => {
      const split = thinking ? splitThinking(text) : { reasoning: '', content: text };
      const reply = toolFormat ? parseToolCalls(split.content, toolFormat, finished) : { content: split.content, calls: [] };
      return { reasoning: split.reasoning, content: reply.content, calls: reply.calls };
    },
    stream: () => {
      const splitter = thinking ? new ThinkingSplitter() : undefined;
      const calls = toolFormat ? new ToolCallStreamer(toolFormat) : undefined;
      const read = ({ reasoning, content }: { reasoning: string; content: string }) => ({ reasoning, content: calls ? calls.push(content) : content });
      return {
        push: (text) => read(splitter ? splitter.push(text) : { reasoning: '', content: text }),
        finish: (finished) => {
          const held = splitter ? read(splitter.flush()) : { reasoning: '', content: '' };
          const made = calls ? calls.finish(finished) : { content: '', calls: [] };
          return { reasoning: held.reasoning, content: held.content + made.content, calls: made.calls };
        },
      };
    },
  };
}
