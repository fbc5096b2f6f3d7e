/**
 * What clients send that they should not: malformed JSON, wrong content types, oversized bodies,
 * unknown routes and methods, random bytes. Every answer is OpenAI's error JSON with the right
 * status, and the server keeps serving.
 */
import * as net from 'node:net';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture } from '../helpers/fixtures';
import { mulberry32 } from '../helpers/rng';
import { rawRequest, startServer, type Running } from './server-helpers';

let model: Model;
let running: Running;
const json = { 'Content-Type': 'application/json' };

beforeAll(async () => {
  model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin') });
  running = await startServer({ model, modelId: 'stories', maxBodyBytes: 4096 });
});

afterAll(async () => {
  await running.stop();
  model.dispose();
});

const post = (path: string, body: string, headers: Record<string, string> = json) => rawRequest(running.origin, path, { method: 'POST', headers, body });

function expectError(response: { status: number; body: any }, status: number): void {
  expect(response.status).toBe(status);
  const { error } = response.body;
  expect(Object.keys(error).sort()).toEqual(['code', 'message', 'param', 'type']);
  expect(typeof error.message === 'string' && typeof error.type === 'string').toBe(true);
}

async function stillServing(): Promise<void> {
  const ok = await post('/v1/completions', JSON.stringify({ model: 'stories', prompt: [1], max_tokens: 3, temperature: 0 }));
  expect(ok.status).toBe(200);
  expect(ok.body.usage.completion_tokens).toBe(3);
}

describe('misuse', () => {
  it('400 for malformed JSON, an empty body, a body that is not an object, wrong types deep inside', async () => {
    expectError(await post('/v1/completions', '{"model": "stories", "prompt": '), 400);
    expectError(await post('/v1/completions', ''), 400);
    expectError(await post('/v1/completions', '[1, 2]'), 400);
    expectError(await post('/v1/completions', 'null'), 400);
    const deep = await post('/v1/chat/completions', JSON.stringify({ model: 'stories', messages: [{ role: 'user', content: [{ type: 'image_url', text: 'x' }] }] }));
    expectError(deep, 400);
    expect(deep.body.error.param).toBe('messages[0].content[0].image_url'); // an image part without its image_url
    // A well-formed image part: a one-line 400 naming it (chat reads text; Moondream answers through model.answer).
    const image = await post('/v1/chat/completions', JSON.stringify({ model: 'stories', messages: [{ role: 'user', content: [{ type: 'text', text: 'What is it?' }, { type: 'image_url', image_url: { url: 'data:image/png;base64,iVBORw0KGgo=' } }] }] }));
    expectError(image, 400);
    expect(image.body.error.param).toBe('messages[0].content[1].image_url');
    expect(image.body.error.message).toMatch(/image parts/);
    expect(image.body.error.message).not.toMatch(/\n/);
    const part = await post('/v1/chat/completions', JSON.stringify({ model: 'stories', messages: [{ role: 'user', content: [{ type: 'input_audio', text: 'x' }] }] }));
    expect(part.body.error.param).toBe('messages[0].content[0].type');
    const role = await post('/v1/chat/completions', JSON.stringify({ model: 'stories', messages: [{ role: 'wizard', content: 'x' }] }));
    expect(role.body.error.param).toBe('messages[0].role');
    await stillServing();
  });

  it('413 past the body limit, 415 for a content type that is not JSON', async () => {
    const big = JSON.stringify({ model: 'stories', prompt: 'x'.repeat(10_000) });
    expectError(await post('/v1/completions', big), 413);
    expectError(await post('/v1/completions', '{}', { 'Content-Type': 'text/plain' }), 415);
    await stillServing();
  });

  it('404 for unknown routes, 405 for wrong methods', async () => {
    expectError(await rawRequest(running.origin, '/v1/nothing'), 404);
    expectError(await rawRequest(running.origin, '/v1/completions'), 405);
    expectError(await post('/v1/models', '{}'), 405);
    expectError(await rawRequest(running.origin, '/v1/models/none'), 404);
    expectError(await rawRequest(running.origin, '/v1/models/%E0%A4%A'), 400);
  });

  it('survives random bodies, random JSON and a raw socket speaking garbage', async () => {
    const rand = mulberry32(5);
    const values = [null, true, -1, 1e308, 'x', [], {}, [1, 'a'], { a: 1 }, 'NaN', 2 ** 53];
    const fields = ['model', 'prompt', 'messages', 'max_tokens', 'temperature', 'stop', 'logit_bias', 'stream', 'seed', 'response_format', 'n', 'input'];
    for (let i = 0; i < 60; i++) {
      const body: Record<string, unknown> = { model: 'stories' };
      for (const f of fields) if (rand() < 0.3) body[f] = values[Math.floor(rand() * values.length)];
      const path = ['/v1/completions', '/v1/chat/completions', '/v1/embeddings'][i % 3];
      const response = await post(path, JSON.stringify(body));
      expect([200, 400, 404]).toContain(response.status);
    }
    for (let i = 0; i < 20; i++) {
      const bytes = Buffer.from(Array.from({ length: 1 + Math.floor(rand() * 200) }, () => Math.floor(rand() * 256)));
      expect((await post('/v1/chat/completions', bytes.toString('latin1'))).status).toBe(400);
    }
    const { port } = new URL(running.origin);
    await new Promise<void>((resolve) => {
      const socket = net.connect(Number(port), '127.0.0.1', () => socket.end('GARBAGE / NOTHTTP\r\n\r\n\x00\x01\x02'));
      socket.on('close', () => resolve());
      socket.on('error', () => resolve());
      socket.resume();
    });
    await stillServing();
  });
});
