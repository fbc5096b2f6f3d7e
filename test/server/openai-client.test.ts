/**
 * The server through the official openai client on stories260K (llama2.c) and the MiniLM embedder:
 * completions (whole and streamed) against llama2.c's golden greedy text, embeddings equal to
 * Embedder.embed, and the errors: 401, 400 (naming the field), 404, 413, 429 with Retry-After.
 */
import * as fs from 'node:fs';
import OpenAI from 'openai';
import { loadEmbedder, type Embedder } from '../../lib/models/embedder';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture, readJson } from '../helpers/fixtures';
import { rawRequest, startServer, until, type Running } from './server-helpers';

const KEY = 'test-key-0123456789';
const GOLDEN = fs.readFileSync(fixture('llama-stories260k', 'expected_greedy_200steps.txt'), 'utf8');
const GOLDEN_TOKENS: number[] = readJson('llama-stories260k', 'expected.json').greedy.tokens;

let model: Model;
let embedder: Embedder;
let running: Running;
let client: OpenAI;

beforeAll(async () => {
  model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin') });
  embedder = await loadEmbedder(fixture('embd-minilm-tiny', 'model.weights'));
  running = await startServer({ model, embedder, apiKey: KEY, modelId: 'stories', embedderId: 'minilm', maxBodyBytes: 64 * 1024 });
  client = running.client();
});

afterAll(async () => {
  await running.stop();
  model.dispose();
  embedder.dispose();
});

describe('completions', () => {
  it("returns llama2.c's greedy text after BOS, with exact usage", async () => {
    const completion = await client.completions.create({ model: 'stories', prompt: [1], max_tokens: 40, temperature: 0 });
    expect(completion.object).toBe('text_completion');
    expect(GOLDEN.startsWith(completion.choices[0].text)).toBe(true);
    expect(completion.choices[0].text).toBe(model.tokenizer.decode([1, ...GOLDEN_TOKENS.slice(0, 40)], { skipSpecialTokens: true }));
    expect(completion.choices[0].finish_reason).toBe('length');
    expect(completion.usage).toEqual({ prompt_tokens: 1, completion_tokens: 40, total_tokens: 41 });
  });

  it('streams the same text, and the usage last when asked', async () => {
    const stream = await client.completions.create({ model: 'stories', prompt: 'Once upon a time', max_tokens: 30, temperature: 0, stream: true, stream_options: { include_usage: true } });
    let text = '';
    const finishes: (string | null)[] = [];
    let usage: OpenAI.CompletionUsage | undefined | null;
    for await (const chunk of stream) {
      for (const choice of chunk.choices) {
        text += choice.text;
        finishes.push(choice.finish_reason);
      }
      if (chunk.usage) usage = chunk.usage;
    }
    const single = await model.generate('Once upon a time', { maxTokens: 30 }).text();
    expect(text).toBe(single);
    expect(finishes.at(-1)).toBe('length');
    expect(usage).toEqual({ prompt_tokens: model.encode('Once upon a time').length, completion_tokens: 30, total_tokens: model.encode('Once upon a time').length + 30 });
  });

  it('caps max_tokens by the context, and refuses a prompt that fills it', async () => {
    const prompt = Array.from({ length: model.contextLength - 3 }, () => 1);
    const completion = await client.completions.create({ model: 'stories', prompt, max_tokens: 1000, temperature: 0, logit_bias: { 1: -100, 2: -100 } });
    expect(completion.usage?.completion_tokens).toBe(3);
    expect(completion.choices[0].finish_reason).toBe('length');
    const full = Array.from({ length: model.contextLength }, () => 1);
    await expect(client.completions.create({ model: 'stories', prompt: full, max_tokens: 5 })).rejects.toMatchObject({ status: 400, code: 'context_length_exceeded', param: 'prompt' });
  });
});

