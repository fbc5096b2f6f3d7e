/**
 * 50 concurrent streaming clients through the openai client on stories260K: every request
 * completes with the text of a single greedy run (none lost, none mixed up with another), round
 * after round, and no session (KV cache) outlives its request beyond the pool's bounded idle set.
 * (RSS is the allocator's business, not a leak signal: its figure lives in scripts/bench/serve.js.)
 */
import OpenAI from 'openai';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture } from '../helpers/fixtures';
import { startServer, type Running } from './server-helpers';

const CLIENTS = 50;
const ROUNDS = 4;
const PROMPTS = ['Once upon a time', 'The little dog', 'One day, Lily'];

let model: Model;
let running: Running;

beforeAll(async () => {
  model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin') });
  running = await startServer({ model, modelId: 'stories', maxActive: 4, maxQueued: CLIENTS });
});

afterAll(async () => {
  await running.stop();
  model.dispose();
});

async function streamText(client: OpenAI, prompt: string): Promise<{ text: string; finish: string | null }> {
  const stream = await client.completions.create({ model: 'stories', prompt, max_tokens: 40, temperature: 0, stream: true });
  let text = '';
  let finish: string | null = null;
  for await (const chunk of stream) {
    text += chunk.choices[0]?.text ?? '';
    finish = chunk.choices[0]?.finish_reason ?? finish;
  }
  return { text, finish };
}

describe('50 concurrent streams', () => {
  it('all complete with the single greedy text, round after round, sessions released', async () => {
    const expected = new Map<string, string>();
    for (const prompt of PROMPTS) expected.set(prompt, await model.generate(prompt, { maxTokens: 40 }).text());
    const client = running.client();
    for (let round = 0; round < ROUNDS; round++) {
      const prompts = Array.from({ length: CLIENTS }, (_, i) => PROMPTS[(i + round) % PROMPTS.length]);
      const results = await Promise.all(prompts.map((prompt) => streamText(client, prompt)));
      results.forEach((result, i) => expect(result).toEqual({ text: expected.get(prompts[i]), finish: 'length' }));
      expect(running.server.handler.scheduler!.active + running.server.handler.scheduler!.queued).toBe(0);
      // 50 requests ran with up to 4 at once; afterwards none is busy and at most the pool's 2 idle caches remain.
      expect(model.sessions.busy).toBe(0);
      expect(model.sessions.idle).toBeLessThanOrEqual(2);
    }
  });
});
