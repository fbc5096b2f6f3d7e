/**
 * The Responses API (POST /v1/responses, issue #25 item 4) through the official openai client's
 * client.responses.create / .stream, on the tiny Qwen3 model (random weights) with the real Qwen3
 * template: text (whole and streamed, the same text the chat-completions path generates for the
 * same conversation, its token counts the library's), forced function calls that validate (ajv)
 * against the tool's parameters, a tool round trip (the previous output items and a
 * function_call_output fed back: the prompt is the library's for the same conversation), streamed
 * function_call_arguments deltas that add up to the final call, text.format json_schema, and bad
 * requests as one-line 400s naming the Responses field.
 */
import Ajv from 'ajv';
import type OpenAI from 'openai';
import type { Model } from '../../lib/models/model';
import { BOUNDED_TOOLS, loadToolModel } from '../helpers/tool-model';
import { rawRequest, startServer, type Running } from './server-helpers';

const ajv = new Ajv({ strict: false });
const validators = new Map(BOUNDED_TOOLS.map((t) => [t.name, ajv.compile(t.parameters)]));
const TOOLS: OpenAI.Responses.FunctionTool[] = BOUNDED_TOOLS.map((t) => ({ type: 'function', name: t.name, parameters: t.parameters, strict: false }));
const QUESTION = 'Wake me at seven on Monday, and pick a color.';
const INSTRUCTIONS = 'You are terse.';
/** `seed`: a field the Responses types lack (llama-server's and this server's), sent as clients send extra fields. */
const seeded = (seed: number): object => ({ seed });

let model: Model;
let cleanup: () => void;
let running: Running;
let client: OpenAI;

beforeAll(async () => {
  ({ model, cleanup } = await loadToolModel());
  running = await startServer({ model, modelId: 'tiny' });
  client = running.client();
});
afterAll(async () => {
  await running.stop();
  cleanup();
});

function expectValid(call: { name: string; arguments: string }): void {
  const validate = validators.get(call.name);
  expect(validate).toBeDefined();
  expect(validate!(JSON.parse(call.arguments))).toBe(true);
}

describe('text', () => {
  it('the text chat completions generate for the same conversation; usage the prompt as the library encodes it; incomplete at max_output_tokens', async () => {
    const response = await client.responses.create({ model: 'tiny', instructions: INSTRUCTIONS, input: QUESTION, max_output_tokens: 12, temperature: 0 });
    const chat = await client.chat.completions.create({
      model: 'tiny',
      messages: [
        { role: 'system', content: INSTRUCTIONS },
        { role: 'user', content: QUESTION },
      ],
      max_tokens: 12,
      temperature: 0,
    });
    expect(response.object).toBe('response');
    expect(response.id).toMatch(/^resp_/);
    expect(response.output_text).toBe(chat.choices[0].message.content);
    expect(response.output[0]).toMatchObject({ type: 'message', role: 'assistant', status: 'completed' });
    const ids = (await model.chatPrompt([{ role: 'system', content: INSTRUCTIONS }, { role: 'user', content: QUESTION }])).ids;
    expect(response.usage).toMatchObject({ input_tokens: ids.length, output_tokens: 12, total_tokens: ids.length + 12 });
    expect(response.status).toBe('incomplete');
    expect(response.incomplete_details).toEqual({ reason: 'max_output_tokens' });
  });

  it('streamed: response.created first, output_text deltas that add up to the whole response, response.incomplete last', async () => {
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: [{ type: 'input_text', text: QUESTION }] }];
    const whole = await client.responses.create({ model: 'tiny', input, max_output_tokens: 10, temperature: 0 });
    const stream = await client.responses.create({ model: 'tiny', input, max_output_tokens: 10, temperature: 0, stream: true });
    const types: string[] = [];
    let text = '';
    let last: OpenAI.Responses.Response | undefined;
    for await (const event of stream) {
      types.push(event.type);
      if (event.type === 'response.output_text.delta') text += event.delta;
      if (event.type === 'response.incomplete' || event.type === 'response.completed') last = event.response;
    }
    expect(types[0]).toBe('response.created');
    expect(types.at(-1)).toBe('response.incomplete');
    expect(text).toBe(whole.output_text);
    expect(last?.usage).toEqual(whole.usage);
    // The SDK's own accumulator (ResponseStream) builds the same text from the events.
    const helper = client.responses.stream({ model: 'tiny', input, max_output_tokens: 10, temperature: 0 });
    expect((await helper.finalResponse()).output_text).toBe(whole.output_text);
  });

  it('text.format json_schema: the output parses and validates (a union of objects sharing keys too)', async () => {
    const schema = { type: 'object', properties: { color: { enum: ['red', 'green'] }, n: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['color', 'n'], additionalProperties: false };
    // And a union of objects that share keys (run side by side under the mask), properties in any order.
    const shape = {
      anyOf: [
        { type: 'object', properties: { kind: { const: 'circle' }, r: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['kind', 'r'], additionalProperties: false },
        { type: 'object', properties: { kind: { const: 'square' }, side: { type: 'integer', minimum: 1, maximum: 9 }, dark: { type: 'boolean' } }, required: ['kind', 'side'], additionalProperties: false },
      ],
    };
    for (const [format, seed] of [[schema, 1], [schema, 2], [shape, 3], [shape, 4]] as const) {
      const response = await client.responses.create({ model: 'tiny', input: QUESTION, text: { format: { type: 'json_schema', name: 'pick', schema: format, strict: true } }, temperature: 1, ...seeded(seed), max_output_tokens: 60 });
      expect(response.status).toBe('completed');
      expect(ajv.validate(format, JSON.parse(response.output_text))).toBe(true);
    }
  });
});

