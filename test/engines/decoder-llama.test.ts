/**
 * The decoder engine on the real stories260K model (llama-stories260k fixture): llama2.c's
 * golden greedy run from the .bin (interleaved RoPE), the GGUF (interleaved) and the sepweight
 * tree (q/k permuted, half RoPE), every step's logits within 0.001 of the float64 reference.
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { ggufFormat } from '../../lib/formats/containers/gguf-format';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { sepweightFormat } from '../../lib/formats/containers/sepweight';
import type { FormatModule } from '../../lib/formats/types';
import { native } from '../../lib/addon/native';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';
import { argmax, greedy, maxAbsDiff, storiesExpected } from './decoder-helpers';

const TOLERANCE = 0.001;
const expected = storiesExpected();
const V = expected.vocab;
const STEPS = expected.tokens.length; // 200

/** Row `i` of the reference logits [200, 512]. */
const refRow = (i: number) => expected.logits.subarray(i * V, (i + 1) * V);

const sources: [string, FormatModule, string, 'interleaved' | 'half'][] = [
  ['llama2.c .bin', llama2cFormat, 'stories260K.bin', 'interleaved'],
  ['GGUF', ggufFormat, 'stories260K.gguf', 'interleaved'],
  ['sepweight tree', sepweightFormat, 'sepweight', 'half'],
];

describe.each(sources)('stories260K from the %s', (_label, format, file, pairing) => {
  let weights: ModelWeights;
  let engine: DecoderEngine;

  beforeAll(async () => {
    weights = await format.read(fixture('llama-stories260k', file));
    engine = await DecoderEngine.load(weights, { threads: 2 });
  });
  afterAll(() => {
    engine.dispose();
    closeWeights(weights);
  });

  test('reads as the config the fixture states', () => {
    expect(weights.config).toMatchObject({ architecture: 'llama', hiddenSize: 64, numLayers: 5, numHeads: 8, numKvHeads: 4, ropePairing: pairing });
    expect(engine.loadInfo.converted).toBe(0); // f32 weights are used in place
  });

  test('greedy 200 tokens from BOS equal llama2.c, every step within 0.001', async () => {
    const session = engine.createSession({ contextLength: 256 });
    const run = await greedy(session, [expected.bos], STEPS);
    expect(run.tokens).toEqual(expected.tokens);
    for (let i = 0; i < STEPS; i++) {
      const diff = maxAbsDiff(run.logits[i], refRow(i));
      if (diff > TOLERANCE) throw new Error(`step ${i}: logits differ by ${diff}`);
    }
    expect(session.position).toBe(STEPS);
    session.dispose();
  });

  test('the prompt as one batch equals feeding it token by token (all positions)', async () => {
    const ids = [expected.bos, ...expected.tokens.slice(0, 199)];
    const session = engine.createSession({ contextLength: 256 });
    const all = await session.eval(ids, { allLogits: true });
    expect(all.length).toBe(200 * V);
    expect(session.position).toBe(200);
    for (let i = 0; i < 200; i++) {
      const diff = maxAbsDiff(all.subarray(i * V, (i + 1) * V), refRow(i));
      if (diff > TOLERANCE) throw new Error(`position ${i}: batched logits differ by ${diff}`);
      expect(argmax(all, V, i)).toBe(expected.tokens[i]);
    }
    session.dispose();
  });
});

