/** What chat and text completions share: finish reasons, usage, and the two ways of answering. */
import { randomUUID } from 'node:crypto';
import type { StopReason } from '../../generate';
import { sendJson, type RouteContext } from '../context';
import type { ScheduledGeneration } from '../scheduler';
import { SseStream } from '../sse';

export interface Usage {
  prompt_tokens: number;
  completion_tokens: number;
  total_tokens: number;
}

/** OpenAI's finish_reason: 'stop' for a stop token or string, 'length' for the token limit or a full context. */
export function finishReason(reason: StopReason | undefined): 'stop' | 'length' {
  return reason === 'max-tokens' || reason === 'context-full' ? 'length' : 'stop';
}

/** Token counts: the prompt as fed, and every generated token (the stop token that ended it included). */
export function usage(promptTokens: number, run: ScheduledGeneration): Usage {
  return { prompt_tokens: promptTokens, completion_tokens: run.tokens.length, total_tokens: promptTokens + run.tokens.length };
}

export type Choice = Record<string, unknown>;

export interface ResponseShape {
  /** 'chat.completion' or 'text_completion'. */
  object: string;
  /** The streamed events' object. */
  chunkObject: string;
  idPrefix: string;
  model: string;
  /** The choice of a whole response from its text. */
  choice(text: string, finish: 'stop' | 'length'): Choice;
}

/** The choices one streamed completion sends: before the text, for each piece, for what is held at the end, and the last. */
export interface ChoiceStream {
  opening(): Choice[];
  push(text: string): Choice[];
  flush(): Choice[];
  finish(reason: 'stop' | 'length'): Choice;
}

/** Answers with the whole completion once it has ended. */
export async function respondWhole(ctx: RouteContext, run: ScheduledGeneration, promptTokens: number, shape: ResponseShape): Promise<void> {
  let text = '';
  for await (const piece of run) text += piece.text;
  sendJson(ctx.res, 200, {
    id: `${shape.idPrefix}-${randomUUID()}`,
    object: shape.object,
    created: Math.floor(Date.now() / 1000),
    model: shape.model,
    choices: [shape.choice(text, finishReason(run.stopReason))],
    usage: usage(promptTokens, run),
  });
}

/** Streams the completion as server-sent events; with includeUsage, a last event carries the usage. */
export async function respondStream(
  ctx: RouteContext,
  run: ScheduledGeneration,
  promptTokens: number,
  includeUsage: boolean,
  shape: ResponseShape,
  choices: ChoiceStream,
): Promise<void> {
  const id = `${shape.idPrefix}-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const iterator = run[Symbol.asyncIterator]();
  // The first piece comes before the headers: a generation that fails to start still gets a plain error response.
  let next = await iterator.next();
  const sse = new SseStream(ctx.res);
  const event = (list: Choice[], extra: Record<string, unknown> = {}) => ({ id, object: shape.chunkObject, created, model: shape.model, choices: list, ...extra });
  // One event per choice delta.
  const send = async (list: Choice[]) => {
    for (const choice of list) await sse.send(event([choice]));
  };
  await send(choices.opening());
  for (; !next.done; next = await iterator.next()) await send(choices.push(next.value.text));
  await send(choices.flush());
  await send([choices.finish(finishReason(run.stopReason))]);
  if (includeUsage) await sse.send(event([], { usage: usage(promptTokens, run) }));
  sse.end();
}
