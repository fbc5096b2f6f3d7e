/** What chat and text completions share: finish reasons, usage, and the two ways of answering. */
import { randomUUID } from 'node:crypto';
import type { GeneratedPiece, StopReason, TokenLogprob } from '../../generation/generate';
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

/** Token counts: the prompt as fed (once), and every generated token of every choice (the stop tokens that ended them included). */
export function usage(promptTokens: number, runs: readonly ScheduledGeneration[]): Usage {
  const completion = runs.reduce((sum, run) => sum + run.tokens.length, 0);
  return { prompt_tokens: promptTokens, completion_tokens: completion, total_tokens: promptTokens + completion };
}

/** Tells the access log the tokens of a request's generations that ended. */
export function logUsage(ctx: RouteContext, promptTokens: number, runs: readonly ScheduledGeneration[]): void {
  ctx.log.promptTokens = promptTokens;
  ctx.log.completionTokens = runs.reduce((sum, run) => sum + run.tokens.length, 0);
}

/**
 * The generations of a request's `n` choices, started one after another (each waits for its slot
 * when the one before is over: a request never holds more than one).
 */
export type Runs = (index: number) => ScheduledGeneration;

export type Choice = Record<string, unknown>;

export interface ResponseShape {
  /** 'chat.completion' or 'text_completion'. */
  object: string;
  /** The streamed events' object. */
  chunkObject: string;
  idPrefix: string;
  model: string;
  /** The choice of a whole response from its text (and its tokens' logprobs, when they were asked for). */
  choice(text: string, finish: 'stop' | 'length', logprobs: PieceLogprob[]): Choice;
}

/** A generated token with its logprobs (GenerateOptions.logprobs). */
export interface PieceLogprob extends TokenLogprob {
  token: number;
}

/** The choices one streamed completion sends: before the text, for each piece, for what is held at the end, and the last. */
export interface ChoiceStream {
  opening(): Choice[];
  push(text: string, piece: GeneratedPiece): Choice[];
  /** `reason`: how the generation ended (a held tool call is dropped at 'length'). */
  flush(reason: 'stop' | 'length'): Choice[];
  finish(reason: 'stop' | 'length'): Choice;
}

/** Answers with the whole completion once its `n` choices have ended. */
export async function respondWhole(ctx: RouteContext, start: Runs, n: number, promptTokens: number, shape: ResponseShape): Promise<void> {
  const runs: ScheduledGeneration[] = [];
  const choices: Choice[] = [];
  for (let index = 0; index < n; index++) {
    const run = start(index);
    runs.push(run);
    let text = '';
    const logprobs: PieceLogprob[] = [];
    for await (const piece of run) {
      text += piece.text;
      if (piece.logprob) logprobs.push({ token: piece.token, ...piece.logprob });
    }
    choices.push({ ...shape.choice(text, finishReason(run.stopReason), logprobs), index });
  }
  logUsage(ctx, promptTokens, runs);
  sendJson(ctx.res, 200, {
    id: `${shape.idPrefix}-${randomUUID()}`,
    object: shape.object,
    created: Math.floor(Date.now() / 1000),
    model: shape.model,
    choices,
    usage: usage(promptTokens, runs),
  });
}

/** Streams the `n` choices (one after another) as server-sent events; with includeUsage, a last event carries the usage. */
export async function respondStream(
  ctx: RouteContext,
  start: Runs,
  n: number,
  promptTokens: number,
  includeUsage: boolean,
  shape: ResponseShape,
  streamOf: (index: number) => ChoiceStream,
): Promise<void> {
  const id = `${shape.idPrefix}-${randomUUID()}`;
  const created = Math.floor(Date.now() / 1000);
  const runs = [start(0)];
  let iterator = runs[0][Symbol.asyncIterator]();
  // The first piece comes before the headers: a generation that fails to start still gets a plain error response.
  let next = await iterator.next();
  const sse = new SseStream(ctx.res);
  const event = (list: Choice[], extra: Record<string, unknown> = {}) => ({ id, object: shape.chunkObject, created, model: shape.model, choices: list, ...extra });
  for (let index = 0; index < n; index++) {
    if (index > 0) {
      runs.push(start(index));
      iterator = runs[index][Symbol.asyncIterator]();
      next = await iterator.next();
    }
    const run = runs[index];
    const choices = streamOf(index);
    // One event per choice delta.
    const send = async (list: Choice[]) => {
      for (const choice of list) await sse.send(event([{ ...choice, index }]));
    };
    await send(choices.opening());
    for (; !next.done; next = await iterator.next()) await send(choices.push(next.value.text, next.value));
    await send(choices.flush(finishReason(run.stopReason)));
    await send([choices.finish(finishReason(run.stopReason))]);
  }
  logUsage(ctx, promptTokens, runs);
  if (includeUsage) await sse.send(event([], { usage: usage(promptTokens, runs) }));
  sse.end();
}
