/**
 * Chat completions through the openai client on the Qwen3-tiny fixture: the fixture's greedy reply
 * and prompt length, streaming, Qwen3 thinking through chat_template_kwargs, response_format
 * (json_schema validated by ajv, json_object), and a client that closes its stream mid-generation.
 */
import Ajv from 'ajv';
import OpenAI from 'openai';
import type { Generation } from '../../lib/generation/generate';
import { splitThinking } from '../../lib/generation/chat';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture, readJson } from '../helpers/fixtures';
import { startServer, until, type Running } from './server-helpers';

const CASE = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0];
const MESSAGES = [{ role: 'user' as const, content: CASE.prompt.user_text as string }];
const REPLY = (CASE.greedy.text as string).replace('<|im_end|>', '');

let model: Model;
let running: Running;
let client: OpenAI;

beforeAll(async () => {
  model = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'));
  running = await startServer({ model, modelId: 'qwen3-tiny' });
  client = running.client();
});

afterAll(async () => {
  await running.stop();
  model.dispose();
});

describe('chat completions', () => {
  it("answer with the fixture's greedy reply; usage counts its prompt and reply tokens", async () => {
    const completion = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, temperature: 0 });
    expect(completion.object).toBe('chat.completion');
    expect(completion.choices[0].message).toMatchObject({ role: 'assistant', content: REPLY });
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.usage).toEqual({ prompt_tokens: CASE.prompt.ids.length, completion_tokens: CASE.greedy.tokens.length, total_tokens: CASE.prompt.ids.length + CASE.greedy.tokens.length });
  });

  it('stream the same reply, role first, usage last', async () => {
    const stream = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, temperature: 0, stream: true, stream_options: { include_usage: true } });
    let content = '';
    const roles: string[] = [];
    let finish: string | null = null;
    let usage: OpenAI.CompletionUsage | null | undefined;
    for await (const chunk of stream) {
      expect(chunk.object).toBe('chat.completion.chunk');
      for (const choice of chunk.choices) {
        if (choice.delta.role) roles.push(choice.delta.role);
        content += choice.delta.content ?? '';
        finish = choice.finish_reason ?? finish;
      }
      if (chunk.usage) usage = chunk.usage;
    }
    expect(roles).toEqual(['assistant']);
    expect(content).toBe(REPLY);
    expect(finish).toBe('stop');
    expect(usage?.completion_tokens).toBe(CASE.greedy.tokens.length);
  });

  it('max_completion_tokens cuts the reply (finish_reason length)', async () => {
    const completion = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, temperature: 0, max_completion_tokens: 5 });
    expect(completion.choices[0].finish_reason).toBe('length');
    expect(completion.usage?.completion_tokens).toBe(5);
    expect(completion.choices[0].message.content).toBe(model.tokenizer.decode(CASE.greedy.tokens.slice(0, 5)));
  });

  it('turn Qwen3 thinking on with chat_template_kwargs.enable_thinking, the thinking apart from the answer', async () => {
    const body = { model: 'qwen3-tiny', messages: MESSAGES, temperature: 0, max_tokens: 60, chat_template_kwargs: { enable_thinking: true } };
    const reference = await model.chat(MESSAGES, { enableThinking: true, maxTokens: 60 }).text();
    const { reasoning, content } = splitThinking(reference);
    const whole = await client.chat.completions.create(body as never as OpenAI.ChatCompletionCreateParamsNonStreaming);
    const message = whole.choices[0].message as OpenAI.ChatCompletionMessage & { reasoning_content?: string };
    expect(message.content).toBe(content);
    expect(message.reasoning_content ?? '').toBe(reasoning);
    const promptTokens = model.tokenizer.encode(model.renderChat(MESSAGES, { enableThinking: true }), { addSpecialTokens: false }).length;
    expect(promptTokens).toBe(CASE.prompt.ids.length - 4); // without the empty think block: <think>, \n\n, </think>, \n\n
    expect(whole.usage?.prompt_tokens).toBe(promptTokens);

    const stream = await client.chat.completions.create({ ...body, stream: true } as never as OpenAI.ChatCompletionCreateParamsStreaming);
    let streamedReasoning = '';
    let streamedContent = '';
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        const delta = choice.delta as { content?: string; reasoning_content?: string };
        streamedReasoning += delta.reasoning_content ?? '';
        streamedContent += delta.content ?? '';
      }
    }
    expect(streamedContent).toBe(content);
    expect(streamedReasoning).toBe(reasoning);
  });
});

