/**
 * The JSON Schemas of the Ollama API's request bodies (https://github.com/ollama/ollama/blob/main/docs/api.md)
 * as this server takes them. Unknown fields are errors, as on /v1, so that nothing a client asks
 * for is silently ignored; the fields about how Ollama itself places and keeps models
 * (the hardware options) are taken and documented as without effect here; keep_alive sets how long
 * the model stays loaded (keep-alive.ts).
 */

/** options: the sampling parameters mapped (ollama-params.ts), and the runner settings that have no meaning here. */
const options = {
  type: 'object',
  properties: {
    temperature: { type: 'number', minimum: 0 },
    top_k: { type: 'integer', minimum: 0 },
    top_p: { type: 'number', minimum: 0, maximum: 1 },
    min_p: { type: 'number', minimum: 0, maximum: 1 },
    seed: { type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
    num_predict: { type: 'integer', minimum: -2 },
    stop: { type: 'array', items: { type: 'string' }, maxItems: 16 },
    repeat_penalty: { type: 'number', exclusiveMinimum: 0 },
    repeat_last_n: { type: 'integer', minimum: -1 },
    presence_penalty: { type: 'number' },
    frequency_penalty: { type: 'number' },
    // Checked against the model's context (it cannot grow it); the rest are the runner's business.
    num_ctx: { type: 'integer', minimum: 1 },
    num_thread: { type: 'integer', minimum: 1 },
    num_gpu: { type: 'integer' },
    num_batch: { type: 'integer', minimum: 1 },
    num_keep: { type: 'integer' },
    use_mmap: { type: 'boolean' },
  },
  additionalProperties: false,
} as const;

const keepAlive = { anyOf: [{ type: 'string', maxLength: 32 }, { type: 'number' }] };
const format = { anyOf: [{ enum: ['', 'json'] }, { type: 'object' }] };

const generationFields = {
  model: { type: 'string', minLength: 1 },
  stream: { type: 'boolean' },
  format,
  options,
  keep_alive: keepAlive,
  think: { type: 'boolean' },
} as const;

export const ollamaChatRequest = {
  type: 'object',
  required: ['model'],
  properties: {
    ...generationFields,
    messages: {
      type: 'array',
      items: {
        type: 'object',
        required: ['role', 'content'],
        properties: {
          role: { enum: ['system', 'user', 'assistant', 'tool'] },
          content: { type: 'string' },
          thinking: { type: 'string' },
        },
        additionalProperties: false,
      },
    },
  },
  additionalProperties: false,
} as const;

export const ollamaGenerateRequest = {
  type: 'object',
  required: ['model'],
  properties: {
    ...generationFields,
    prompt: { type: 'string' },
    system: { type: 'string' },
    /** Text as it is, no chat template. */
    raw: { type: 'boolean' },
  },
  additionalProperties: false,
} as const;

export const ollamaEmbedRequest = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string', minLength: 1 },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2048 }] },
    truncate: { type: 'boolean' },
    /** Matryoshka truncation of every vector (Ollama's `dimensions`). */
    dimensions: { type: 'integer', minimum: 1 },
    options: { type: 'object', additionalProperties: false, properties: { num_thread: { type: 'integer', minimum: 1 } } },
    keep_alive: keepAlive,
  },
  additionalProperties: false,
} as const;

export const ollamaShowRequest = {
  type: 'object',
  properties: {
    model: { type: 'string', minLength: 1 },
    /** The older spelling. */
    name: { type: 'string', minLength: 1 },
    verbose: { type: 'boolean' },
  },
  additionalProperties: false,
} as const;

export interface OllamaOptions {
  temperature?: number;
  top_k?: number;
  top_p?: number;
  min_p?: number;
  seed?: number;
  num_predict?: number;
  stop?: string[];
  repeat_penalty?: number;
  repeat_last_n?: number;
  presence_penalty?: number;
  frequency_penalty?: number;
  num_ctx?: number;
}

interface GenerationBody {
  model: string;
  stream?: boolean;
  format?: '' | 'json' | Record<string, unknown>;
  options?: OllamaOptions;
  keep_alive?: string | number;
  think?: boolean;
}

export interface OllamaChatBody extends GenerationBody {
  messages?: { role: 'system' | 'user' | 'assistant' | 'tool'; content: string; thinking?: string }[];
}

export interface OllamaGenerateBody extends GenerationBody {
  prompt?: string;
  system?: string;
  raw?: boolean;
}

export interface OllamaEmbedBody {
  model: string;
  keep_alive?: string | number;
  input: string | string[];
  truncate?: boolean;
  dimensions?: number;
}

export interface OllamaShowBody {
  model?: string;
  name?: string;
}
