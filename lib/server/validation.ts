/** Request bodies checked against lib/server/request-schemas.ts with ajv; the first problem becomes a 400 naming its field. */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { lazy } from '../base/lazy';
import { invalidRequest } from './api-error';
import { responsesRequest, type ResponsesBody } from './responses-schema';
import { chatCompletionRequest, completionRequest, detokenizeRequest, embeddingRequest, rerankRequest, tokenizeRequest } from './request-schemas';

export interface ChatMessageBody {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content?: string | ({ type: 'text'; text: string } | { type: 'image_url'; image_url: { url: string; detail?: string } })[] | null;
  tool_calls?: { id: string; type: 'function'; function: { name: string; arguments: string } }[] | null;
  name?: string;
  tool_call_id?: string;
  reasoning_content?: string;
}

/** Fields chat and text completions share. */
export interface GenerationBody {
  model: string;
  temperature?: number | null;
  top_p?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  repetition_penalty?: number | null;
  max_tokens?: number | null;
  n_keep?: number | null;
  stop?: string | string[] | null;
  seed?: number | null;
  presence_penalty?: number | null;
  frequency_penalty?: number | null;
  logit_bias?: Record<string, number> | null;
  n?: number | null;
  stream?: boolean | null;
  stream_options?: { include_usage?: boolean } | null;
  user?: string;
}

export interface ChatCompletionBody extends GenerationBody {
  messages: ChatMessageBody[];
  max_completion_tokens?: number | null;
  response_format?: { type: 'text' | 'json_object' | 'json_schema'; json_schema?: { name: string; description?: string; schema?: object | boolean; strict?: boolean | null } };
  chat_template_kwargs?: { enable_thinking?: boolean; [kwarg: string]: unknown };
  reasoning_effort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | null;
  tools?: { type: 'function'; function: { name: string; description?: string; parameters?: Record<string, unknown>; strict?: boolean | null } }[] | null;
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function'; function: { name: string } } | null;
  parallel_tool_calls?: boolean | null;
  logprobs?: boolean | null;
  top_logprobs?: number | null;
}

export interface CompletionBody extends GenerationBody {
  prompt: string | string[] | number[];
  logprobs?: number | null;
}

export interface TokenizeBody {
  model?: string;
  content: string;
  add_special?: boolean;
  with_pieces?: boolean;
}

export interface DetokenizeBody {
  model?: string;
  tokens: number[];
}

export interface EmbeddingBody {
  model: string;
  input: string | string[] | number[] | number[][];
  encoding_format?: 'float' | 'base64';
  dimensions?: number;
  user?: string;
}

export interface RerankBody {
  model?: string;
  query: string;
  documents: (string | { text: string })[];
  top_n?: number | null;
  return_documents?: boolean | null;
  user?: string;
}

/** A request schema that accepts unknown top-level fields (llama-server's default): nested objects stay exact. */
const lenient = <S extends object>(schema: S): S => ({ ...schema, additionalProperties: true });

/** Compiled when a server is made (compileValidators), not when the library loads: ajv and the compile take ~100 ms. */
export const compileValidators = lazy(() => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { default: Ajv } = require('ajv') as typeof import('ajv');
  const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
  return {
    strict: {
      chat: ajv.compile<ChatCompletionBody>(chatCompletionRequest),
      completion: ajv.compile<CompletionBody>(completionRequest),
      embedding: ajv.compile<EmbeddingBody>(embeddingRequest),
      rerank: ajv.compile<RerankBody>(rerankRequest),
      tokenize: ajv.compile<TokenizeBody>(tokenizeRequest),
      detokenize: ajv.compile<DetokenizeBody>(detokenizeRequest),
      responses: ajv.compile<ResponsesBody>(responsesRequest),
    },
    lenient: {
      chat: ajv.compile<ChatCompletionBody>(lenient(chatCompletionRequest)),
      completion: ajv.compile<CompletionBody>(lenient(completionRequest)),
      embedding: ajv.compile<EmbeddingBody>(lenient(embeddingRequest)),
      rerank: ajv.compile<RerankBody>(lenient(rerankRequest)),
      tokenize: ajv.compile<TokenizeBody>(lenient(tokenizeRequest)),
      detokenize: ajv.compile<DetokenizeBody>(lenient(detokenizeRequest)),
      responses: ajv.compile<ResponsesBody>(lenient(responsesRequest)),
    },
  };
});

/** Unknown fields already logged (bounded: a client sending random names logs at most this many). */
const warned = new Set<string>();
const MAX_WARNED = 64;

/** Logs, once per route and name, the top-level fields a lenient server ignores. */
function logIgnored(route: string, known: Record<string, unknown>, body: object): void {
  for (const key of Object.keys(body)) {
    const id = `${route} ${key}`;
    if (key in known || warned.has(id) || warned.size >= MAX_WARNED) continue;
    warned.add(id);
    process.emitWarning(`weightmap serve: ignoring the unknown field '${key}' of ${route} requests (serve --strict refuses them)`);
  }
}

/** `/messages/0/role` → `messages[0].role`. */
function fieldName(pointer: string): string {
  return pointer
    .split('/')
    .slice(1)
    .map((part) => part.replace(/~1/g, '/').replace(/~0/g, '~'))
    .reduce((name, part) => (/^\d+$/.test(part) ? `${name}[${part}]` : name ? `${name}.${part}` : part), '');
}

function describe(error: ErrorObject): { param: string; message: string } {
  const at = fieldName(error.instancePath);
  const join = (child: string) => (at ? `${at}.${child}` : child);
  switch (error.keyword) {
    case 'additionalProperties': {
      const param = join(String(error.params.additionalProperty));
      return { param, message: `unknown field '${param}' (this server does not accept it)` };
    }
    case 'required': {
      const param = join(String(error.params.missingProperty));
      return { param, message: `missing required field '${param}'` };
    }
    case 'propertyNames':
      return { param: join(String(error.params.propertyName)), message: `'${at}' keys must be token ids (decimal integers)` };
    default:
      return { param: at || '(body)', message: `'${at || 'body'}' ${error.message ?? 'is invalid'}` };
  }
}

export function check<T>(validate: ValidateFunction<T>, body: unknown): T {
  if (validate(body)) return body;
  const { param, message } = describe(validate.errors![0]);
  throw invalidRequest(message, param);
}

/** `strict`: unknown fields are 400s; else they are ignored (and logged once). */
function validator<T extends object>(route: string, schema: { properties: Record<string, unknown> }, pick: (v: ReturnType<typeof compileValidators>['strict']) => ValidateFunction<T>) {
  return (body: unknown, strict = false): T => {
    const validators = compileValidators();
    const valid = check(pick(strict ? validators.strict : validators.lenient), body);
    if (!strict) logIgnored(route, schema.properties, valid);
    return valid;
  };
}

export const validateChatCompletion = validator('/v1/chat/completions', chatCompletionRequest, (v) => v.chat);
export const validateCompletion = validator('/v1/completions', completionRequest, (v) => v.completion);
export const validateEmbedding = validator('/v1/embeddings', embeddingRequest, (v) => v.embedding);
export const validateRerank = validator('/v1/rerank', rerankRequest, (v) => v.rerank);
export const validateTokenize = validator('/tokenize', tokenizeRequest, (v) => v.tokenize);
export const validateDetokenize = validator('/detokenize', detokenizeRequest, (v) => v.detokenize);
export const validateResponses = validator('/v1/responses', responsesRequest, (v) => v.responses);
