/**
 * The JSON Schemas of the request bodies (checked by lib/server/validation.ts). Unknown fields are
 * errors here; a server that is not --strict checks the top level with them allowed (ignored and
 * logged once, as llama-server does), nested objects always exact.
 */
import { MAX_TOP_LOGPROBS } from '../generation/generate';
import { TOOL_LIMITS } from '../tools/types';

/** The most choices (`n`) one request asks for. */
export const MAX_CHOICES = 8;

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

/** Parameters chat and text completions share. */
const generationFields = {
  model: { type: 'string' },
  temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
  top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
  /** llama-server's and vLLM's sampling fields. */
  top_k: nullable({ type: 'integer', minimum: 0 }),
  min_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
  repetition_penalty: nullable({ type: 'number', exclusiveMinimum: 0, maximum: 10 }),
  max_tokens: nullable({ type: 'integer', minimum: 1 }),
  /** llama-server's: tokens at the start that context shift never drops (with --context-shift). */
  n_keep: nullable({ type: 'integer', minimum: 0 }),
  stop: nullable({ anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 4 }] }),
  seed: nullable({ type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
  frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
  logit_bias: nullable({
    type: 'object',
    propertyNames: { pattern: '^(0|[1-9][0-9]{0,9})$' },
    additionalProperties: { type: 'number', minimum: -100, maximum: 100 },
  }),
  /** Choices per request (generated one after another, so a request holds one slot). */
  n: nullable({ type: 'integer', minimum: 1, maximum: MAX_CHOICES }),
  stream: nullable({ type: 'boolean' }),
  stream_options: nullable({ type: 'object', properties: { include_usage: { type: 'boolean' } }, additionalProperties: false }),
  user: { type: 'string' },
} as const;

/** An image part (OpenAI's shape): accepted by the schema so that the route can answer it with a 400 that says why. */
const imagePart = {
  type: 'object',
  required: ['type', 'image_url'],
  properties: {
    type: { const: 'image_url' },
    image_url: { type: 'object', required: ['url'], properties: { url: { type: 'string' }, detail: { enum: ['auto', 'low', 'high'] } }, additionalProperties: false },
  },
  additionalProperties: false,
};
const textPart = { type: 'object', required: ['type', 'text'], properties: { type: { const: 'text' }, text: { type: 'string' } }, additionalProperties: false };

// A type list, not anyOf: a part's error names its own field.
const messageContent = {
  type: ['string', 'array', 'null'],
  items: { type: 'object', required: ['type'], properties: { type: { enum: ['text', 'image_url'] } }, if: { properties: { type: { const: 'image_url' } } }, then: imagePart, else: textPart },
};

/** A function the model may call (OpenAI's tools[i]); its parameters are checked as a schema when compiled. */
const tool = {
  type: 'object',
  required: ['type', 'function'],
  properties: {
    type: { const: 'function' },
    function: {
      type: 'object',
      required: ['name'],
      properties: {
        name: { type: 'string', pattern: TOOL_LIMITS.namePattern.source },
        description: { type: 'string' },
        parameters: { type: 'object' },
        strict: nullable({ type: 'boolean' }),
      },
      additionalProperties: false,
    },
  },
  additionalProperties: false,
};

/** A call in an assistant message (arguments: JSON text, as OpenAI sends it). */
const toolCall = {
  type: 'object',
  required: ['id', 'type', 'function'],
  properties: {
    id: { type: 'string' },
    type: { const: 'function' },
    function: { type: 'object', required: ['name', 'arguments'], properties: { name: { type: 'string' }, arguments: { type: 'string' } }, additionalProperties: false },
  },
  additionalProperties: false,
};

export const chatCompletionRequest = {
  type: 'object',
  required: ['model', 'messages'],
  properties: {
    ...generationFields,
    messages: {
      type: 'array',
      minItems: 1,
      items: {
        type: 'object',
        required: ['role'],
        properties: {
          role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
          content: messageContent,
          name: { type: 'string' },
          tool_call_id: { type: 'string' },
          reasoning_content: { type: 'string' },
          tool_calls: nullable({ type: 'array', maxItems: TOOL_LIMITS.maxTools, items: toolCall }),
        },
        additionalProperties: false,
      },
    },
    max_completion_tokens: nullable({ type: 'integer', minimum: 1 }),
    response_format: {
      type: 'object',
      required: ['type'],
      properties: {
        type: { enum: ['text', 'json_object', 'json_schema'] },
        json_schema: {
          type: 'object',
          required: ['name'],
          properties: {
            name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
            description: { type: 'string' },
            schema: { type: ['object', 'boolean'] },
            strict: nullable({ type: 'boolean' }),
          },
          additionalProperties: false,
        },
      },
      additionalProperties: false,
    },
    logprobs: nullable({ type: 'boolean' }),
    top_logprobs: nullable({ type: 'integer', minimum: 0, maximum: MAX_TOP_LOGPROBS }),
    tools: nullable({ type: 'array', maxItems: TOOL_LIMITS.maxTools, items: tool }),
    tool_choice: nullable({
      anyOf: [
        { enum: ['auto', 'none', 'required'] },
        {
          type: 'object',
          required: ['type', 'function'],
          properties: { type: { const: 'function' }, function: { type: 'object', required: ['name'], properties: { name: { type: 'string' } }, additionalProperties: false } },
          additionalProperties: false,
        },
      ],
    }),
    parallel_tool_calls: nullable({ type: 'boolean' }),
    /** The chat template's switches (vLLM's field): enable_thinking turns Qwen3's thinking on. */
    chat_template_kwargs: {
      type: 'object',
      properties: { enable_thinking: { type: 'boolean' } },
      // Other switches a template reads: plain values only (no text that could carry markup into the prompt).
      additionalProperties: { anyOf: [{ type: 'boolean' }, { type: 'number' }, { type: 'null' }, { type: 'string', pattern: '^[A-Za-z0-9_.-]{0,64}$' }] },
      propertyNames: { pattern: '^[A-Za-z_][A-Za-z0-9_]{0,63}$' },
      maxProperties: 32,
    },
    /** Passed to the template as `reasoning_effort` (templates that read it: gpt-oss's). */
    reasoning_effort: nullable({ enum: ['none', 'minimal', 'low', 'medium', 'high'] }),
  },
  additionalProperties: false,
} as const;

export const completionRequest = {
  type: 'object',
  required: ['model', 'prompt'],
  properties: {
    ...generationFields,
    prompt: {
      anyOf: [
        { type: 'string' },
        { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 1 },
        { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1 },
      ],
    },
    /** The legacy completions' count of alternatives per token (OpenAI: at most 5). */
    logprobs: nullable({ type: 'integer', minimum: 0, maximum: 5 }),
  },
  additionalProperties: false,
} as const;

export const embeddingRequest = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string' },
    /** Texts, or token ids (one sequence or several), as OpenAI takes them. */
    input: {
      anyOf: [
        { type: 'string' },
        { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2048 },
        { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1 },
        { type: 'array', items: { type: 'array', items: { type: 'integer', minimum: 0 }, minItems: 1 }, minItems: 1, maxItems: 2048 },
      ],
    },
    encoding_format: { enum: ['float', 'base64'] },
    /** Matryoshka truncation of every vector (at most the model's dimension). */
    dimensions: { type: 'integer', minimum: 1 },
    user: { type: 'string' },
  },
  additionalProperties: false,
} as const;

