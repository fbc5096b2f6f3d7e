/**
 * OpenAI's Responses API request (POST /v1/responses): its JSON Schema (checked with ajv by
 * validation.ts, as the other routes' are) and its type. Input items: messages (text parts),
 * function_call and function_call_output (a tool round trip), reasoning (accepted, not rendered).
 */
import { TOOL_LIMITS } from '../tools/types';

const nullable = (schema: Record<string, unknown>) => ({ anyOf: [schema, { type: 'null' }] });

/** Text parts, as a message's content list carries them (images: lib/server's content parts check). */
const textPart = {
  type: 'object',
  required: ['type'],
  properties: {
    type: { enum: ['input_text', 'output_text', 'refusal', 'input_image', 'input_file'] },
    text: { type: 'string' },
    refusal: { type: 'string' },
    annotations: { type: 'array' },
    logprobs: { type: 'array' },
    image_url: nullable({ type: 'string' }),
    file_id: nullable({ type: 'string' }),
    detail: { type: 'string' },
  },
  additionalProperties: false,
};

const messageItem = {
  type: 'object',
  required: ['role', 'content'],
  properties: {
    type: { const: 'message' },
    id: { type: 'string' },
    status: { type: 'string' },
    role: { enum: ['system', 'developer', 'user', 'assistant'] },
    content: { anyOf: [{ type: 'string' }, { type: 'array', items: textPart }] },
  },
  additionalProperties: false,
};

const functionCallItem = {
  type: 'object',
  required: ['type', 'call_id', 'name', 'arguments'],
  properties: { type: { const: 'function_call' }, id: { type: 'string' }, status: { type: 'string' }, call_id: { type: 'string' }, name: { type: 'string' }, arguments: { type: 'string' } },
  additionalProperties: false,
};

const functionOutputItem = {
  type: 'object',
  required: ['type', 'call_id', 'output'],
  properties: {
    type: { const: 'function_call_output' },
    id: nullable({ type: 'string' }),
    status: nullable({ type: 'string' }),
    call_id: { type: 'string' },
    output: { anyOf: [{ type: 'string' }, { type: 'array', items: textPart }] },
  },
  additionalProperties: false,
};

/** An earlier turn's reasoning, as the client hands back a response's output: accepted, not rendered. */
const reasoningItem = {
  type: 'object',
  required: ['type'],
  properties: { type: { const: 'reasoning' }, id: { type: 'string' }, status: { type: 'string' }, summary: { type: 'array' }, content: { type: 'array' }, encrypted_content: nullable({ type: 'string' }) },
  additionalProperties: false,
};

const ITEM_SCHEMAS: Record<string, object> = { message: messageItem, function_call: functionCallItem, function_call_output: functionOutputItem, reasoning: reasoningItem };

const functionTool = {
  type: 'object',
  required: ['type', 'name'],
  properties: {
    type: { const: 'function' },
    name: { type: 'string', pattern: TOOL_LIMITS.namePattern.source },
    description: nullable({ type: 'string' }),
    parameters: nullable({ type: 'object' }),
    strict: nullable({ type: 'boolean' }),
  },
  additionalProperties: false,
};