describe('function calls', () => {
  it("tool_choice 'required': function_call items that validate; a round trip with function_call_output reaches the prompt", async () => {
    const first = await client.responses.create({ model: 'tiny', input: QUESTION, tools: TOOLS, tool_choice: 'required', temperature: 1, ...seeded(3), max_output_tokens: 300 });
    expect(first.status).toBe('completed');
    const calls = first.output.filter((item): item is OpenAI.Responses.ResponseFunctionToolCall => item.type === 'function_call');
    expect(calls).toHaveLength(1);
    expect(calls[0].call_id).toMatch(/^call_/);
    expect(calls[0].id).toMatch(/^fc_/);
    expectValid(calls[0]);

    const result = '{"ok": true}';
    const input: OpenAI.Responses.ResponseInput = [{ role: 'user', content: QUESTION }, ...(first.output as OpenAI.Responses.ResponseInputItem[]), { type: 'function_call_output', call_id: calls[0].call_id, output: result }];
    const second = await client.responses.create({ model: 'tiny', input, tools: TOOLS, temperature: 0, max_output_tokens: 6 });
    const ids = (
      await model.chatPrompt(
        [
          { role: 'user', content: QUESTION },
          { role: 'assistant', content: '', toolCalls: [{ id: calls[0].call_id, name: calls[0].name, arguments: calls[0].arguments }] },
          { role: 'tool', content: result, toolCallId: calls[0].call_id },
        ],
        { tools: BOUNDED_TOOLS },
      )
    ).ids;
    expect(second.usage?.input_tokens).toBe(ids.length);
    expect(model.tokenizer.decode(ids)).toContain(`<tool_response>\n${result}\n</tool_response>`);
  });

  it('a named function is the one called', async () => {
    const response = await client.responses.create({ model: 'tiny', input: QUESTION, tools: TOOLS, tool_choice: { type: 'function', name: 'pick_color' }, temperature: 0 });
    const call = response.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.name).toBe('pick_color');
    expectValid(call);
  });

  it('streamed: output_item.added, function_call_arguments deltas the SDK accumulates into the final call, response.completed', async () => {
    const stream = client.responses.stream({ model: 'tiny', input: QUESTION, tools: TOOLS, tool_choice: 'required', temperature: 0.7, ...seeded(5), max_output_tokens: 300 });
    const types: string[] = [];
    let args = '';
    stream.on('event', (event) => types.push(event.type));
    stream.on('response.function_call_arguments.delta', (event) => (args += event.delta));
    const final = await stream.finalResponse();
    expect(types[0]).toBe('response.created');
    expect(types).toContain('response.output_item.added');
    expect(types.at(-1)).toBe('response.completed');
    const call = final.output.find((item) => item.type === 'function_call') as OpenAI.Responses.ResponseFunctionToolCall;
    expect(call.arguments).toBe(args);
    expectValid(call);
  });

  it('a call cut by max_output_tokens is status incomplete, never a half-written function_call', async () => {
    const response = await client.responses.create({ model: 'tiny', input: QUESTION, tools: TOOLS, tool_choice: 'required', temperature: 0, max_output_tokens: 3 });
    expect(response.status).toBe('incomplete');
    expect(response.output.some((item) => item.type === 'function_call')).toBe(false);
  });
});

describe('bad requests are one-line 400s naming the Responses field', () => {
  const post = (body: object) =>
    rawRequest(running.origin, '/v1/responses', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'tiny', input: QUESTION, max_output_tokens: 2, ...body }),
    });

  it.each([
    ['no input', { input: undefined }, 'input'],
    ['a tool without a name', { tools: [{ type: 'function', parameters: {} }] }, 'tools[0].name'],
    ['a hosted tool', { tools: [{ type: 'web_search' }] }, 'tools[0].type'],
    ['a tool defined twice', { tools: [TOOLS[0], TOOLS[0]] }, 'tools[1].name'],
    ['a named tool that is not defined', { tools: TOOLS, tool_choice: { type: 'function', name: 'nope' } }, 'tool_choice.name'],
    ['a function_call item without call_id', { input: [{ type: 'function_call', name: 'a', arguments: '{}' }] }, 'input[0].call_id'],
    ['an item type that does not exist', { input: [{ type: 'bogus' }] }, 'input[0].type'],
    ['an image part for a model without vision', { instructions: 'Be brief.', input: [{ role: 'user', content: [{ type: 'input_text', text: 'q' }, { type: 'input_image', image_url: 'data:image/png;base64,AAAA' }] }] }, 'input[0].content[1].image_url'],
    ['an image by file_id', { input: [{ role: 'user', content: [{ type: 'input_image', file_id: 'file-1' }] }] }, 'input[0].content[0].image_url'],
    ['previous_response_id', { previous_response_id: 'resp_1' }, 'previous_response_id'],
    ['a schema the mask cannot take', { text: { format: { type: 'json_schema', name: 'x', schema: { type: 'bogus' } } } }, 'text.format.schema'],
    ['tools with text.format', { tools: TOOLS, text: { format: { type: 'json_object' } } }, 'text.format'],
  ])('%s', async (_label, body, param) => {
    const reply = await post(body);
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({ type: 'invalid_request_error', param });
    expect(reply.body.error.message).not.toMatch(/\n/);
  });
});