describe('embeddings', () => {
  const texts = ['The cat sat on the mat.', 'A completely different sentence, with commas.', ''];

  it('equal Embedder.embed, base64 (the client default) and float', async () => {
    const expected = await embedder.embed(texts);
    const viaBase64 = await client.embeddings.create({ model: 'minilm', input: texts });
    const viaFloat = await client.embeddings.create({ model: 'minilm', input: texts, encoding_format: 'float' });
    for (const response of [viaBase64, viaFloat]) {
      expect(response.data.map((d) => d.index)).toEqual([0, 1, 2]);
      response.data.forEach((d, i) => expect(Float32Array.from(d.embedding)).toEqual(expected[i]));
      const tokens = texts.reduce((n, t) => n + embedder.tokenizer.encode(t, { maxLength: embedder.maxSeqLength }).length, 0);
      expect(response.usage).toEqual({ prompt_tokens: tokens, total_tokens: tokens });
    }
    const single = await client.embeddings.create({ model: 'minilm', input: texts[0], encoding_format: 'float' });
    expect(Float32Array.from(single.data[0].embedding)).toEqual(expected[0]);
  });

  it('dimensions: the first components of the unnormalized vector, normalized again (Matryoshka)', async () => {
    const full = await embedder.embed(texts.slice(0, 2), { normalize: false });
    for (const dimensions of [1, 7, embedder.dimension - 1]) {
      const response = await client.embeddings.create({ model: 'minilm', input: texts.slice(0, 2), dimensions });
      response.data.forEach((d, i) => {
        const head = Array.from(full[i].subarray(0, dimensions));
        const norm = Math.sqrt(head.reduce((s, x) => s + x * x, 0));
        expect(d.embedding).toHaveLength(dimensions);
        d.embedding.forEach((x, j) => expect(Math.abs(x - head[j] / norm)).toBeLessThan(1e-6));
      });
    }
    await expect(client.embeddings.create({ model: 'minilm', input: 'x', dimensions: embedder.dimension + 1 })).rejects.toMatchObject({ status: 400, param: 'dimensions' });
    await expect(client.embeddings.create({ model: 'minilm', input: 'x', dimensions: 0 })).rejects.toMatchObject({ status: 400 });
  });

  it('token-id inputs, one sequence or several, embed as the texts they encode', async () => {
    const ids = texts.slice(0, 2).map((t) => Array.from(embedder.tokenizer.encode(t)));
    const expected = await embedder.embed(texts.slice(0, 2));
    const several = await client.embeddings.create({ model: 'minilm', input: ids, encoding_format: 'float' });
    several.data.forEach((d, i) => expect(Float32Array.from(d.embedding)).toEqual(expected[i]));
    const one = await client.embeddings.create({ model: 'minilm', input: ids[0], encoding_format: 'float' });
    expect(Float32Array.from(one.data[0].embedding)).toEqual(expected[0]);
    expect(one.usage.prompt_tokens).toBe(ids[0].length);
    const vocab = embedder.config.vocabSize;
    await expect(client.embeddings.create({ model: 'minilm', input: [[1, vocab]] })).rejects.toMatchObject({ status: 400, param: 'input[0]' });
    const long = Array.from({ length: embedder.maxSeqLength + 1 }, () => 1);
    await expect(client.embeddings.create({ model: 'minilm', input: long })).rejects.toMatchObject({ status: 400, param: 'input' });
  });
});

describe('models and health', () => {
  it('lists both models; /health needs no key', async () => {
    const list = await client.models.list();
    expect(list.data.map((m) => m.id)).toEqual(['stories', 'minilm']);
    expect((await client.models.retrieve('minilm')).id).toBe('minilm');
    const health = await rawRequest(running.origin, '/health');
    expect(health).toMatchObject({ status: 200, body: { status: 'ok' } });
  });
});