test('a prompt longer than one prefill batch (512) runs in batches with the same logits', async () => {
  // The GGUF states a 2048-token context, so 600 positions fit.
  const weights = await ggufFormat.read(fixture('llama-stories260k', 'stories260K.gguf'));
  const engine = await DecoderEngine.load(weights, { threads: 2 });
  const ids = [expected.bos, ...expected.tokens.slice(0, 199)];
  while (ids.length < 600) ids.push(expected.tokens[ids.length % 200]);
  const whole = engine.createSession({ contextLength: 600 });
  const all = await whole.eval(ids, { allLogits: true }); // batches of 512 + 88
  const halves = engine.createSession({ contextLength: 600 });
  const first = await halves.eval(ids.slice(0, 300), { allLogits: true });
  const second = await halves.eval(ids.slice(300), { allLogits: true });
  expect(maxAbsDiff(all, expected.logits, 200 * V)).toBeLessThanOrEqual(TOLERANCE);
  expect(maxAbsDiff(all, first)).toBeLessThanOrEqual(1e-4);
  expect(maxAbsDiff(all.subarray(300 * V), second)).toBeLessThanOrEqual(1e-4);
  const last = await engine.createSession({ contextLength: 600 }).eval(ids);
  expect(maxAbsDiff(last, all.subarray(599 * V))).toBeLessThanOrEqual(1e-4);
  engine.dispose();
  closeWeights(weights);
});

