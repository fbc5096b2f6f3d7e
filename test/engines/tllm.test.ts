/**
 * The gpt engine on tllm-tiny (fixtures README §2): logits at every prompt position against the
 * float64 reference, and the greedy continuation with a KV cache (the reference recomputes the
 * whole sequence each step).
 */
import { tllmFormat } from '../../lib/formats/containers/tllm';
import { GptEngine } from '../../lib/engines/gpt';
import { AbortError, DisposedError, UnsupportedError } from '../../lib/base/errors';
import { native } from '../../lib/addon/native';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readF32, readJson } from '../helpers/fixtures';

const expected = readJson('tllm-tiny', 'expected.json');
const TOL = expected.tolerances?.logits_abs ?? 0.001;
const V = 100;

function argmax(x: Float32Array, offset = 0, n = x.length - offset): number {
  let best = 0;
  for (let i = 1; i < n; i++) if (x[offset + i] > x[offset + best]) best = i;
  return best;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('gpt engine (TLLM) on tllm-tiny', () => {
  let weights: ModelWeights;
  let engine: GptEngine;
  const kase = expected.cases[0];
  const prompt: number[] = kase.prompt.ids;

  beforeAll(async () => {
    weights = await tllmFormat.read(fixture('tllm-tiny', 'model.tllm'));
    engine = await GptEngine.load(weights, { threads: 2 });
  });
  afterAll(() => {
    engine.dispose();
    closeWeights(weights);
  });

  test('logits at every prompt position are within tolerance of case0.logits.f32', async () => {
    const reference = readF32('tllm-tiny', kase.logits_file.path ?? 'case0.logits.f32');
    const session = engine.createSession();
    const logits = await session.eval(prompt, { allLogits: true });
    expect(logits.length).toBe(prompt.length * V);
    expect(maxAbsDiff(logits, reference)).toBeLessThanOrEqual(TOL);
    expect(session.position).toBe(prompt.length);
    session.dispose();
  });

  test('feeding the prompt in pieces gives the same last-position logits (KV cache)', async () => {
    const reference = readF32('tllm-tiny', 'case0.logits.f32');
    const session = engine.createSession();
    await session.eval(prompt.slice(0, 1));
    await session.eval(prompt.slice(1, 7));
    const last = await session.eval(prompt.slice(7));
    expect(maxAbsDiff(last, reference.subarray((prompt.length - 1) * V))).toBeLessThanOrEqual(TOL);
    session.dispose();
  });

  test('greedy continuation with the KV cache equals the reference', async () => {
    const session = engine.createSession();
    let logits = await session.eval(prompt);
    const tokens: number[] = [];
    for (let i = 0; i < kase.greedy.max_new_tokens; i++) {
      const t = argmax(logits);
      tokens.push(t);
      if (kase.greedy.stop_ids.includes(t)) break;
      logits = await session.eval([t]);
    }
    expect(tokens).toEqual(kase.greedy.tokens);
    session.dispose();
  });

  test('truncate rewinds the cache: re-feeding gives the same logits', async () => {
    const session = engine.createSession();
    const first = await session.eval(prompt);
    session.truncate(4);
    expect(session.position).toBe(4);
    const again = await session.eval(prompt.slice(4));
    expect(maxAbsDiff(first, again)).toBeLessThanOrEqual(1e-4);
    session.dispose();
  });

  test('a sequence past max_sequence_length is refused with a RangeError, nothing fed', async () => {
    const session = engine.createSession();
    const tooLong = new Array(weights.config.architecture === 'tllm' ? weights.config.maxSeqLen + 1 : 0).fill(1);
    await expect(session.eval(tooLong)).rejects.toThrow(RangeError);
    await expect(session.eval(tooLong)).rejects.toThrow(/max_sequence_length 128/);
    expect(session.position).toBe(0);
    await session.eval(new Array(128).fill(1));
    await expect(session.eval([1])).rejects.toThrow(RangeError);
    session.dispose();
  });

  test('a token id outside the vocabulary is a RangeError', async () => {
    const session = engine.createSession();
    await expect(session.eval([V])).rejects.toThrow(RangeError);
    await expect(session.eval([-1])).rejects.toThrow(RangeError);
    expect(session.position).toBe(0);
    session.dispose();
  });

  test('an aborted signal rejects with AbortError and leaves the position unchanged', async () => {
    const session = engine.createSession();
    const controller = new AbortController();
    controller.abort();
    await expect(session.eval(prompt, { signal: controller.signal })).rejects.toThrow(AbortError);
    expect(session.position).toBe(0);
    session.dispose();
  });

  test('calls on a disposed session throw DisposedError', async () => {
    const session = engine.createSession();
    session.dispose();
    await expect(session.eval(prompt)).rejects.toThrow(DisposedError);
  });

  test('weights missing a tensor are a WeightFormatError MISSING_TENSOR', async () => {
    const broken: ModelWeights = { ...weights, tensors: weights.tensors.filter((t) => t.name !== 'lm_head.weight') };
    await expect(GptEngine.load(broken)).rejects.toThrow(expect.objectContaining({ name: 'WeightFormatError', code: 'MISSING_TENSOR' }));
  });

  test('a linear weight stored [out,in] (not the TLLM layout) is refused, not misread', async () => {
    const tensors = weights.tensors.map((t) => (t.name === 'model.layers.0.self_attn.q_proj.weight' ? { ...t, transposed: false } : t));
    await expect(GptEngine.load({ ...weights, tensors })).rejects.toThrow(UnsupportedError);
  });

  test('two sessions of one engine run concurrently and both match the reference', async () => {
    const reference = readF32('tllm-tiny', 'case0.logits.f32');
    const a = engine.createSession();
    const b = engine.createSession();
    const [la, lb] = await Promise.all([a.eval(prompt, { allLogits: true }), b.eval(prompt.slice(0, 6), { allLogits: true })]);
    expect(maxAbsDiff(la, reference)).toBeLessThanOrEqual(TOL);
    expect(maxAbsDiff(lb, reference.subarray(0, 6 * V))).toBeLessThanOrEqual(TOL);
    a.dispose();
    b.dispose();
  });

  test('disposing a session while its eval runs settles the eval (logits or AbortError), never crashes', async () => {
    const reference = readF32('tllm-tiny', 'case0.logits.f32');
    for (let i = 0; i < 20; i++) {
      const session = engine.createSession();
      const pending = session.eval(prompt);
      session.dispose();
      const outcome = await pending.then(
        (logits) => maxAbsDiff(logits, reference.subarray((prompt.length - 1) * V)) <= TOL,
        (error) => error instanceof AbortError,
      );
      expect(outcome).toBe(true);
    }
  });

  test('step() picks tokens in the worker: greedy gives the reference continuation', async () => {
    const sampler = new (native().Sampler)(1);
    const session = engine.createSession();
    const tokens = [await session.step(prompt, sampler, { temperature: 0 })];
    while (tokens.length < kase.greedy.tokens.length) tokens.push(await session.step([tokens[tokens.length - 1]], sampler, { temperature: 0 }));
    expect(tokens).toEqual(kase.greedy.tokens);
    expect(session.position).toBe(prompt.length + tokens.length - 1);
    session.dispose();
  });

  test('step() with temperature draws what eval() + the same seeded Sampler draws', async () => {
    const params = { temperature: 1.5, topK: 20, topP: 0.9, repeatPenalty: 1.3 };
    const viaStep = new (native().Sampler)(42);
    const viaEval = new (native().Sampler)(42);
    const a = engine.createSession();
    const b = engine.createSession();
    let history = prompt.slice();
    let ta = await a.step(prompt, viaStep, params);
    let tb = viaEval.sample(await b.eval(prompt), params, Int32Array.from(history));
    for (let i = 0; i < 12; i++) {
      expect(ta).toBe(tb);
      history = [...history, ta];
      ta = await a.step([ta], viaStep, params);
      tb = viaEval.sample(await b.eval([tb]), params, Int32Array.from(history));
    }
    a.dispose();
    b.dispose();
  });

  test('one Sampler cannot serve two running steps', async () => {
    const sampler = new (native().Sampler)(7);
    const a = engine.createSession();
    const b = engine.createSession();
    const first = a.step(prompt, sampler, {});
    await expect(b.step(prompt, sampler, {})).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_BUSY' });
    await first;
    expect(await b.step(prompt, sampler, {})).toBe(kase.greedy.tokens[0]);
    a.dispose();
    b.dispose();
  });
});
