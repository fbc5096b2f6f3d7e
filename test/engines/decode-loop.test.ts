/**
 * DecodeLoop (lib/engines/decode-loop.ts): steps asked for together run as one batched step, a
 * waiting step that is aborted leaves at once, and a row that cannot run fails alone.
 */
import { DecodeLoop } from '../../lib/engines/decode-loop';
import { DecoderEngine } from '../../lib/engines/decoder';
import { AbortError } from '../../lib/base/errors';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { native } from '../../lib/addon/native';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';
import { storiesExpected } from './decoder-helpers';

const GREEDY = { temperature: 0 };
const expected = storiesExpected();
let weights: ModelWeights;
let engine: DecoderEngine;
beforeAll(async () => {
  weights = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
  engine = await DecoderEngine.load(weights, { threads: 2 });
});
afterAll(() => {
  engine.dispose();
  closeWeights(weights);
});

/** n sessions fed BOS alone, with their samplers and first tokens. */
async function started(n: number, contextLength = 64) {
  const sessions = Array.from({ length: n }, () => engine.createSession({ contextLength }));
  const samplers = sessions.map(() => new (native().Sampler)(1));
  const first = await Promise.all(sessions.map((s, i) => s.step([expected.bos], samplers[i], GREEDY)));
  return { sessions, samplers, first };
}

test('steps asked for in the same turn run as one batched step, and go on in step', async () => {
  const loop = new DecodeLoop(engine);
  const spy = jest.spyOn(engine, 'stepBatch');
  const { sessions, samplers, first } = await started(3);
  const tokens = sessions.map((_, i) => [first[i]]);
  for (let step = 0; step < 10; step++) {
    const next = await Promise.all(sessions.map((s, i) => loop.step(s, tokens[i].at(-1)!, samplers[i], GREEDY)));
    next.forEach((t, i) => tokens[i].push(t));
  }
  expect(spy.mock.calls.map((call) => call[0].length)).toEqual(Array(10).fill(3));
  for (const t of tokens) expect(t).toEqual(expected.tokens.slice(0, 11));
  spy.mockRestore();
  for (const s of sessions) s.dispose();
});

test('an aborted waiting step rejects at once and the others run', async () => {
  const loop = new DecodeLoop(engine);
  const { sessions, samplers, first } = await started(2);
  const controller = new AbortController();
  const aborted = loop.step(sessions[0], first[0], samplers[0], GREEDY, controller.signal);
  const other = loop.step(sessions[1], first[1], samplers[1], GREEDY);
  controller.abort();
  await expect(aborted).rejects.toBeInstanceOf(AbortError);
  expect(await other).toBe(expected.tokens[1]);
  expect(sessions.map((s) => s.position)).toEqual([1, 2]);
  // cancel() does the same for a session's waiting steps.
  const cancelled = loop.step(sessions[1], expected.tokens[1], samplers[1], GREEDY);
  loop.cancel(sessions[1]);
  await expect(cancelled).rejects.toBeInstanceOf(AbortError);
  for (const s of sessions) s.dispose();
});

test('a row that cannot run fails alone', async () => {
  const loop = new DecodeLoop(engine);
  const { sessions, samplers, first } = await started(3, 1);
  const [bad, fresh] = [0, 1].map(() => engine.createSession({ contextLength: 8 }));
  const results = await Promise.allSettled([
    loop.step(sessions[0], first[0], samplers[0], GREEDY), // context full
    loop.step(bad, expected.vocab, new (native().Sampler)(1), GREEDY), // not a token id
    loop.step(fresh, expected.bos, new (native().Sampler)(1), GREEDY),
  ]);
  expect(results[0]).toMatchObject({ status: 'rejected', reason: expect.any(RangeError) });
  expect(results[1]).toMatchObject({ status: 'rejected', reason: expect.any(RangeError) });
  expect(results[2]).toEqual({ status: 'fulfilled', value: expected.tokens[0] });
  for (const s of [...sessions, bad, fresh]) s.dispose();
});