describe('sessions of one model', () => {
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

  test('two sessions interleaved step by step give what each gives alone', async () => {
    const a = engine.createSession({ contextLength: 256 });
    const b = engine.createSession({ contextLength: 256 });
    // a decodes from BOS; b starts from a 60-token prefix (one batch) and decodes from there.
    const prefix = [expected.bos, ...expected.tokens.slice(0, 59)];
    let la = await a.eval([expected.bos]);
    let lb = await b.eval(prefix);
    for (let i = 0; i < 80; i++) {
      expect(maxAbsDiff(la, refRow(i))).toBeLessThanOrEqual(TOLERANCE);
      expect(maxAbsDiff(lb, refRow(59 + i))).toBeLessThanOrEqual(TOLERANCE);
      // Both calls in flight at once: the model runs them concurrently.
      [la, lb] = await Promise.all([a.eval([argmax(la)]), b.eval([argmax(lb)])]);
    }
    expect(a.position).toBe(81);
    expect(b.position).toBe(140);
    a.dispose();
    b.dispose();
  });

  test('calls queued on one session run in call order', async () => {
    const s = engine.createSession({ contextLength: 64 });
    const pending = [s.eval([expected.bos]), ...expected.tokens.slice(0, 9).map((t) => s.eval([t]))];
    expect(s.queued).toBe(10);
    const results = await Promise.all(pending);
    results.forEach((logits, i) => expect(maxAbsDiff(logits, refRow(i))).toBeLessThanOrEqual(TOLERANCE));
    expect(s.position).toBe(10);
    s.dispose();
  });

  test('truncate rewinds the cache: a re-fed suffix gives the reference again', async () => {
    const s = engine.createSession({ contextLength: 256 });
    await s.eval([expected.bos, ...expected.tokens.slice(0, 99)]);
    expect(s.position).toBe(100);
    s.truncate(50);
    expect(s.position).toBe(50);
    const again = await s.eval(expected.tokens.slice(49, 99), { allLogits: true });
    for (let i = 0; i < 50; i++) expect(maxAbsDiff(again.subarray(i * V, (i + 1) * V), refRow(50 + i))).toBeLessThanOrEqual(TOLERANCE);
    expect(() => s.truncate(101)).toThrow(RangeError);
    const pending = s.eval([1]);
    expect(() => s.truncate(0)).toThrow(expect.objectContaining({ code: 'ERR_WEIGHTMAP_BUSY' }));
    await pending;
    s.dispose();
  });

  test('step() with a greedy sampler gives the 200 golden tokens', async () => {
    const s = engine.createSession({ contextLength: 256 });
    const sampler = new (native().Sampler)(1);
    const tokens: number[] = [];
    let feed = [expected.bos];
    for (let i = 0; i < STEPS; i++) {
      const next = await s.step(feed, sampler, { temperature: 0 });
      tokens.push(next);
      feed = [next];
    }
    expect(tokens).toEqual(expected.tokens);
    expect(s.position).toBe(STEPS);
    s.dispose();
  });

  test('step() samples exactly as eval() followed by Sampler.sample over the same history', async () => {
    const { Sampler } = native();
    const params = { temperature: 0.9, topK: 40, topP: 0.9, repeatPenalty: 1.3, penaltyLastN: 16 };
    const stepping = engine.createSession({ contextLength: 128 });
    const evaluating = engine.createSession({ contextLength: 128 });
    const a = new Sampler(1234n);
    const b = new Sampler(1234n);
    const prompt = [expected.bos, ...expected.tokens.slice(0, 5)];
    const history = [...prompt];
    let feedA = prompt;
    let feedB = prompt;
    const fromStep: number[] = [];
    const fromEval: number[] = [];
    for (let i = 0; i < 60; i++) {
      const ta = await stepping.step(feedA, a, params);
      const logits = await evaluating.eval(feedB);
      const tb = b.sample(logits, params, Int32Array.from(history));
      fromStep.push(ta);
      fromEval.push(tb);
      history.push(tb);
      feedA = [ta];
      feedB = [tb];
    }
    expect(fromStep).toEqual(fromEval);
    // Sampling at temperature 0.9 with a repetition penalty leaves the greedy path.
    expect(fromStep).not.toEqual(expected.tokens.slice(5, 65));
    // One Sampler serves one step at a time.
    const first = stepping.step([1], a);
    await expect(evaluating.step([1], a)).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_BUSY' });
    await first;
    stepping.dispose();
    evaluating.dispose();
  });

  test("an f16 KV cache is half the size and stays within 0.05 of the reference", async () => {
    const f32 = engine.createSession({ contextLength: 256 });
    const f16 = engine.createSession({ contextLength: 256, kvCache: 'f16' });
    // 2 (k, v) x 5 layers x 4 kv heads x 256 positions x head_dim 8 x element size.
    expect(f32.cacheBytes).toBe(2 * 5 * 4 * 256 * 8 * 4);
    expect(f16.cacheBytes).toBe(f32.cacheBytes / 2);
    const ids = [expected.bos, ...expected.tokens.slice(0, 199)];
    const a = await f32.eval(ids, { allLogits: true });
    const b = await f16.eval(ids, { allLogits: true });
    expect(maxAbsDiff(b, expected.logits)).toBeLessThanOrEqual(0.05);
    expect(maxAbsDiff(a, b)).toBeGreaterThan(1e-5); // the keys and values really are rounded
    // Decoding reads the f16 cache too.
    const next = await f16.eval([expected.tokens[199]]);
    expect(next.length).toBe(V);
    f32.dispose();
    f16.dispose();
  });

  // The tolerance of q8_0 keys and values is held on the Qwen3 fixture (decoder-qwen3.test.ts);
  // here: the size with head_dim 8 (one scale per row), and that a prefill batch and single steps
  // read the same cache.
  test('a q8_0 KV cache with head_dim 8: one scale per row, the same logits batched as stepped', async () => {
    const batched = engine.createSession({ contextLength: 256, kvCache: 'q8_0' });
    const stepped = engine.createSession({ contextLength: 256, kvCache: 'q8_0' });
    // 2 (k, v) x 5 layers x 4 kv heads x 256 positions x (8 int8 + one f32 scale).
    expect(batched.cacheBytes).toBe(2 * 5 * 4 * 256 * (8 + 4));
    const ids = [expected.bos, ...expected.tokens.slice(0, 99)];
    const all = await batched.eval(ids, { allLogits: true });
    for (let i = 0; i < ids.length; i++) {
      const one = await stepped.eval([ids[i]]);
      expect(maxAbsDiff(all.subarray(i * V, (i + 1) * V), one)).toBeLessThanOrEqual(1e-4);
    }
    batched.dispose();
    stepped.dispose();
  });

  test('the same logits with 1 thread as with 2', async () => {
    const single = await DecoderEngine.load(weights, { threads: 1 });
    expect(single.loadInfo.threads).toBe(1);
    const s = single.createSession({ contextLength: 64 });
    const ids = [expected.bos, ...expected.tokens.slice(0, 49)];
    const all = await s.eval(ids, { allLogits: true });
    for (let i = 0; i < 50; i++) expect(maxAbsDiff(all.subarray(i * V, (i + 1) * V), refRow(i))).toBeLessThanOrEqual(TOLERANCE);
    single.dispose();
  });
});
