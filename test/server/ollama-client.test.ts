/**
 * The Ollama API through the official `ollama` client: chat (whole and streamed) against the
 * Qwen3-tiny fixture's greedy reply and prompt length, generate in the chat template and raw
 * (stories260K against Model.generate), embed equal to Embedder.embed, the listings, the API key,
 * the errors as Ollama shapes them, and the metrics counting what the client saw.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Ollama } from 'ollama';
import { splitThinking } from '../../lib/generation/chat';
import { loadEmbedder, type Embedder } from '../../lib/models/embedder';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture, readJson } from '../helpers/fixtures';
import { rawRequest, startServer, type Running } from './server-helpers';

const KEY = 'ollama-key-0123456789';
const CASE = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0];
const USER = CASE.prompt.user_text as string;
const REPLY = (CASE.greedy.text as string).replace('<|im_end|>', '');

let qwen: Model;
let stories: Model;
let embedder: Embedder;
let chatServer: Running;
let rawServer: Running;
let ollama: Ollama;

const clientFor = (running: Running, key = KEY) => new Ollama({ host: running.origin, ...(key ? { headers: { Authorization: `Bearer ${key}` } } : {}) });

beforeAll(async () => {
  qwen = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'));
  stories = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin') });
  embedder = await loadEmbedder(fixture('embd-minilm-tiny', 'model.weights'));
  chatServer = await startServer({ model: qwen, embedder, apiKey: KEY, modelId: 'qwen3-tiny', embedderId: 'minilm' });
  rawServer = await startServer({ model: stories, apiKey: KEY, modelId: 'stories' });
  ollama = clientFor(chatServer);
});

afterAll(async () => {
  await Promise.all([chatServer.stop(), rawServer.stop()]);
  qwen.dispose();
  stories.dispose();
  embedder.dispose();
});

describe('chat', () => {
  it("whole: the fixture's greedy reply, its prompt and reply token counts", async () => {
    const response = await ollama.chat({ model: 'qwen3-tiny', messages: [{ role: 'user', content: USER }], options: { temperature: 0 } });
    expect(response.message).toEqual({ role: 'assistant', content: REPLY });
    expect(response.done).toBe(true);
    expect(response.done_reason).toBe('stop');
    expect(response.prompt_eval_count).toBe(CASE.prompt.ids.length);
    expect(response.eval_count).toBe(CASE.greedy.tokens.length);
    expect(response.total_duration).toBeGreaterThanOrEqual(response.eval_duration);
  });

  it('streamed: the same text in parts, the last done with the counts; the :latest tag names the model too', async () => {
    const stream = await ollama.chat({ model: 'qwen3-tiny:latest', messages: [{ role: 'user', content: USER }], options: { temperature: 0 }, stream: true });
    let text = '';
    const parts = [];
    for await (const part of stream) {
      text += part.message.content;
      parts.push(part);
    }
    expect(text).toBe(REPLY);
    expect(parts.length).toBeGreaterThan(2);
    expect(parts.slice(0, -1).every((p) => !p.done)).toBe(true);
    expect(parts.at(-1)).toMatchObject({ done: true, done_reason: 'stop', prompt_eval_count: CASE.prompt.ids.length, eval_count: CASE.greedy.tokens.length, model: 'qwen3-tiny:latest' });
  });

  it('num_predict caps the reply (done_reason length)', async () => {
    const response = await ollama.chat({ model: 'qwen3-tiny', messages: [{ role: 'user', content: USER }], options: { temperature: 0, num_predict: 3 } });
    expect(response.eval_count).toBe(3);
    expect(response.done_reason).toBe('length');
    expect(REPLY.startsWith(response.message.content)).toBe(true);
  });
});

describe('thinking', () => {
  it("think: true returns Qwen3's thinking in message.thinking, whole and streamed, as Model.chat's text splits", async () => {
    const messages = [{ role: 'user' as const, content: USER }];
    const options = { temperature: 0, num_predict: 60 };
    const reference = splitThinking(await qwen.chat(messages, { enableThinking: true, maxTokens: 60, repeatPenalty: 1.1, penaltyLastN: 64 }).text());
    const whole = await ollama.chat({ model: 'qwen3-tiny', messages, think: true, options });
    expect(whole.message.content).toBe(reference.content);
    expect(whole.message.thinking ?? '').toBe(reference.reasoning);
    let thinking = '';
    let content = '';
    for await (const part of await ollama.chat({ model: 'qwen3-tiny', messages, think: true, options, stream: true })) {
      thinking += part.message.thinking ?? '';
      content += part.message.content;
    }
    expect({ thinking, content }).toEqual({ thinking: reference.reasoning, content: reference.content });
  });
});

describe('generate', () => {
  it('in the chat template: the prompt as one user message, as chat answers it', async () => {
    const response = await ollama.generate({ model: 'qwen3-tiny', prompt: USER, options: { temperature: 0 } });
    expect(response.response).toBe(REPLY);
    expect(response.prompt_eval_count).toBe(CASE.prompt.ids.length);
  });

  it("raw on a model without a chat template: Model.generate's greedy text with Ollama's repeat penalty (1.1 over 64), whole and streamed", async () => {
    const client = clientFor(rawServer);
    const expected = await stories.generate('Once upon a time', { maxTokens: 30, repeatPenalty: 1.1, penaltyLastN: 64 }).text();
    const plain = await client.generate({ model: 'stories', prompt: 'Once upon a time', options: { temperature: 0, num_predict: 30, repeat_penalty: 1 } });
    expect(plain.response).toBe(await stories.generate('Once upon a time', { maxTokens: 30 }).text());
    const whole = await client.generate({ model: 'stories', prompt: 'Once upon a time', raw: true, options: { temperature: 0, num_predict: 30 } });
    expect(whole.response).toBe(expected);
    expect(whole).toMatchObject({ done: true, done_reason: 'length', eval_count: 30, prompt_eval_count: stories.encode('Once upon a time').length });
    let streamed = '';
    for await (const part of await client.generate({ model: 'stories', prompt: 'Once upon a time', options: { temperature: 0, num_predict: 30 }, stream: true })) streamed += part.response;
    expect(streamed).toBe(expected);
  });
});

describe('embed, listings, keys and errors', () => {
  it('embed: Embedder.embed, one input or several', async () => {
    const texts = ['The cat sat on the mat.', 'Another sentence entirely.'];
    const expected = await embedder.embed(texts);
    const many = await ollama.embed({ model: 'minilm', input: texts });
    expect(many.embeddings.map((e) => Float32Array.from(e))).toEqual(expected);
    const tokens = texts.reduce((n, t) => n + embedder.tokenizer.encode(t, { maxLength: embedder.maxSeqLength }).length, 0);
    expect(many.prompt_eval_count).toBe(tokens);
    const one = await ollama.embed({ model: 'minilm', input: texts[0] });
    expect(Float32Array.from(one.embeddings[0])).toEqual(expected[0]);
    const long = 'word '.repeat(embedder.maxSeqLength * 2);
    await expect(ollama.embed({ model: 'minilm', input: long, truncate: false })).rejects.toMatchObject({ status_code: 400 });
    expect((await ollama.embed({ model: 'minilm', input: long })).embeddings).toHaveLength(1);
  });

  it('embed with dimensions: the first components of the unnormalized vector, normalized again', async () => {
    const [full] = await embedder.embed(['The cat sat on the mat.'], { normalize: false });
    const head = Array.from(full.subarray(0, 5));
    const norm = Math.sqrt(head.reduce((s, x) => s + x * x, 0));
    const { embeddings } = await ollama.embed({ model: 'minilm', input: 'The cat sat on the mat.', dimensions: 5 });
    expect(embeddings[0]).toHaveLength(5);
    embeddings[0].forEach((x, j) => expect(Math.abs(x - head[j] / norm)).toBeLessThan(1e-6));
    await expect(ollama.embed({ model: 'minilm', input: 'x', dimensions: embedder.dimension + 1 })).rejects.toMatchObject({ status_code: 400 });
  });

  it('version, list, show, ps', async () => {
    const { version } = JSON.parse(fs.readFileSync(path.join(__dirname, '..', '..', 'package.json'), 'utf8')) as { version: string };
    expect(await ollama.version()).toEqual({ version });
    const list = await ollama.list();
    expect(list.models.map((m) => m.name)).toEqual(['qwen3-tiny:latest', 'minilm:latest']);
    expect(list.models[0].size).toBe(fs.statSync(fixture('ajc1-qwen3-tiny', 'model.bin')).size);
    expect(list.models[0].details.format).toBe(qwen.info.format);
    expect(list.models[0].digest).toMatch(/^[0-9a-f]{64}$/);
    const shown = await ollama.show({ model: 'qwen3-tiny' });
    expect(shown.capabilities).toEqual(['completion', 'chat']);
    expect((await ollama.show({ model: 'minilm:latest' })).capabilities).toEqual(['embedding']);
    expect((await ollama.ps()).models.map((m) => m.name)).toEqual(['qwen3-tiny:latest', 'minilm:latest']);
  });

  it('the API key as on /v1; errors are { error } with the status', async () => {
    await expect(clientFor(chatServer, '').list()).rejects.toMatchObject({ status_code: 401 });
    await expect(clientFor(chatServer, 'wrong').chat({ model: 'qwen3-tiny', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status_code: 401 });
    await expect(ollama.chat({ model: 'llama3', messages: [{ role: 'user', content: 'x' }] })).rejects.toMatchObject({ status_code: 404, error: "model 'llama3' not found" });
    await expect(ollama.chat({ model: 'qwen3-tiny', messages: [{ role: 'user', content: 'x' }], options: { mirostat: 2 } })).rejects.toMatchObject({ status_code: 400, error: expect.stringContaining('options.mirostat') });
    await expect(ollama.chat({ model: 'qwen3-tiny', messages: [{ role: 'user', content: 'x' }], options: { num_ctx: 1 << 20 } })).rejects.toMatchObject({ status_code: 400, error: expect.stringContaining('num_ctx') });
    await expect(clientFor(rawServer).generate({ model: 'stories', prompt: 'x', system: 'be brief' })).rejects.toMatchObject({ status_code: 400, error: expect.stringContaining('system') });
    const bare = await rawRequest(chatServer.origin, '/api/tags');
    expect(bare).toMatchObject({ status: 401, body: { error: expect.stringContaining('API key') } });
    const wrongMethod = await rawRequest(chatServer.origin, '/api/chat', { headers: { Authorization: `Bearer ${KEY}` } });
    expect(wrongMethod).toMatchObject({ status: 405, body: { error: 'use POST /api/chat' } });
  });

  it('429 as { error } when every slot is busy and the queue is full; 503 while draining', async () => {
    const busy = await startServer({ model: stories, apiKey: KEY, modelId: 'busy', maxActive: 1, maxQueued: 0 });
    try {
      const held = busy.server.handler.scheduler!.submit({ kind: 'text', prompt: [1], options: { maxTokens: 50 } }, new AbortController().signal)[Symbol.asyncIterator]();
      await held.next();
      await expect(clientFor(busy).generate({ model: 'busy', prompt: 'x', raw: true })).rejects.toMatchObject({ status_code: 429, error: expect.stringContaining('busy') });
      await held.return!(undefined);
      void busy.server.handler.drain();
      await expect(clientFor(busy).list()).rejects.toMatchObject({ status_code: 503, error: 'the server is shutting down' });
    } finally {
      await busy.stop();
    }
  });

  it('format json: constrained to a JSON object', async () => {
    const response = await ollama.chat({ model: 'qwen3-tiny', messages: [{ role: 'user', content: USER }], format: 'json', options: { temperature: 0, num_predict: 40 } });
    if (response.done_reason === 'stop') expect(typeof JSON.parse(response.message.content)).toBe('object');
    else expect(response.message.content.trimStart().startsWith('{')).toBe(true);
  });

  it("the metrics count the Ollama requests: the tokens are the sums of the responses' counts", async () => {
    const server = await startServer({ model: stories, apiKey: KEY, modelId: 'counted' });
    try {
      const client = clientFor(server);
      const responses = await Promise.all([5, 7, 9].map((n) => client.generate({ model: 'counted', prompt: 'The dog', options: { temperature: 0, num_predict: n } })));
      const text = (await rawRequest(server.origin, '/metrics', { headers: { Authorization: `Bearer ${KEY}` } })).body as string;
      const value = (name: string) => Number(new RegExp(`^${name}\\{model="counted"\\} (\\S+)$`, 'm').exec(text)![1]);
      expect(value('weightmap_generation_tokens_total')).toBe(responses.reduce((n, r) => n + r.eval_count, 0));
      expect(value('weightmap_prompt_tokens_total')).toBe(responses.reduce((n, r) => n + r.prompt_eval_count, 0));
      expect(text).toMatch(/^weightmap_http_requests_total\{method="POST",route="\/api\/generate",status="200"\} 3$/m);
    } finally {
      await server.stop();
    }
  });
});
