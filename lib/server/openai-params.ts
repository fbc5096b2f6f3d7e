/**
 * OpenAI request parameters → weightmap's GenerateOptions. OpenAI's semantics where they differ from
 * the library's defaults: temperature 1 and top_p 1 unless given, no top-k or min-p, presence and
 * frequency penalties over the whole sequence, logit_bias -100 bans a token.
 */
import { compileJsonSchema, type JsonSchema } from '../constrain';
import type { GenerateOptions } from '../generate';
import { ApiError, invalidRequest, toApiError } from './api-error';
import type { ChatCompletionBody, GenerationBody } from './validation';

export function samplingOptions(body: GenerationBody, vocabSize: number): GenerateOptions {
  const options: GenerateOptions = {
    temperature: body.temperature ?? 1,
    topP: body.top_p ?? 1,
    topK: 0,
    minP: 0,
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
    options.logitBias = bias;
  }
  return options;
}

/**
 * The most tokens to generate: the request's (max_completion_tokens, else max_tokens, else
 * `fallback`), capped by what the context holds after the prompt; 400 when the prompt fills it.
 */
export function maxTokens(requested: number | null | undefined, fallback: number, promptTokens: number, contextLength: number, promptField: string): number {
  const room = contextLength - promptTokens;
  if (room <= 0) {
    throw new ApiError(400, `the prompt has ${promptTokens} tokens; the context holds ${contextLength}`, 'invalid_request_error', promptField, 'context_length_exceeded');
  }
  return Math.min(requested ?? fallback, room);
}

/** The JSON schema a chat request's response_format asks for, compiled once here so a schema the constraint cannot enforce is a 400. */
export function responseSchema(body: ChatCompletionBody): JsonSchema | undefined {
  const format = body.response_format;
  if (format === undefined || format.type === 'text') return undefined;
  if (format.type === 'json_object') return { type: 'object' };
  if (format.json_schema === undefined) throw invalidRequest("response_format of type 'json_schema' needs a json_schema object", 'response_format.json_schema');
  const schema = (format.json_schema.schema ?? {}) as JsonSchema;
  try {
    compileJsonSchema(schema);
  } catch (error) {
    throw toApiError(error, 'response_format.json_schema.schema');
  }
  return schema;
}