/** The most documents one rerank request scores (Cohere's bound). */
export const MAX_RERANK_DOCUMENTS = 1000;

/** POST /v1/rerank and /rerank, as llama-server, Jina and Cohere clients send it. */
export const rerankRequest = {
  type: 'object',
  required: ['query', 'documents'],
  properties: {
    /** Optional when the server has one reranker (llama-server's). */
    model: { type: 'string' },
    query: { type: 'string' },
    documents: {
      type: 'array',
      minItems: 1,
      maxItems: MAX_RERANK_DOCUMENTS,
      items: { anyOf: [{ type: 'string' }, { type: 'object', required: ['text'], properties: { text: { type: 'string' } }, additionalProperties: false }] },
    },
    top_n: nullable({ type: 'integer', minimum: 1 }),
    return_documents: nullable({ type: 'boolean' }),
    user: { type: 'string' },
  },
  additionalProperties: false,
} as const;

/** llama-server's POST /tokenize (the served text model's tokenizer; `model` may name it). */
export const tokenizeRequest = {
  type: 'object',
  required: ['content'],
  properties: { model: { type: 'string' }, content: { type: 'string' }, add_special: { type: 'boolean' }, with_pieces: { type: 'boolean' } },
  additionalProperties: false,
} as const;

/** The most ids one POST /detokenize decodes (the decode runs on the event loop). */
export const MAX_DETOKENIZE_IDS = 65536;

export const detokenizeRequest = {
  type: 'object',
  required: ['tokens'],
  properties: { model: { type: 'string' }, tokens: { type: 'array', items: { type: 'integer', minimum: 0 }, maxItems: MAX_DETOKENIZE_IDS } },
  additionalProperties: false,
} as const;
