/**
 * How sampling inputs cross into a step (native/napi/sampler_napi.h BoundParams): a Sampler reads a
 * params object once (the same object at every step of a generation is not parsed again; a new one
 * is), and the allowed-token bitset crosses per step, for step() and for every row of stepBatch().
 * Expectations: the fixture's greedy tokens (llama-stories260k) and the closed form of a mask that
 * allows one token.
 */
import { native } from '../../lib/addon/native';
import { DecoderEngine } from '../../lib/engines/decoder';
import { readWeights } from '../../lib/formats';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';
import { storiesExpected } from './decoder-helpers';

const expected = storiesExpected();
/** A bitset (bit id % 32 of word id / 32) allowing `ids` over the vocabulary. */
const only = (...ids: number[]) => {
  const words = new Uint32Array(Math.ceil(expected.vocab / 32));
  for (const id of ids) words[id >>> 5] |= 1 << (id & 31);
  return words;
};

let weights: ModelWeights;
let engine: DecoderEngine;
beforeAll(async () => {
  weights = await readWeights(fixture('llama-stories260k', 'stories260K.gguf'));
  engine = await DecoderEngine.load(weights, { threads: 1 });
});
afterAll(() => {
  engine.dispose();
  closeWeights(weights);
});

test('the allowed set crosses per step, the params object is read once per Sampler', async () => {
  const session = engine.createSession({ contextLength: 32 });
  const sampler = new (native().Sampler)(1);
  const params: { temperature: number; logitBiasIds?: Int32Array; logitBiasValues?: Float32Array } = { temperature: 0 };
  const banned = expected.tokens[0] === 5 ? 6 : 5; // not the greedy token
  expect(await session.step([expected.bos], sampler, params, { allowedTokens: only(banned) })).toBe(banned);
  // The same object, edited: still read as it was at its first step (greedy, no bias).
  params.logitBiasIds = Int32Array.of(banned);
  params.logitBiasValues = Float32Array.of(1000);
  session.truncate(0);
  expect(await session.step([expected.bos], sampler, params)).toBe(expected.tokens[0]);
  // A new object is read: the bias picks `banned`.
  session.truncate(0);
  expect(await session.step([expected.bos], sampler, { ...params })).toBe(banned);
  session.dispose();
});

test('every row of a batched step draws from its own allowed set', async () => {
  const sessions = [0, 1, 2].map(() => engine.createSession({ contextLength: 32 }));
  const samplers = sessions.map((_, i) => new (native().Sampler)(i + 1));
  const greedy = { temperature: 0 };
  for (const [i, s] of sessions.entries()) expect(await s.step([expected.bos], samplers[i], greedy)).toBe(expected.tokens[0]);
  const out = await engine.stepBatch(sessions.map((session, i) => ({
    session, token: expected.tokens[0], sampler: samplers[i], params: greedy, ...(i === 1 ? {} : { allowedTokens: only(10 + i) }),
  })));
  expect(out).toEqual([10, expected.tokens[1], 12]);
  for (const s of sessions) s.dispose();
});
