/**
 * What rendering a chat template that came with a model file may cost: templates are code from
 * the file, so a render is bounded in steps, in the size of every value it makes, and in time
 * (bounded-render.ts counts and checks them as it goes; render-client.ts runs it in a worker that
 * is ended past the time, with a memory limit). One source for each bound.
 */
import { UnsupportedError } from '../base/errors';

export const TEMPLATE_BUDGET = {
  /** Characters of template source (real chat templates are a few KB, tool-heavy ones some tens). */
  sourceChars: 1 << 18,
  /** Interpreter steps (expressions and statements evaluated): Qwen3's template takes ~130 per message. */
  steps: 1_000_000,
  /** UTF-16 units of any string the render makes, the prompt included. */
  chars: 16 << 20,
  /** Items of any list the render makes (`range()` included). */
  items: 1 << 18,
  /** Wall-clock milliseconds, checked between steps. */
  ms: 3000,
  /** The worker is ended when a render runs this long past `ms` (a single step that does not return). */
  graceMs: 2000,
  /** The render worker's JS heap limit (MB). */
  heapMb: 512,
} as const;

export type TemplateBudget = { readonly [K in keyof typeof TEMPLATE_BUDGET]: number };

/** Why a render was refused. */
export type ChatTemplateFailure =
  | 'parse' // the template source cannot be parsed (or is too long)
  | 'render' // the template raised an error on these messages
  | 'steps' // it ran past TEMPLATE_BUDGET.steps
  | 'size' // it made a string or list past TEMPLATE_BUDGET.chars / items
  | 'time' // it ran past TEMPLATE_BUDGET.ms
  | 'memory' // its worker ran out of its heap
  | 'content'; // it changed message content that holds special-token text (chat-prompt.ts)

/** A chat template that cannot be used on these messages: an UnsupportedError (a server answers 400). */
export class ChatTemplateError extends UnsupportedError {
  constructor(
    readonly reason: ChatTemplateFailure,
    message: string,
  ) {
    super(message);
    this.name = 'ChatTemplateError';
  }
}

/** The error that crosses from the render worker: its reason and message. */
export interface SentTemplateError {
  reason: ChatTemplateFailure;
  message: string;
}
