/**
 * Long texts given to a model or an embedder are tokenized in the tokenizer worker: the ids are
 * the ones encode() gives, and the event loop stays free meanwhile (bounds relative to the same
 * encode on this thread, helpers/event-loop.ts).
 */
import { deferredGeneration } from '../../lib/deferred-generation';
import { loadEmbedder, type Embedder } from '../../lib/embedder';
import { loadModel, type Model } from '../../lib/model';
import { collectGarbage, timeOnThread, watchEventLoop } from '../helpers/event-loop';
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

test('model.encodeAsync gives encode()\'s ids without holding the loop', async () => {
  model.encode('warm up');
  let expected!: number[];
  const onThread = timeOnThread(() => (expected = model.encode(LONG)));
  collectGarbage();
  const watch = watchEventLoop();
  const ids = await model.encodeAsync(LONG);
  const { busy } = watch.stop();
  expect(ids).toEqual(expected);
  expect(busy).toBeLessThan(onThread / 2);
});

test('generate() and chat() with a long text tokenize it in the worker; its length is then checked', async () => {
  // The watched calls come first: the encodes on this thread that give the expectations leave
  // garbage that a collection in a watched window would count as busy.
  collectGarbage();
  let watch = watchEventLoop();
  const generation = model.generate(LONG, { maxTokens: 1 });
  expect(generation.tokens).toEqual([]);
  const generateError = await generation.text().catch((e) => e);
  const generateBusy = watch.stop().busy;
  const messages = [{ role: 'user' as const, content: LONG }];
  collectGarbage();
  watch = watchEventLoop();
  const chatError = await model.chat(messages, { maxTokens: 1 }).next().catch((e) => e);
  const chatBusy = watch.stop().busy;

  let tokens!: number;
  const onThread = timeOnThread(() => (tokens = model.encode(LONG).length));
  expect(generateError).toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: expect.stringContaining(`has ${tokens} tokens`) });
  expect(generateBusy).toBeLessThan(onThread / 2);
  const chatTokens = model.tokenizer.encode(model.renderChat(messages), { addSpecialTokens: false }).length;
  expect(chatError).toMatchObject({ code: 'ERR_OUT_OF_RANGE', message: expect.stringContaining(`has ${chatTokens} tokens`) });
  expect(chatBusy).toBeLessThan(onThread / 2);
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

test('embed() of a long text: the vector of its truncated ids, tokenized off the thread', async () => {
  const tokenizer = embedder.tokenizer;
  let ids!: number[];
  const onThread = timeOnThread(() => (ids = tokenizer.encode(LONG, { maxLength: embedder.maxSeqLength })));
  collectGarbage();
  const watch = watchEventLoop();
  const [vector] = await embedder.embed([LONG]);
  const { busy } = watch.stop();
  expect(Array.from(vector)).toEqual(Array.from((await embedder.embedTokens([ids]))[0]));
  expect(busy).toBeLessThan(onThread / 2);
});
