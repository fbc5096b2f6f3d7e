/** POST /v1/completions: text after a prompt (a string, or token ids), with per-token logprobs when asked. */
import { choiceOptions, maxTokens, samplingOptions, shiftedPrompt } from '../openai-params';
import { textModel, type RouteContext } from '../context';
import { invalidRequest } from '../api-error';
import { validateCompletion } from '../validation';
import { completionLogprobs } from '../logprobs';
import { respondStream, respondWhole, type Choice, type ChoiceStream, type PieceLogprob } from './generation-response';

/** OpenAI's default max_tokens for completions. */
const DEFAULT_MAX_TOKENS = 16;

export async function completions(ctx: RouteContext): Promise<void> {
  const body = validateCompletion(await ctx.body(), ctx.served.strict);
  const { id, model, scheduler } = await textModel(ctx, body.model);
  const given = body.prompt;
  // Text is encoded with the tokenizer's BOS where the model expects one; ids are fed as they are.
  const encoded = typeof given === 'string' ? model.encode(given) : typeof given[0] === 'string' ? model.encode(given[0]) : (given as number[]).slice();
  if (encoded.length === 0) throw invalidRequest('the prompt has no tokens', 'prompt');
  for (const t of encoded) if (t >= model.vocabSize) throw invalidRequest(`prompt: ${t} is not a token id of this vocabulary (size ${model.vocabSize})`, 'prompt');
  // A prompt past the context is cut (context shift on), the way the generation shifts.
  const { ids, contextShift } = shiftedPrompt(ctx.served.contextShift, encoded, model, body.n_keep);
  const prompt = [...ids];
  const options = {
    ...samplingOptions(body, model.vocabSize),
    maxTokens: maxTokens(body.max_tokens, DEFAULT_MAX_TOKENS, prompt.length, model.contextLength, 'prompt', contextShift !== undefined),
    ...(contextShift ? { contextShift } : {}),
  };
  const top = body.logprobs ?? undefined;
  const withLogprobs = top === undefined ? options : { ...options, logprobs: top };
  const n = body.n ?? 1;
  const start = (index: number) => scheduler.submit({ kind: 'text', prompt, options: choiceOptions(withLogprobs, index) }, ctx.signal);
  /** A choice's text; `offset`: where it starts in the choice's whole text (the logprobs' text_offset). */
  const choice = (text: string, finish: string | null, logprobs: PieceLogprob[] = [], offset = 0): Choice => {
    const chosen = top === undefined ? null : completionLogprobs(model.tokenizer, logprobs, offset);
    return { text, index: 0, logprobs: chosen, finish_reason: finish };
  };
  const shape = { object: 'text_completion', chunkObject: 'text_completion', idPrefix: 'cmpl', model: id, choice: (text: string, finish: string | null, logprobs: PieceLogprob[]) => choice(text, finish, logprobs) };
  if (!body.stream) return respondWhole(ctx, start, n, prompt.length, shape);
  const streamOf = (): ChoiceStream => {
    let offset = 0;
    return {
      opening: () => [],
      push: (text, piece) => {
        if (!text && !piece.logprob) return [];
        const out = choice(text, null, piece.logprob ? [{ token: piece.token, ...piece.logprob }] : [], offset);
        offset += text.length;
        return [out];
      },
      flush: () => [],
      finish: (reason) => choice('', reason),
    };
  };
  return respondStream(ctx, start, n, prompt.length, body.stream_options?.include_usage === true, shape, streamOf);
}
