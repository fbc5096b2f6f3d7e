/**
 * A Qwen3-MoE model (test/engines/qwen3-moe-models.ts: its HF folder and the GGUF files weightmap
 * converts it to) where a dense decoder works: loadModel from both formats (the f32 GGUF generates
 * what the HF folder does: decoder-qwen3-moe.test.ts has both within 1.1e-5 of llama.cpp's logits),
 * chat, and the server's batched decoding (concurrent streams, up to 4 decoded together, each with
 * the text of a single run).
 */
import OpenAI from 'openai';
import { convert } from '../../lib/formats/writing/convert';
import { loadModel, type Model } from '../../lib/models/model';
import { testWorkspace } from '../helpers/workspace';
import { qwen3MoeFolder, tinyQwen3Moe } from '../engines/qwen3-moe-models';
import { startServer, type Running } from './server-helpers';

const ws = testWorkspace('qwen3moe-model-');
const PROMPTS = ['Once upon a time', 'The little dog', 'One day, Lily'];
const files: Record<'hf' | 'f32' | 'q8_0', string> = { hf: '', f32: '', q8_0: '' };
const models: Model[] = [];

async function load(file: string): Promise<Model> {
  const model = await loadModel(file, { threads: 2 });
  models.push(model);
  return model;
}

beforeAll(async () => {
  files.hf = qwen3MoeFolder(tinyQwen3Moe(), ws.fresh('hf'));
  files.f32 = ws.fresh('moe.f32.gguf');
  await convert(files.hf, files.f32, { to: 'gguf' });
  files.q8_0 = ws.fresh('moe.q8_0.gguf');
  await convert(files.hf, files.q8_0, { to: 'gguf', quant: 'q8_0' });
}, 120_000);

afterAll(() => {
  for (const m of models) m.dispose();
});

test('loadModel: the HF folder and its f32 GGUF generate the same greedy text; chat replies', async () => {
  const hf = await load(files.hf);
  const gguf = await load(files.f32);
  for (const prompt of PROMPTS) {
    const text = await hf.generate(prompt, { maxTokens: 10, temperature: 0 }).text();
    expect(text.length).toBeGreaterThan(0);
    expect(await gguf.generate(prompt, { maxTokens: 10, temperature: 0 }).text()).toBe(text);
  }
  const reply = await hf.chat([{ role: 'user', content: 'Hi!' }], { maxTokens: 6, temperature: 0, enableThinking: false }).text();
  expect(reply).toBe(await gguf.chat([{ role: 'user', content: 'Hi!' }], { maxTokens: 6, temperature: 0, enableThinking: false }).text());
});

describe('the server (Q8_0 GGUF)', () => {
  let model: Model;
  let running: Running;
  beforeAll(async () => {
    model = await load(files.q8_0);
    running = await startServer({ model, modelId: 'moe', maxActive: 4, maxQueued: 16 });
  });
  afterAll(async () => {
    await running?.stop();
  });

  test('batched decoding: concurrent streams each with the single greedy text', async () => {
    const expected = new Map<string, string>();
    for (const prompt of PROMPTS) expected.set(prompt, await model.generate(prompt, { maxTokens: 12, temperature: 0 }).text());
    const client: OpenAI = running.client();
    const prompts = Array.from({ length: 9 }, (_, i) => PROMPTS[i % PROMPTS.length]);
    const results = await Promise.all(prompts.map(async (prompt) => {
      const stream = await client.completions.create({ model: 'moe', prompt, max_tokens: 12, temperature: 0, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      return text;
    }));
    results.forEach((text, i) => expect(text).toBe(expected.get(prompts[i])));
  });
});
