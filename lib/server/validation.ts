/** Request bodies checked against lib/server/request-schemas.ts with ajv; the first problem becomes a 400 naming its field. */
import type { ErrorObject, ValidateFunction } from 'ajv';
import { lazy } from '../lazy';
import { invalidRequest } from './api-error';
import { chatCompletionRequest, completionRequest, embeddingRequest } from './request-schemas';

export interface ChatMessageBody {
  role: 'system' | 'developer' | 'user' | 'assistant' | 'tool';
  content: string | { type: 'text'; text: string }[];
  name?: string;
  tool_call_id?: string;
  reasoning_content?: string;
}

/** Fields chat and text completions share. */
export interface GenerationBody {
  model: string;
  temperature?: number | null;
  top_p?: number | null;
  max_tokens?: number | null;
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
  chat_template_kwargs?: { enable_thinking?: boolean };
}

export interface CompletionBody extends GenerationBody {
  prompt: string | string[] | number[];
}

export interface EmbeddingBody {
  model: string;
  input: string | string[];
  encoding_format?: 'float' | 'base64';
  user?: string;
}

/** Compiled when a server is made (compileValidators), not when the library loads: ajv and the compile take ~100 ms. */
export const compileValidators = lazy(() => {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { default: Ajv } = require('ajv') as typeof import('ajv');
  const ajv = new Ajv({ allErrors: false, strict: true, allowUnionTypes: true });
  return {
    chat: ajv.compile<ChatCompletionBody>(chatCompletionRequest),
    completion: ajv.compile<CompletionBody>(completionRequest),
    embedding: ajv.compile<EmbeddingBody>(embeddingRequest),
  };
});

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

function check<T>(validate: ValidateFunction<T>, body: unknown): T {
  if (validate(body)) return body;
  const { param, message } = describe(validate.errors![0]);
  throw invalidRequest(message, param);
}

export const validateChatCompletion = (body: unknown) => check(compileValidators().chat, body);
export const validateCompletion = (body: unknown) => check(compileValidators().completion, body);
export const validateEmbedding = (body: unknown) => check(compileValidators().embedding, body);
