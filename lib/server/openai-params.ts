/**
 * OpenAI request parameters → weightmap's GenerateOptions. OpenAI's semantics where they differ from
 * the library's defaults: temperature 1 and top_p 1 unless given, no top-k or min-p unless given
 * (top_k, min_p, repetition_penalty: llama-server's and vLLM's fields), presence and frequency
 * penalties over the whole sequence, logit_bias -100 bans a token.
 */
import { prepareJsonSchema, type CompiledJsonSchema, type JsonSchema } from '../constrain';
import { keptPrefix, truncatedPrompt, type ContextShiftOptions } from '../generation/context-shift';
import type { Tokenizer } from '../tokenizers';
import type { GenerateOptions } from '../generation/generate';
import { ApiError, invalidRequest, toApiError } from './api-error';
import type { ChatCompletionBody, GenerationBody } from './validation';

export function samplingOptions(body: GenerationBody, vocabSize: number): GenerateOptions {
  const options: GenerateOptions = {
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: body.top_k ?? 0,
    minP: body.min_p ?? 0,
    repeatPenalty: body.repetition_penalty ?? 1,
    presencePenalty: body.presence_penalty ?? 0,
    frequencyPenalty: body.frequency_penalty ?? 0,
    penaltyLastN: -1,
  };
  if (body.seed !== undefined && body.seed !== null) options.seed = body.seed;
  if (body.stop !== undefined && body.stop !== null) options.stop = body.stop;
  if (body.logit_bias) {
    const bias = new Map<number, number>();
    for (const [key, value] of Object.entries(body.logit_bias)) {
      const id = Number(key);
      if (id >= vocabSize) throw invalidRequest(`logit_bias: token id ${id} is outside the vocabulary (size ${vocabSize})`, `logit_bias.${key}`);
      bias.set(id, value <= -100 ? -Infinity : value);
    }
    let banned = 0;
    for (const [id, value] of bias) if (value === -Infinity && id >= 0 && id < vocabSize) banned++;
    if (banned === vocabSize) throw invalidRequest(`logit_bias bans every token of the vocabulary (size ${vocabSize}): nothing can be generated`, 'logit_bias', 'no_allowed_token');
    options.logitBias = bias;
  }
  return options;
}

/**
 * The most tokens to generate: the request's (max_completion_tokens, else max_tokens, else
 * `fallback`), capped by what the context holds after the prompt; 400 when the prompt fills it.
 * With `shifts` (context shift on) a requested count is kept as it is: the generation shifts.
 */
export function maxTokens(requested: number | null | undefined, fallback: number, promptTokens: number, contextLength: number, promptField: string, shifts = false): number {
  const room = contextLength - promptTokens;
  if (room <= 0) {
    throw new ApiError(400, `the prompt has ${promptTokens} tokens; the context holds ${contextLength}`, 'invalid_request_error', promptField, 'context_length_exceeded');
  }
  if (shifts && requested != null) return requested;
  return Math.min(requested ?? fallback, room);
}

/**
 * With context shift on (ServeOptions.contextShift): the prompt cut to fit as llama-server cuts one
 * (its first `nKeep` tokens kept, by default its BOS), and the option that lets the generation
 * shift; off: the prompt as it is.
 */
export function shiftedPrompt(
  on: boolean | undefined,
  ids: readonly number[],
  model: { contextLength: number; tokenizer: Tokenizer },
  nKeep?: number | null,
): { ids: readonly number[]; contextShift?: ContextShiftOptions } {
  if (!on) return { ids };
  const contextShift: ContextShiftOptions = nKeep != null ? { keep: nKeep } : {};
  const keep = keptPrefix(contextShift, ids, model.tokenizer.specialIds?.bos, model.contextLength);
  return { ids: truncatedPrompt(ids, model.contextLength, keep), contextShift };
}

/**
 * The JSON schema a chat request's response_format asks for, compiled here once (in slices) and
 * handed to the generation: a schema the constraint cannot enforce, or one past the bounds
 * (lib/constrain/limits.ts), is a 400 naming the field and the bound.
 */
export async function responseSchema(body: ChatCompletionBody): Promise<CompiledJsonSchema | undefined> {
  const format = body.response_format;
  if (format === undefined || format.type === 'text') return undefined;
  if (format.type !== 'json_object' && format.json_schema === undefined) {
    throw invalidRequest("response_format of type 'json_schema' needs a json_schema object", 'response_format.json_schema');
  }
  const schema = (format.type === 'json_object' ? { type: 'object' } : (format.json_schema!.schema ?? {})) as JsonSchema;
  try {
    return await prepareJsonSchema(schema);
  } catch (error) {
    throw toApiError(error, format.type === 'json_object' ? 'response_format' : 'response_format.json_schema.schema');
  }
}

/** Choice `index`'s options (of a request's `n`): with a seed, seed + index, so that the choices differ and each is reproducible. */
export function choiceOptions<T extends { seed?: number | bigint }>(options: T, index: number): T {
  if (index === 0 || options.seed === undefined) return options;
  return { ...options, seed: typeof options.seed === 'bigint' ? options.seed + BigInt(index) : options.seed + index };
}