describe('response_format', () => {
  const schema = {
    type: 'object',
    properties: {
      city: { enum: ['Paris', 'Berlin', 'Rome'] },
      cafes: { type: 'integer' },
      open_late: { type: 'boolean' },
      tags: { type: 'array', items: { enum: ['busy', 'small', 'quiet'] }, maxItems: 3 },
    },
    required: ['city', 'cafes', 'open_late'],
    additionalProperties: false,
  };

  it('json_schema: the reply parses and validates (ajv), greedy and sampled, streamed or not', async () => {
    const validate = new Ajv().compile(schema);
    const response_format = { type: 'json_schema' as const, json_schema: { name: 'cafes', schema, strict: true } };
    const replies: string[] = [];
    for (const seed of [1, 2]) {
      const completion = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, response_format, temperature: 1, seed, max_tokens: 200 });
      expect(completion.choices[0].finish_reason).toBe('stop');
      replies.push(completion.choices[0].message.content!);
    }
    const stream = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, response_format, temperature: 0, max_tokens: 200, stream: true });
    let streamed = '';
    for await (const chunk of stream) streamed += chunk.choices[0]?.delta.content ?? '';
    replies.push(streamed);
    for (const reply of replies) if (!validate(JSON.parse(reply))) throw new Error(`${reply}: ${JSON.stringify(validate.errors)}`);
  });

  it('json_object: the reply is one JSON object, and the stop token comes as soon as it is complete', async () => {
    // '{}' as one token, pushed up: greedy takes it first; then only a stop token may follow.
    const ids = model.tokenizer.encode('{}');
    expect(ids).toHaveLength(1);
    const completion = await client.chat.completions.create({
      model: 'qwen3-tiny',
      messages: MESSAGES,
      response_format: { type: 'json_object' },
      temperature: 0,
      max_tokens: 50,
      logit_bias: { [ids[0]]: 100 },
    });
    expect(completion.choices[0].message.content).toBe('{}');
    expect(completion.choices[0].finish_reason).toBe('stop');
    expect(completion.usage?.completion_tokens).toBe(2);
    // Without the constraint the same bias repeats '{}' until max_tokens.
    const free = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, temperature: 0, max_tokens: 5, logit_bias: { [ids[0]]: 100 } });
    expect(free.choices[0].message.content).toBe('{}{}{}{}{}');
  });

  it('400 for a schema the constraint cannot enforce, naming it', async () => {
    const response_format = { type: 'json_schema' as const, json_schema: { name: 'x', schema: { type: 'number', multipleOf: 3 } } };
    await expect(client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, response_format })).rejects.toMatchObject({
      status: 400,
      param: 'response_format.json_schema.schema',
    });
  });
});

describe('a client that closes its stream', () => {
  it('aborts its generation at once: the slot frees, the generation stops short of max_tokens', async () => {
    const generations: Generation[] = [];
    const original = model.chat.bind(model);
    const spy = jest.spyOn(model, 'chat').mockImplementation((messages, options) => {
      const generation = original(messages, options);
      generations.push(generation);
      return generation;
    });
    try {
      const maxTokens = model.contextLength - CASE.prompt.ids.length;
      // The stop tokens banned: without the abort it would run to the end of the context.
      const stream = await client.chat.completions.create({
        model: 'qwen3-tiny',
        messages: MESSAGES,
        temperature: 0,
        max_tokens: maxTokens,
        logit_bias: { 151643: -100, 151645: -100 },
        stream: true,
      });
      for await (const chunk of stream) if (chunk.choices[0]?.delta.content) break; // break closes the stream
      const scheduler = running.server.handler.scheduler!;
      await until(() => scheduler.active === 0 && running.server.handler.inFlight === 0);
      expect(generations).toHaveLength(1);
      expect(generations[0].stopReason).toBeUndefined(); // aborted, not ended
      expect(generations[0].tokens.length).toBeLessThan(maxTokens);
    } finally {
      spy.mockRestore();
    }
  });
});
