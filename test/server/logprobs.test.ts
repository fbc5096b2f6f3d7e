/**
 * Logprobs and llama-server's sampling fields through the openai client on the Qwen3-tiny fixture
 * (issue #25 items 3 and 5): the first token's logprob is the log-softmax of the fixture's reference
 * logits after the prompt (computed here in float64), top_logprobs are the most likely tokens best
 * first, one entry per generated token, streamed too; the legacy completions' parallel arrays; top_k 1
 * at temperature 1 is the greedy reply.
 */
import type OpenAI from 'openai';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture, readF32, readJson } from '../helpers/fixtures';
import { rawRequest, startServer, type Running } from './server-helpers';

const CASE = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0];
const MESSAGES = [{ role: 'user' as const, content: CASE.prompt.user_text as string }];
const REPLY = (CASE.greedy.text as string).replace('<|im_end|>', '');
const LOGITS = readF32('ajc1-qwen3-tiny', 'case0.last_prompt_logits.f32');
/** A logprob is a logit minus log Z: each off by at most the fixture's logit tolerance (this engine quantizes activations). */
const TOLERANCE = 2 * (readJson('ajc1-qwen3-tiny', 'expected.json').tolerances.logits_abs_q8_activation_engine as number);
const expectNear = (got: number, want: number) => expect(Math.abs(got - want)).toBeLessThanOrEqual(TOLERANCE);

/** float64 log-softmax of the reference logits. */
function referenceLogprobs(): Float64Array {
  let max = -Infinity;
  for (const x of LOGITS) max = Math.max(max, x);
  let sum = 0;
  for (const x of LOGITS) sum += Math.exp(x - max);
  const logZ = max + Math.log(sum);
  return Float64Array.from(LOGITS, (x) => x - logZ);
}

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

describe('logprobs', () => {
  it('chat: the first token against the reference logits, top_logprobs best first, one entry per token', async () => {
    const ref = referenceLogprobs();
    const first = CASE.greedy.tokens[0] as number;
    const completion = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, temperature: 0, logprobs: true, top_logprobs: 3 });
    const content = completion.choices[0].logprobs!.content!;
    expect(content).toHaveLength(completion.usage!.completion_tokens);
    expect(content[0].token).toBe(model.tokenizer.decode([first]));
    expectNear(content[0].logprob, ref[first]);
    expect(content[0].bytes).toEqual(Array.from(Buffer.from(content[0].token, 'utf8')));
    for (const entry of content) {
      expect(entry.top_logprobs).toHaveLength(3);
      // Greedy: the token drawn is the most likely one.
      expect(entry.top_logprobs[0].logprob).toBeCloseTo(entry.logprob, 6);
      for (let i = 1; i < 3; i++) expect(entry.top_logprobs[i].logprob).toBeLessThanOrEqual(entry.top_logprobs[i - 1].logprob);
    }
    const sorted = [...ref].sort((a, b) => b - a);
    content[0].top_logprobs.forEach((alt, i) => expectNear(alt.logprob, sorted[i]));
  });

  it('chat streamed: each token’s logprobs in its chunk', async () => {
    const stream = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, temperature: 0, logprobs: true, stream: true, stream_options: { include_usage: true } });
    const tokens: string[] = [];
    let text = '';
    let usage: OpenAI.CompletionUsage | undefined;
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        text += c.delta.content ?? '';
        for (const entry of c.logprobs?.content ?? []) tokens.push(entry.token);
      }
      usage = chunk.usage ?? usage;
    }
    expect(text).toBe(REPLY);
    expect(tokens).toHaveLength(usage!.completion_tokens);
    expect(tokens.join('')).toBe(model.tokenizer.decode(CASE.greedy.tokens));
  });

  it('completions: tokens, token_logprobs, top_logprobs and text_offset', async () => {
    const ref = referenceLogprobs();
    const completion = await client.completions.create({ model: 'qwen3-tiny', prompt: CASE.prompt.ids, temperature: 0, max_tokens: 4, logprobs: 2 });
    const lp = completion.choices[0].logprobs!;
    expect(lp.tokens).toHaveLength(4);
    expect(lp.tokens!.join('')).toBe(completion.choices[0].text);
    expectNear(lp.token_logprobs![0], ref[CASE.greedy.tokens[0]]);
    expect(Object.keys(lp.top_logprobs![0])).toHaveLength(2);
    expect(lp.text_offset).toEqual(lp.tokens!.map((_, i) => lp.tokens!.slice(0, i).join('').length));
  });

  it('top_logprobs without logprobs is a 400', async () => {
    await expect(client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, top_logprobs: 2 })).rejects.toMatchObject({ status: 400, param: 'top_logprobs' });
  });
});