export const responsesRequest = {
  type: 'object',
  required: ['model', 'input'],
  properties: {
    model: { type: 'string' },
    // A type list, not anyOf: an item's error names its own field rather than 'input must be a string'.
    input: {
      type: ['string', 'array'],
      minItems: 1,
      // Each item checked against the schema its type names (a message may leave the type out).
      items: {
        type: 'object',
        if: { required: ['type'], properties: { type: { not: { const: 'message' } } } },
        then: { required: ['type'], properties: { type: { enum: Object.keys(ITEM_SCHEMAS) } }, allOf: Object.entries(ITEM_SCHEMAS).filter(([k]) => k !== 'message').map(([k, s]) => ({ if: { properties: { type: { const: k } } }, then: s })) },
        else: messageItem,
      },
    },
    instructions: nullable({ type: 'string' }),
    max_output_tokens: nullable({ type: 'integer', minimum: 1 }),
    temperature: nullable({ type: 'number', minimum: 0, maximum: 2 }),
    top_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    stream: nullable({ type: 'boolean' }),
    // A hosted tool (web_search, ...) is refused naming its type, before its missing name.
    tools: nullable({
      type: 'array',
      maxItems: TOOL_LIMITS.maxTools,
      items: { type: 'object', required: ['type'], properties: { type: { const: 'function' } }, if: { properties: { type: { const: 'function' } } }, then: functionTool },
    }),
    tool_choice: nullable({
      anyOf: [
        { enum: ['auto', 'none', 'required'] },
        { type: 'object', required: ['type', 'name'], properties: { type: { const: 'function' }, name: { type: 'string' } }, additionalProperties: false },
      ],
    }),
    parallel_tool_calls: nullable({ type: 'boolean' }),
    text: nullable({
      type: 'object',
      properties: {
        format: {
          type: 'object',
          required: ['type'],
          properties: {
            type: { enum: ['text', 'json_object', 'json_schema'] },
            name: { type: 'string', pattern: '^[A-Za-z0-9_-]{1,64}$' },
            description: { type: 'string' },
            schema: { type: ['object', 'boolean'] },
            strict: nullable({ type: 'boolean' }),
          },
          additionalProperties: false,
        },
        verbosity: nullable({ enum: ['low', 'medium', 'high'] }),
      },
      additionalProperties: false,
    }),
    reasoning: nullable({
      type: 'object',
      properties: { effort: nullable({ enum: ['none', 'minimal', 'low', 'medium', 'high'] }), summary: nullable({ type: 'string' }), generate_summary: nullable({ type: 'string' }) },
      additionalProperties: false,
    }),
    /** Qwen3's thinking switch and the template's other variables, as chat completions take them. */
    chat_template_kwargs: { type: 'object' },
    seed: nullable({ type: 'integer', minimum: 0, maximum: Number.MAX_SAFE_INTEGER }),
    top_k: nullable({ type: 'integer', minimum: 0 }),
    min_p: nullable({ type: 'number', minimum: 0, maximum: 1 }),
    store: nullable({ type: 'boolean' }),
    metadata: nullable({ type: 'object' }),
    user: { type: 'string' },
    previous_response_id: nullable({ type: 'string' }),
    conversation: {},
    background: nullable({ type: 'boolean' }),
    truncation: nullable({ enum: ['auto', 'disabled'] }),
    include: nullable({ type: 'array', items: { type: 'string' } }),
    stream_options: nullable({ type: 'object' }),
  },
  additionalProperties: false,
} as const;

export type ResponsePart = { type: string; text?: string; refusal?: string; image_url?: string | null; file_id?: string | null };

export type ResponseInputItem =
  | { type?: 'message'; role: 'system' | 'developer' | 'user' | 'assistant'; content: string | ResponsePart[] }
  | { type: 'function_call'; id?: string; call_id: string; name: string; arguments: string }
  | { type: 'function_call_output'; call_id: string; output: string | ResponsePart[] }
  | { type: 'reasoning' };

export interface ResponsesBody {
  model: string;
  input: string | ResponseInputItem[];
  instructions?: string | null;
  max_output_tokens?: number | null;
  temperature?: number | null;
  top_p?: number | null;
  stream?: boolean | null;
  tools?: { type: 'function'; name: string; description?: string | null; parameters?: Record<string, unknown> | null; strict?: boolean | null }[] | null;
  tool_choice?: 'auto' | 'none' | 'required' | { type: 'function'; name: string } | null;
  parallel_tool_calls?: boolean | null;
  text?: { format?: { type: 'text' | 'json_object' | 'json_schema'; name?: string; description?: string; schema?: object | boolean; strict?: boolean | null } } | null;
  reasoning?: { effort?: 'none' | 'minimal' | 'low' | 'medium' | 'high' | null } | null;
  chat_template_kwargs?: { enable_thinking?: boolean; [kwarg: string]: unknown };
  seed?: number | null;
  top_k?: number | null;
  min_p?: number | null;
  previous_response_id?: string | null;
  conversation?: unknown;
  background?: boolean | null;
}

