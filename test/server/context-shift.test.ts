/**
 * The server's context shift (ServeOptions.contextShift, `weightmap serve --context-shift`) on
 * models loaded with a 64-token context, greedy. A text prompt past the context is cut as
 * llama-server cuts one (the BOS, then the newest tokens, whole blocks of half the context
 * dropped; computed here by hand): usage counts the cut prompt and the text is a fresh
 * generation's after it. A max_tokens past the room is honoured (finish_reason 'length' at
 * max_tokens), its text the library's shifting generation (test/generation/context-shift.test.ts
 * checks that one against fresh runs). A chat grown past the context (Qwen3-tiny, no BOS: nothing
 * kept) answers as after its cut prompt, through /v1, /api/generate and /api/chat. Without the option the same requests are refused or capped.
 */
import { loadModel, type Model } from '../../lib/models/model';
import { fixture, readJson } from '../helpers/fixtures';
import { rawRequest, startServer, type Running } from './server-helpers';

const CONTEXT = 64;

/** llama-server's cut of a prompt that does not fit, by hand. */
function cutByHand(ids: number[], keep: number): number[] {
  if (ids.length < CONTEXT) return ids;
  const block = Math.floor((CONTEXT - keep) / 2);
  const erased = Math.floor((ids.length - keep - block) / block);
  return [...ids.slice(0, keep), ...ids.slice(keep + erased * block)];
}

