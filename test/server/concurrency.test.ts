/**
 * 50 concurrent streaming clients through the openai client on stories260K: every request
 * completes with the text of a single greedy run (none lost, none mixed up with another), round
 * after round, and the process's RSS stays flat (a generous bound; no timing is asserted).
 */
import OpenAI from 'openai';
import { loadModel, type Model } from '../../lib/model';
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
  it('all complete with the single greedy text, round after round, RSS flat', async () => {
    const expected = new Map<string, string>();
    for (const prompt of PROMPTS) expected.set(prompt, await model.generate(prompt, { maxTokens: 40 }).text());
    const client = running.client();
    const rss: number[] = [];
    for (let round = 0; round < ROUNDS; round++) {
      const prompts = Array.from({ length: CLIENTS }, (_, i) => PROMPTS[(i + round) % PROMPTS.length]);
      const results = await Promise.all(prompts.map((prompt) => streamText(client, prompt)));
      results.forEach((result, i) => expect(result).toEqual({ text: expected.get(prompts[i]), finish: 'length' }));
      expect(running.server.handler.scheduler!.active + running.server.handler.scheduler!.queued).toBe(0);
      global.gc?.();
      rss.push(process.memoryUsage().rss);
    }
    // After the first round (warm-up: JIT, pools, sessions), RSS grows by less than 64 MiB over the rest.
    expect(Math.max(...rss.slice(1)) - rss[0]).toBeLessThan(64 * 1024 * 1024);
  });
});