describe('errors', () => {
  it('401 without the key or with a wrong one', async () => {
    await expect(running.client('wrong-key').models.list()).rejects.toMatchObject({ status: 401, code: 'invalid_api_key' });
    await expect(running.client(KEY.slice(0, -1)).completions.create({ model: 'stories', prompt: 'x' })).rejects.toBeInstanceOf(OpenAI.AuthenticationError);
    const bare = await rawRequest(running.origin, '/v1/models');
    expect(bare.status).toBe(401);
    expect(bare.body.error).toMatchObject({ type: 'invalid_request_error', code: 'invalid_api_key' });
  });

  it('unknown fields: ignored by default (as llama-server does), a 400 naming the field with strict', async () => {
    const ignored = await client.completions.create({ model: 'stories', prompt: 'x', max_tokens: 2, frobnicate: true } as never);
    expect(ignored.choices).toHaveLength(1);
    // Nested objects stay exact: a misspelt option inside one is still refused.
    await expect(client.completions.create({ model: 'stories', prompt: 'x', stream: true, stream_options: { include_usag: true } } as never)).rejects.toMatchObject({
      status: 400,
      param: 'stream_options.include_usag',
    });
    const strict = await startServer({ model, apiKey: KEY, modelId: 'stories', strict: true });
    try {
      await expect(strict.client(KEY).completions.create({ model: 'stories', prompt: 'x', max_tokens: 2, frobnicate: true } as never)).rejects.toMatchObject({ status: 400, param: 'frobnicate' });
    } finally {
      await strict.stop();
    }
  });

  it('400 naming the field: wrong types, out-of-range values, token ids outside the vocabulary', async () => {
    const cases: [Record<string, unknown>, string][] = [
      [{ temperature: 'hot' }, 'temperature'],
      [{ temperature: 3 }, 'temperature'],
      [{ max_tokens: 0 }, 'max_tokens'],
      [{ stop: [1] }, 'stop'],
      [{ n: 9 }, 'n'],
      [{ logit_bias: { 9999: 1 } }, 'logit_bias.9999'],
      [{ prompt: [600] }, 'prompt'],
      [{ stream_options: { include_usage: 'yes' } }, 'stream_options.include_usage'],
    ];
    for (const [extra, param] of cases) {
      const request = { model: 'stories', prompt: 'x', max_tokens: 2, ...extra };
      await expect(client.completions.create(request as never)).rejects.toMatchObject({ status: 400, param });
    }
    await expect(client.embeddings.create({ model: 'minilm', input: [-1 as never] })).rejects.toMatchObject({ status: 400, param: 'input' });
    await expect(client.completions.create({ prompt: 'x' } as never)).rejects.toMatchObject({ status: 400, param: 'model' });
  });

  it('404 for a model not served, and for a chat on a model without a chat template: 400', async () => {
    await expect(client.completions.create({ model: 'gpt-4o', prompt: 'x' })).rejects.toMatchObject({ status: 404, code: 'model_not_found' });
    await expect(client.embeddings.create({ model: 'stories', input: 'x' })).rejects.toMatchObject({ status: 404 });
    await expect(client.chat.completions.create({ model: 'stories', messages: [{ role: 'user', content: 'hi' }] })).rejects.toMatchObject({ status: 400, param: 'messages' });
  });

  it('429 with Retry-After when every slot is busy and the queue is full; a queued request runs once a slot frees', async () => {
    const busy = await startServer({ model, apiKey: KEY, modelId: 'stories', maxActive: 1, maxQueued: 1 });
    try {
      const scheduler = busy.server.handler.scheduler!;
      // Hold the only slot: a generation suspended after its first piece.
      const held = scheduler.submit({ kind: 'text', prompt: [1], options: { maxTokens: 50 } }, new AbortController().signal)[Symbol.asyncIterator]();
      await held.next();
      expect(scheduler.active).toBe(1);
      const queued = busy.client().completions.create({ model: 'stories', prompt: [1], max_tokens: 5, temperature: 0 });
      await until(() => scheduler.queued === 1);
      const refused = await rawRequest(busy.origin, '/v1/completions', {
        method: 'POST',
        headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' },
        body: JSON.stringify({ model: 'stories', prompt: 'x' }),
      });
      expect(refused.status).toBe(429);
      expect(refused.headers.get('retry-after')).toBe('1');
      expect(refused.body.error.code).toBe('server_busy');
      await expect(busy.client().completions.create({ model: 'stories', prompt: 'x' })).rejects.toBeInstanceOf(OpenAI.RateLimitError);
      await held.return!(undefined);
      const done = await queued;
      expect(done.choices[0].text).toBe(model.tokenizer.decode([1, ...GOLDEN_TOKENS.slice(0, 5)], { skipSpecialTokens: true }));
      expect(scheduler.active).toBe(0);
    } finally {
      await busy.stop();
    }
  });

  it('a client that leaves while queued leaves the queue', async () => {
    const busy = await startServer({ model, modelId: 'stories', maxActive: 1, maxQueued: 4 });
    try {
      const scheduler = busy.server.handler.scheduler!;
      const held = scheduler.submit({ kind: 'text', prompt: [1], options: { maxTokens: 50 } }, new AbortController().signal)[Symbol.asyncIterator]();
      await held.next();
      const controller = new AbortController();
      const leaving = busy.client().completions.create({ model: 'stories', prompt: [1], max_tokens: 5, stream: true }, { signal: controller.signal });
      await until(() => scheduler.queued === 1);
      controller.abort();
      await expect(leaving).rejects.toThrow();
      await until(() => scheduler.queued === 0 && busy.server.handler.inFlight === 0);
      await held.return!(undefined);
      expect(scheduler.active).toBe(0);
    } finally {
      await busy.stop();
    }
  });
});