describe("llama-server's sampling fields", () => {
  it('top_k 1 at temperature 1 is the greedy reply; min_p and repetition_penalty are accepted', async () => {
    const extra = { top_k: 1, min_p: 0.05, repetition_penalty: 1 } as object;
    const completion = await client.chat.completions.create({ model: 'qwen3-tiny', messages: MESSAGES, temperature: 1, seed: 7, ...extra });
    expect(completion.choices[0].message.content).toBe(REPLY);
  });
});

describe("llama-server's /tokenize and /detokenize", () => {
  const post = (path: string, body: object) =>
    rawRequest(running.origin, path, { method: 'POST', headers: { 'content-type': 'application/json', authorization: 'Bearer none' }, body: JSON.stringify(body) });

  it("the fixture prompt's ids, their pieces, and back", async () => {
    const text = model.tokenizer.decode(CASE.prompt.ids);
    const tokenized = await post('/tokenize', { content: text });
    expect(tokenized.status).toBe(200);
    expect(tokenized.body.tokens).toEqual(CASE.prompt.ids);
    const pieces = await post('/tokenize', { content: text, with_pieces: true });
    expect(pieces.body.tokens.map((t: { id: number }) => t.id)).toEqual(CASE.prompt.ids);
    expect(pieces.body.tokens.map((t: { piece: string }) => t.piece).join('')).toBe(text);
    const back = await post('/detokenize', { tokens: CASE.prompt.ids });
    expect(back.body).toEqual({ content: text });
  });

  it('ids outside the vocabulary and missing fields are 400s naming the field', async () => {
    expect((await post('/detokenize', { tokens: [1, model.vocabSize] })).body.error).toMatchObject({ param: 'tokens[1]' });
    expect((await post('/tokenize', {})).body.error).toMatchObject({ param: 'content' });
  });
});

describe('n choices', () => {
  const ask = (extra: object) => ({ model: 'qwen3-tiny', messages: MESSAGES, temperature: 1.2, max_tokens: 8, ...extra }) as OpenAI.ChatCompletionCreateParamsNonStreaming;

  it('choice i is the reply of seed + i; usage adds their tokens; streamed, each index carries its own', async () => {
    const whole = await client.chat.completions.create(ask({ n: 3, seed: 5 }));
    expect(whole.choices.map((c) => c.index)).toEqual([0, 1, 2]);
    const singles = await Promise.all([5, 6, 7].map((seed) => client.chat.completions.create(ask({ seed }))));
    expect(whole.choices.map((c) => c.message.content)).toEqual(singles.map((s) => s.choices[0].message.content));
    expect(whole.usage!.completion_tokens).toBe(singles.reduce((sum, s) => sum + s.usage!.completion_tokens, 0));
    expect(whole.usage!.prompt_tokens).toBe(singles[0].usage!.prompt_tokens);

    const stream = await client.chat.completions.create({ ...ask({ n: 3, seed: 5 }), stream: true });
    const texts = ['', '', ''];
    const finishes: (string | null)[] = [null, null, null];
    for await (const chunk of stream) {
      for (const c of chunk.choices) {
        texts[c.index] += c.delta.content ?? '';
        finishes[c.index] = c.finish_reason ?? finishes[c.index];
      }
    }
    expect(texts).toEqual(whole.choices.map((c) => c.message.content));
    expect(finishes).toEqual(whole.choices.map((c) => c.finish_reason));
  });

  it('completions: n choices, the same rule', async () => {
    const whole = await client.completions.create({ model: 'qwen3-tiny', prompt: CASE.prompt.ids, temperature: 1.2, max_tokens: 6, n: 2, seed: 9 });
    const second = await client.completions.create({ model: 'qwen3-tiny', prompt: CASE.prompt.ids, temperature: 1.2, max_tokens: 6, seed: 10 });
    expect(whole.choices.map((c) => c.index)).toEqual([0, 1]);
    expect(whole.choices[1].text).toBe(second.choices[0].text);
  });
});
