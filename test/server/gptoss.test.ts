/**
 * The tiny gpt-oss GGUF (test/engines/gptoss-models.ts; MXFP4 experts) where a dense decoder
 * works: loadModel and generate, and the server's batched decoding (concurrent streams, up to 4
 * decoded together, each with the text of a single run). Its vocabulary is a placeholder (letters,
 * digits; the real o200k_harmony tokenizer is another test's), so the prompts are letters.
 * Skipped without llama.cpp's gguf-py (gptossUsable).
 */
import OpenAI from 'openai';
import { loadModel, type Model } from '../../lib/models/model';
import { testWorkspace } from '../helpers/workspace';
import { gptossFiles, gptossUsable } from '../engines/gptoss-models';
import { startServer, type Running } from './server-helpers';

const ws = testWorkspace('gptoss-model-');
const PROMPTS = ['Onceuponatime', 'Thelittledog', 'OnedayLily42'];
const suite = gptossUsable ? describe : describe.skip;

suite('the server (gpt-oss, MXFP4 experts)', () => {
  let model: Model;
  let running: Running;
  beforeAll(async () => {
    model = await loadModel(gptossFiles(ws.fresh('models')).mxfp4, { threads: 2 });
    running = await startServer({ model, modelId: 'gptoss', maxActive: 4, maxQueued: 16 });
  }, 120_000);
  afterAll(async () => {
    await running?.stop();
    model?.dispose();
  });

  test('batched decoding: concurrent streams each with the single greedy text', async () => {
    const expected = new Map<string, string>();
    for (const prompt of PROMPTS) {
      const text = await model.generate(prompt, { maxTokens: 12, temperature: 0 }).text();
      expect(text.length).toBeGreaterThan(0);
      expected.set(prompt, text);
    }
    const client: OpenAI = running.client();
    const prompts = Array.from({ length: 9 }, (_, i) => PROMPTS[i % PROMPTS.length]);
    const results = await Promise.all(prompts.map(async (prompt) => {
      const stream = await client.completions.create({ model: 'gptoss', prompt, max_tokens: 12, temperature: 0, stream: true });
      let text = '';
      for await (const chunk of stream) text += chunk.choices[0]?.text ?? '';
      return text;
    }));
    results.forEach((text, i) => expect(text).toBe(expected.get(prompts[i])));
  });
});
