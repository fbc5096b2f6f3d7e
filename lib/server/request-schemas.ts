/**
 * The JSON Schemas of the request bodies (checked by lib/server/validation.ts). Unknown fields are
 * errors, so a parameter this server does not implement is never silently ignored.
 */

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

/** Parameters chat and text completions share. */
const generationFields = {
  model: { type: 'string' },
  temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
  top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
  max_tokens: nullable({ type: 'integer', minimum: 1 }),
  stop: nullable({ anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, maxItems: 4 }] }),
  seed: nullable({ type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
  presence_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
  frequency_penalty: nullable({ type: 'number', minimum: -2, maximum: 2 }),
  logit_bias: nullable({
    type: 'object',
    propertyNames: { pattern: '^(0|[1-9][0-9]{0,9})$' },
    additionalProperties: { type: 'number', minimum: -100, maximum: 100 },
  }),
  n: nullable({ type: 'integer', minimum: 1, maximum: 1 }),
  stream: nullable({ type: 'boolean' }),
  stream_options: nullable({ type: 'object', properties: { include_usage: { type: 'boolean' } }, additionalProperties: false }),
  user: { type: 'string' },
} as const;

const messageContent = {
  anyOf: [
    { type: 'string' },
    {
      type: 'array',
      items: { type: 'object', required: ['type', 'text'], properties: { type: { const: 'text' }, text: { type: 'string' } }, additionalProperties: false },
    },
  ],
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
        required: ['role', 'content'],
        properties: {
          role: { enum: ['system', 'developer', 'user', 'assistant', 'tool'] },
          content: messageContent,
          name: { type: 'string' },
          tool_call_id: { type: 'string' },
          reasoning_content: { type: 'string' },
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
    /** The chat template's switches (vLLM's field): enable_thinking turns Qwen3's thinking on. */
    chat_template_kwargs: { type: 'object', properties: { enable_thinking: { type: 'boolean' } }, additionalProperties: false },
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
  },
  additionalProperties: false,
} as const;

export const embeddingRequest = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string' },
    input: { anyOf: [{ type: 'string' }, { type: 'array', items: { type: 'string' }, minItems: 1, maxItems: 2048 }] },
    encoding_format: { enum: ['float', 'base64'] },
    user: { type: 'string' },
  },
  additionalProperties: false,
} as const;
