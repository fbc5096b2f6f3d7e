/**
 * Ollama request parameters → weightmap's GenerateOptions, with Ollama's defaults where they differ
 * from the library's (temperature 0.8, top_k 40, top_p 0.9, repeat_penalty 1.1 over the last 64
 * tokens), num_predict as the token limit (-1: until a stop, -2: until the context is full), and
 * format ('json' or a JSON schema) as constrained output.
 */
import { prepareJsonSchema, type CompiledJsonSchema, type JsonSchema } from '../../constrain';
import type { GenerateOptions } from '../../generation/generate';
import { invalidRequest, toApiError } from '../api-error';
import { maxTokens } from '../openai-params';
import type { OllamaOptions } from './schemas';

export const OLLAMA_DEFAULTS = { temperature: 0.8, topK: 40, topP: 0.9, minP: 0, repeatPenalty: 1.1, penaltyLastN: 64 };

/** The token limit's name in an Ollama request, for the 400s that name a field. */
export const NUM_PREDICT_FIELD = 'options.num_predict';

/** `shifts`: context shift is on (a given num_predict is honoured past the context). */
export function ollamaOptions(given: OllamaOptions = {}, promptTokens: number, contextLength: number, promptField: string, shifts = false): GenerateOptions {
  if (given.num_ctx !== undefined && given.num_ctx > contextLength) {
    throw invalidRequest(`options.num_ctx ${given.num_ctx} is more than this model's context of ${contextLength} tokens (the server's --context sets it)`, 'options.num_ctx');
  }
  const predict = given.num_predict;
  const options: GenerateOptions = {
    temperature: given.temperature ?? OLLAMA_DEFAULTS.temperature,
    topK: given.top_k ?? OLLAMA_DEFAULTS.topK,
    topP: given.top_p ?? OLLAMA_DEFAULTS.topP,
    minP: given.min_p ?? OLLAMA_DEFAULTS.minP,
    repeatPenalty: given.repeat_penalty ?? OLLAMA_DEFAULTS.repeatPenalty,
    penaltyLastN: given.repeat_last_n ?? OLLAMA_DEFAULTS.penaltyLastN,
    presencePenalty: given.presence_penalty ?? 0,
    frequencyPenalty: given.frequency_penalty ?? 0,
    maxTokens: maxTokens(predict === undefined || predict < 0 ? undefined : predict, Infinity, promptTokens, contextLength, promptField, shifts),
  };
  if (given.seed !== undefined) options.seed = given.seed;
  if (given.stop !== undefined && given.stop.length > 0) options.stop = given.stop;
  return options;
}

/** The JSON schema `format` asks for ('json': any object), compiled here (in slices) so that one the constraint cannot enforce, or past the bounds, is a 400. */
export async function formatSchema(format: '' | 'json' | Record<string, unknown> | undefined): Promise<CompiledJsonSchema | undefined> {
  if (format === undefined || format === '') return undefined;
  try {
    return await prepareJsonSchema((format === 'json' ? { type: 'object' } : format) as JsonSchema);
  } catch (error) {
    throw toApiError(error, 'format');
  }
}
