/** POST /v1/completions: text after a prompt (a string, or token ids). */
import { maxTokens, samplingOptions } from '../openai-params';
import { textModel, type RouteContext } from '../context';
import { invalidRequest } from '../api-error';
import { validateCompletion } from '../validation';
import { respondStream, respondWhole, type Choice, type ChoiceStream } from './generation-response';

/** OpenAI's default max_tokens for completions. */
const DEFAULT_MAX_TOKENS = 16;

export async function completions(ctx: RouteContext): Promise<void> {
  const body = validateCompletion(await ctx.body());
  const { id, model, scheduler } = textModel(ctx.served, body.model);
  const given = body.prompt;
  // Text is encoded with the tokenizer's BOS where the model expects one; ids are fed as they are.
  const prompt = typeof given === 'string' ? model.encode(given) : typeof given[0] === 'string' ? model.encode(given[0]) : (given as number[]).slice();
  if (prompt.length === 0) throw invalidRequest('the prompt has no tokens', 'prompt');
  for (const t of prompt) if (t >= model.vocabSize) throw invalidRequest(`prompt: ${t} is not a token id of this vocabulary (size ${model.vocabSize})`, 'prompt');
  const options = {
    ...samplingOptions(body, model.vocabSize),
    maxTokens: maxTokens(body.max_tokens, DEFAULT_MAX_TOKENS, prompt.length, model.contextLength, 'prompt'),
  };
  const run = scheduler.submit({ kind: 'text', prompt, options }, ctx.signal);
  const choice = (text: string, finish: string | null): Choice => ({ text, index: 0, logprobs: null, finish_reason: finish });
  const shape = { object: 'text_completion', chunkObject: 'text_completion', idPrefix: 'cmpl', model: id, choice };
  if (!body.stream) return respondWhole(ctx, run, prompt.length, shape);
  const stream: ChoiceStream = {
    opening: () => [],
    push: (text) => (text ? [choice(text, null)] : []),
    flush: () => [],
    finish: (reason) => choice('', reason),
  };
  return respondStream(ctx, run, prompt.length, body.stream_options?.include_usage === true, shape, stream);
}
