/**
 * Long texts given to a model or an embedder are tokenized in the tokenizer worker: the ids are
 * the ones encode() gives, and this thread's tokenizer never sees the long text (how long the loop
 * waits is measured by scripts/bench/load.js, not here).
 */
import { deferredGeneration } from '../../lib/generation/deferred-generation';
import { loadEmbedder, type Embedder } from '../../lib/models/embedder';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture } from '../helpers/fixtures';
import { makeCorpus } from './corpus';

// ~400 KB: tens of milliseconds of encoding on this thread.
const LONG = makeCorpus(4000, 5).join('\n');

let model: Model;
let embedder: Embedder;
beforeAll(async () => {
  model = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'), { threads: 1 });
  embedder = await loadEmbedder(fixture('embd-minilm-tiny', 'model.weights'), { threads: 1 });
});
afterAll(() => {
  model.dispose();
  embedder.dispose();
});

/** The calls of tokenizer.encode on this thread with `text` while `run` runs. */
async function encodesHere(tokenizer: { encode: (...args: never[]) => unknown }, text: string, run: () => Promise<unknown>): Promise<number> {
  const spy = jest.spyOn(tokenizer, 'encode');
  try {
    await run();
    return spy.mock.calls.filter(([t]) => (t as unknown) === text).length;
  } finally {
    spy.mockRestore();
  }
}

test('model.encodeAsync gives encode()\'s ids, encoded in the worker', async () => {
  const expected = model.encode(LONG);
  let ids!: number[];
  expect(await encodesHere(model.tokenizer, LONG, async () => (ids = await model.encodeAsync(LONG)))).toBe(0);
  expect(ids).toEqual(expected);
});

test('generate() and chat() with a long text tokenize it in the worker; its length is then checked', async () => {
  let generateError: unknown;
  const generateHere = await encodesHere(model.tokenizer, LONG, async () => {
    const generation = model.generate(LONG, { maxTokens: 1 });
    expect(generation.tokens).toEqual([]);
    generateError = await generation.text().catch((e) => e);
  });
  const messages = [{ role: 'user' as const, content: LONG }];
  const rendered = model.renderChat(messages);
  let chatError: unknown;
  const chatHere = await encodesHere(model.tokenizer, rendered, async () => {
    chatError = await model.chat(messages, { maxTokens: 1 }).next().catch((e) => e);
  });
  expect([generateHere, chatHere]).toEqual([0, 0]);
  const tokens = model.encode(LONG).length;
  expect(generateError).toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: expect.stringContaining(`has ${tokens} tokens`) });
  // The corpus holds special-token text: chat encodes it as text (lib/models/chat-prompt.ts), so the
  // prompt decodes as the rendered text does and its only special tokens are the template's own.
  const prompt = await model.chatPrompt(messages);
  expect(model.tokenizer.decode(prompt.ids)).toBe(model.tokenizer.decode(model.tokenizer.encode(rendered, { addSpecialTokens: false })));
  const specials = (ids: readonly number[]) => ids.filter((id) => model.tokenizer.isSpecial(id));
  expect(specials(prompt.ids)).toEqual(specials(model.tokenizer.encode(model.renderChat([{ role: 'user', content: 'x' }]), { addSpecialTokens: false })));
  expect(chatError).toMatchObject({ code: 'ERR_OUT_OF_RANGE', message: expect.stringContaining(`has ${prompt.ids.length} tokens`) });
});

test('a deferred generation yields what the generation it starts yields', async () => {
  const ids = model.encode('Once upon a time');
  const options = { maxTokens: 6, temperature: 0 };
  const direct = model.generate(ids, options);
  const pieces: string[] = [];
  for await (const p of direct) pieces.push(p.text);
  const deferred = deferredGeneration(Promise.resolve(ids), (list) => model.generate(list, options));
  const got: string[] = [];
  for await (const p of deferred) got.push(p.text);
  expect(got).toEqual(pieces);
  expect(deferred.tokens).toEqual(direct.tokens);
  expect(deferred.stopReason).toBe(direct.stopReason);
  const closed = deferredGeneration(Promise.resolve(ids), (list) => model.generate(list, options));
  await closed.return!(undefined);
  expect(await closed.next()).toEqual({ done: true, value: undefined });
});

test('embed() of a long text: the vector of its truncated ids, tokenized in the worker', async () => {
  const tokenizer = embedder.tokenizer;
  const ids = tokenizer.encode(LONG, { maxLength: embedder.maxSeqLength });
  let vector!: Float32Array;
  expect(await encodesHere(tokenizer, LONG, async () => ([vector] = await embedder.embed([LONG])))).toBe(0);
  expect(Array.from(vector)).toEqual(Array.from((await embedder.embedTokens([ids]))[0]));
});