const post = (running: Running, path: string, body: unknown) =>
  rawRequest(running.origin, path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

describe('text completions with context shift', () => {
  let model: Model;
  let shifting: Running;
  let plain: Running;

  beforeAll(async () => {
    model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin'), contextLength: CONTEXT });
    shifting = await startServer({ model, modelId: 'stories', contextShift: true });
    plain = await startServer({ model, modelId: 'stories' });
  });

  afterAll(async () => {
    await shifting?.stop();
    await plain?.stop();
    model?.dispose();
  });

  const BAN_STOPS = { 1: -100, 2: -100 };

  it('cuts a prompt past the context: usage counts the cut prompt, the text is a fresh generation after it', async () => {
    const long = model.encode(`Once upon a time${' there was a little dog who liked to play with a red ball'.repeat(8)}`);
    expect(long.length).toBeGreaterThan(CONTEXT);
    const cut = cutByHand(long, 1); // keep: the BOS
    const n = Math.min(6, CONTEXT - cut.length);
    const response = await post(shifting, '/v1/completions', { model: 'stories', prompt: long, max_tokens: n, temperature: 0, logit_bias: BAN_STOPS });
    expect(response.status).toBe(200);
    expect(response.body.usage).toEqual({ prompt_tokens: cut.length, completion_tokens: n, total_tokens: cut.length + n });
    const expected = await model.generate(cut, { temperature: 0, maxTokens: n, logitBias: { 1: -Infinity, 2: -Infinity } }).text();
    expect(response.body.choices[0].text).toBe(expected);
    const refused = await post(plain, '/v1/completions', { model: 'stories', prompt: long, max_tokens: n });
    expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([400, 'context_length_exceeded', 'prompt']);
  });

  it('the same through the Ollama API (/api/generate, raw): cut as /v1 cuts; without the option a 400', async () => {
    const text = `Once upon a time${' there was a little dog who liked to play with a red ball'.repeat(8)}`;
    const cut = cutByHand(model.encode(text), 1);
    const n = Math.min(6, CONTEXT - cut.length);
    const body = { model: 'stories', prompt: text, raw: true, stream: false, options: { num_predict: n, temperature: 0 } };
    const response = await post(shifting, '/api/generate', body);
    expect([response.status, response.body.prompt_eval_count]).toEqual([200, cut.length]);
    expect(response.body.response).toBe(await model.generate(cut, { temperature: 0, maxTokens: n }).text());
    expect((await post(plain, '/api/generate', body)).status).toBe(400);
  });

  it('n_keep: the first n_keep tokens of a cut prompt stay', async () => {
    const long = model.encode(`Once upon a time${' the cat sat on a mat and looked at the sun'.repeat(9)}`);
    expect(long.length).toBeGreaterThan(CONTEXT);
    const cut = cutByHand(long, 5);
    expect(cut.slice(0, 5)).toEqual(long.slice(0, 5));
    const n = Math.min(4, CONTEXT - cut.length);
    const response = await post(shifting, '/v1/completions', { model: 'stories', prompt: long, max_tokens: n, n_keep: 5, temperature: 0, logit_bias: BAN_STOPS });
    expect(response.status).toBe(200);
    expect(response.body.usage.prompt_tokens).toBe(cut.length);
    expect(response.body.choices[0].text).toBe(await model.generate(cut, { temperature: 0, maxTokens: n, logitBias: { 1: -Infinity, 2: -Infinity } }).text());
    const bad = await post(shifting, '/v1/completions', { model: 'stories', prompt: long, n_keep: -1 });
    expect([bad.status, bad.body.error.param]).toEqual([400, 'n_keep']);
  });

  it('honours max_tokens past the context (the generation shifts); without the option it is capped at the room', async () => {
    // The BOS alone: every run feeds it alone first, whatever the idle caches hold, so the runs are bitwise alike.
    const prompt = [model.tokenizer.specialIds.bos!];
    const maxTokens = 2 * CONTEXT;
    const body = { model: 'stories', prompt, max_tokens: maxTokens, temperature: 0, logit_bias: BAN_STOPS };
    const response = await post(shifting, '/v1/completions', body);
    expect(response.status).toBe(200);
    expect(response.body.usage.completion_tokens).toBe(maxTokens);
    expect(response.body.choices[0].finish_reason).toBe('length');
    const library = await model.generate(prompt, { temperature: 0, maxTokens, logitBias: { 1: -Infinity, 2: -Infinity }, contextShift: {} }).text();
    expect(response.body.choices[0].text).toBe(library);
    const capped = await post(plain, '/v1/completions', body);
    expect(capped.body.usage.completion_tokens).toBe(CONTEXT - prompt.length);
    // Streamed, the same text.
    const streamed = await rawRequest(shifting.origin, '/v1/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ ...body, stream: true }) });
    const text = (streamed.body as string).split('\n\n').filter((e) => e.startsWith('data: {')).map((e) => JSON.parse(e.slice(6)).choices[0]?.text ?? '').join('');
    expect(text).toBe(library);
  });
});

describe('a chat grown past the context, with context shift', () => {
  let model: Model;
  let shifting: Running;
  let plain: Running;

  beforeAll(async () => {
    model = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'), { contextLength: CONTEXT });
    shifting = await startServer({ model, modelId: 'qwen3-tiny', contextShift: true });
    plain = await startServer({ model, modelId: 'qwen3-tiny' });
  });

  afterAll(async () => {
    await shifting?.stop();
    await plain?.stop();
    model?.dispose();
  });

  it('answers as after its cut prompt; without the option, a 400 naming messages', async () => {
    const question: string = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0].prompt.user_text;
    const messages = [
      { role: 'user' as const, content: question },
      { role: 'assistant' as const, content: 'It is 19. Cafés in Paris are small, busy and open late.' },
      { role: 'user' as const, content: `${question} And tell me more, please.` },
    ];
    const ids = (await model.chatPrompt(messages)).ids as number[];
    expect(ids.length).toBeGreaterThan(CONTEXT);
    expect(model.tokenizer.specialIds.bos === undefined || ids[0] !== model.tokenizer.specialIds.bos).toBe(true);
    const cut = cutByHand(ids, 0);
    const n = Math.min(5, CONTEXT - cut.length);
    const response = await post(shifting, '/v1/chat/completions', { model: 'qwen3-tiny', messages, max_tokens: n, temperature: 0 });
    expect(response.status).toBe(200);
    expect(response.body.usage.prompt_tokens).toBe(cut.length);
    const expected = await model.chat({ ids: cut }, { temperature: 0, maxTokens: n }).text();
    expect(response.body.choices[0].message.content).toBe(expected);
    const refused = await post(plain, '/v1/chat/completions', { model: 'qwen3-tiny', messages, max_tokens: n });
    expect([refused.status, refused.body.error.code, refused.body.error.param]).toEqual([400, 'context_length_exceeded', 'messages']);
  });

  it('the same through the Ollama API (/api/chat)', async () => {
    const question: string = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0].prompt.user_text;
    const messages = [
      { role: 'user', content: question },
      { role: 'assistant', content: 'It is 19. Cafés in Paris are small, busy and open late.' },
      { role: 'user', content: `${question} And tell me more, please.` },
    ];
    const ids = (await model.chatPrompt(messages as never)).ids as number[];
    const cut = cutByHand(ids, 0);
    const n = Math.min(5, CONTEXT - cut.length);
    const body = { model: 'qwen3-tiny', messages, stream: false, options: { temperature: 0, num_predict: n } };
    const response = await post(shifting, '/api/chat', body);
    expect(response.status).toBe(200);
    expect(response.body.prompt_eval_count).toBe(cut.length);
    // Ollama's sampling defaults but greedy: top_k 40 and top_p 0.9 change nothing at temperature 0; its repeat penalty is 1.1 over 64 tokens.
    const expected = await model.chat({ ids: cut }, { temperature: 0, maxTokens: n, repeatPenalty: 1.1, penaltyLastN: 64 }).text();
    expect(response.body.message.content).toBe(expected);
    expect((await post(plain, '/api/chat', body)).status).toBe(400);
  });
});
