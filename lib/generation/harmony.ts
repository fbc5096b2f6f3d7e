/**
 * Harmony, gpt-oss's chat format (told from the chat template's text, never from a model's name).
 * An assistant reply is a run of messages, each a header and a body:
 *
 *   <|channel|>analysis<|message|>…<|end|>                       reasoning (the chain of thought)
 *   <|start|>assistant<|channel|>final<|message|>…<|return|>      the answer
 *   <|start|>assistant<|channel|>commentary to=functions.NAME <|constrain|>json<|message|>{…}<|call|>
 *                                                                 a tool call (the recipient may also
 *                                                                 come before the channel, as the template
 *                                                                 writes calls: `assistant to=functions.NAME<|channel|>commentary json`)
 *
 * The prompt ends with `<|start|>assistant`, so the first header comes without it. `<|return|>` and
 * `<|call|>` end a generation (stop tokens); `<|end|>` ends one message and the next follows.
 * Commentary without a recipient (a preamble the user may see) is content. The generation's text
 * must keep the markers (GenerateOptions.special).
 */
import type { ToolCall } from './tool-call-types';

/** Harmony's markers, each one special token of o200k_harmony. */
export const HARMONY_MARKERS = Object.freeze({
  start: '<|start|>',
  channel: '<|channel|>',
  message: '<|message|>',
  end: '<|end|>',
  return: '<|return|>',
  call: '<|call|>',
  constrain: '<|constrain|>',
});

const M = HARMONY_MARKERS;
/** The texts that end a message body. */
const BODY_ENDS = [M.end, M.return, M.call, M.start];
/** A header longer than this without `<|message|>` is no header: the rest of the reply is content. */
const MAX_HEADER = 512;

/** Whether a chat template writes Harmony (gpt-oss): channels, messages and `<|call|>`. */
export function isHarmonyTemplate(source: string | undefined): boolean {
  return source !== undefined && source.includes(M.channel) && source.includes(M.message) && source.includes(M.call);
}

/** The tokens that end a Harmony generation: the answer's `<|return|>` and a call's `<|call|>` (`<|end|>` only ends a message). */
export const HARMONY_STOP_TOKENS: readonly string[] = [M.return, M.call];

/** The text before a Harmony call's arguments, which a forced call's prompt ends with (after `<|start|>assistant`). */
export function harmonyCallHeader(name: string): string {
  return `${M.channel}commentary to=functions.${name} ${M.constrain}json${M.message}`;
}

/** What a message header says: its channel (analysis, commentary, final) and its recipient. */
export interface HarmonyHeader {
  channel: string;
  /** `to=…`: `functions.NAME` for a tool call. */
  recipient?: string;
}

/** A header's channel and recipient (the role word, the content type and `<|constrain|>` are read past). */
export function parseHarmonyHeader(header: string): HarmonyHeader {
  const channel = /<\|channel\|>\s*([^\s<]+)/.exec(header)?.[1] ?? '';
  const recipient = /(?:^|\s|>)to=([^\s<]+)/.exec(header)?.[1];
  return recipient === undefined ? { channel } : { channel, recipient };
}

/** A piece of a streamed reply: reasoning and content text now safe to send. */
export interface HarmonyPiece {
  reasoning: string;
  content: string;
}

/** The whole reply: reasoning, content, the calls, and whether a call was cut short by the token limit (then dropped). */
export interface HarmonyReply extends HarmonyPiece {
  calls: ToolCall[];
  cutShort: boolean;
}

const FUNCTIONS = 'functions.';

/** Length of the longest suffix of `text` that is a proper prefix of one of `markers`. */
function heldPrefix(text: string, markers: readonly string[]): number {
  let best = 0;
  for (const marker of markers) {
    for (let k = Math.min(marker.length - 1, text.length); k > best; k--) {
      if (text.endsWith(marker.slice(0, k))) {
        best = k;
        break;
      }
    }
  }
  return best;
}

