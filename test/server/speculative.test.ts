/**
 * ServeOptions.speculative (`weightmap serve --speculative`): greedy completions through the
 * `openai` client are llama2.c's golden text, and GET /metrics counts the guesses drafted and kept
 * and the forward passes, as the generations' own stats say.
 */
import * as fs from 'node:fs';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture } from '../helpers/fixtures';
import { rawRequest, startServer } from './server-helpers';

const KEY = 'speculative-key-0123456789';
const golden = fs.readFileSync(fixture('llama-stories260k', 'expected_greedy_200steps.txt'), 'utf8');

const sample = (text: string, name: string) => {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{`));
  return line === undefined ? undefined : Number(line.slice(line.lastIndexOf(' ') + 1));
};

let model: Model;
beforeAll(async () => {
  model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { threads: 1 });
});
afterAll(() => model.dispose());

it('serves golden greedy text with prompt lookup and reports its guesses in /metrics', async () => {
  const running = await startServer({ model, apiKey: KEY, modelId: 'stories', speculative: { draft: 'prompt-lookup', maxDraftTokens: 8, minDraftTokens: 8 } });
  try {
    const client = running.client();
    const plain = model.generate('', { maxTokens: 200, speculative: { maxDraftTokens: 8, minDraftTokens: 8 } });
    await plain.text();
    const stats = plain.speculative!;
    const completion = await client.completions.create({ model: 'stories', prompt: '', max_tokens: 200, temperature: 0 });
    expect(completion.choices[0].text).toBe(golden);
    const response = await rawRequest(running.origin, '/metrics', { headers: { Authorization: `Bearer ${KEY}` } });
    const text = response.body as string;
    // The same greedy run in the library drafted and kept the same tokens.
    expect(sample(text, 'weightmap_speculative_drafted_tokens_total')).toBe(stats.drafted);
    expect(sample(text, 'weightmap_speculative_accepted_tokens_total')).toBe(stats.accepted);
    expect(sample(text, 'weightmap_speculative_decode_passes_total')).toBe(stats.passes);
    expect(sample(text, 'weightmap_speculative_decoded_tokens_total')).toBe(stats.passes + stats.accepted);
    expect(stats.accepted).toBeGreaterThan(0);
  } finally {
    await running.stop();
  }
});