/**
 * Splits a streamed Harmony reply, text split anywhere: reasoning and content come out as soon as
 * they are known not to be the start of a marker; a call's body is held until it ends.
 * `newId` makes each call's id.
 */
export class HarmonyStreamer {
  private mode: 'header' | 'body' | 'plain' = 'header';
  private held = '';
  private header: HarmonyHeader = { channel: '' };
  private readonly calls: ToolCall[] = [];
  private callBody: string | undefined;
  private cutShort = false;

  constructor(private readonly newId: () => string) {}

  /** Adds text; returns the reasoning and content now safe to send. */
  push(text: string): HarmonyPiece {
    this.held += text;
    const out: HarmonyPiece = { reasoning: '', content: '' };
    for (;;) {
      if (this.mode === 'plain') {
        out.content += this.held;
        this.held = '';
        return out;
      }
      if (this.mode === 'header') {
        const at = this.held.indexOf(M.message);
        if (at < 0) {
          if (this.held.length > MAX_HEADER && !this.held.includes('<|')) this.mode = 'plain';
          else return out;
          continue;
        }
        this.header = parseHarmonyHeader(this.held.slice(0, at));
        this.held = this.held.slice(at + M.message.length);
        this.mode = 'body';
        this.callBody = this.isCall() ? '' : undefined;
        continue;
      }
      // body: up to the first marker that ends it
      let end = -1;
      let marker = '';
      for (const m of BODY_ENDS) {
        const i = this.held.indexOf(m);
        if (i >= 0 && (end < 0 || i < end)) [end, marker] = [i, m];
      }
      const upTo = end >= 0 ? end : this.held.length - heldPrefix(this.held, BODY_ENDS);
      this.emit(this.held.slice(0, upTo), out);
      if (end < 0) {
        this.held = this.held.slice(upTo);
        return out;
      }
      this.endMessage(true);
      // `<|start|>` opens the next message's header; after `<|end|>` the header may follow with or without it.
      this.held = this.held.slice(end + (marker === M.start ? M.start.length : marker.length));
      this.mode = 'header';
    }
  }

  /** At the end of the reply: what is held, and the calls. `ended`: false when the token limit cut it. */
  finish(ended: boolean): HarmonyReply {
    const out: HarmonyReply = { reasoning: '', content: '', calls: this.calls, cutShort: false };
    if (this.mode === 'body') {
      this.emit(this.held, out);
      this.endMessage(ended);
    } else if (this.mode === 'plain' || (this.held !== '' && !this.held.includes('<|') && this.calls.length === 0)) {
      // A reply in no Harmony form at all is all content.
      out.content += this.held;
    }
    this.held = '';
    this.mode = 'header';
    out.cutShort = this.cutShort;
    return out;
  }

  private isCall(): boolean {
    return this.header.recipient?.startsWith(FUNCTIONS) === true && this.header.recipient.length > FUNCTIONS.length;
  }

  private emit(text: string, out: HarmonyPiece): void {
    if (text === '') return;
    if (this.callBody !== undefined) this.callBody += text;
    else if (this.header.channel === 'analysis') out.reasoning += text;
    else out.content += text;
  }

  /** A call's body becomes a call when its message ended (a cut one is dropped); arguments that are no JSON object are kept as the model wrote them. */
  private endMessage(complete: boolean): void {
    if (this.callBody === undefined) return;
    const body = this.callBody.trim();
    this.callBody = undefined;
    if (!complete) {
      this.cutShort = true;
      return;
    }
    this.calls.push({ id: this.newId(), name: this.header.recipient!.slice(FUNCTIONS.length), arguments: body === '' ? '{}' : body });
  }
}

/** A whole Harmony reply → reasoning, content and calls. */
export function parseHarmonyReply(text: string, ended: boolean, newId: () => string): HarmonyReply {
  const streamer = new HarmonyStreamer(newId);
  const first = streamer.push(text);
  const rest = streamer.finish(ended);
  return { reasoning: first.reasoning + rest.reasoning, content: first.content + rest.content, calls: rest.calls, cutShort: rest.cutShort };
}
