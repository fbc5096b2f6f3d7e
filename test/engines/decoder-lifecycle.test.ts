/**
 * Abort, dispose, misuse and hostile specs: every failure is a typed error, never a crash, and
 * a session stays usable (and correct) after an aborted call.
 */
import type { EngineWeightsSpec } from '../../lib/addon/binding';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { DecoderEngine, decoderWeightsSpec } from '../../lib/engines/decoder';
import { AbortError, DisposedError, UnsupportedError, WeightFormatError } from '../../lib/base/errors';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { native } from '../../lib/addon/native';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';
import { maxAbsDiff, storiesExpected } from './decoder-helpers';

const expected = storiesExpected();
const V = expected.vocab;
const refRow = (i: number) => expected.logits.subarray(i * V, (i + 1) * V);
const prompt = [expected.bos, ...expected.tokens.slice(0, 99)];

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

describe('abort', () => {
  test('abort() right after eval() rejects with AbortError and leaves the position unchanged', async () => {
    const s = engine.createSession({ contextLength: 256 });
    await s.eval(prompt.slice(0, 10));
    const running = s.eval(prompt.slice(10, 100));
    s.abort();
    await expect(running).rejects.toBeInstanceOf(AbortError);
    await expect(running).rejects.toMatchObject({ code: 'ABORT_ERR' });
    expect(s.position).toBe(10);
    // The session still works, and the positions the aborted call half-wrote are recomputed.
    const all = await s.eval(prompt.slice(10, 100), { allLogits: true });
    for (let i = 0; i < 90; i++) expect(maxAbsDiff(all.subarray(i * V, (i + 1) * V), refRow(10 + i))).toBeLessThanOrEqual(0.001);
    s.dispose();
  });

  test('an AbortSignal stops the running call and rejects the queued ones', async () => {
    const s = engine.createSession({ contextLength: 256 });
    const controller = new AbortController();
    const first = s.eval(prompt, { signal: controller.signal });
    const queued = s.eval([5], { signal: controller.signal });
    const unrelated = s.eval([expected.bos]); // no signal: runs after the aborted ones
    controller.abort();
    await expect(first).rejects.toBeInstanceOf(AbortError);
    await expect(queued).rejects.toBeInstanceOf(AbortError);
    expect(maxAbsDiff(await unrelated, refRow(0))).toBeLessThanOrEqual(0.001);
    expect(s.position).toBe(1);
    s.dispose();
  });

  test('an already aborted signal rejects without running', async () => {
    const s = engine.createSession({ contextLength: 16 });
    await expect(s.eval([expected.bos], { signal: AbortSignal.abort() })).rejects.toBeInstanceOf(AbortError);
    expect(s.position).toBe(0);
    s.dispose();
  });

  test('session.abort() rejects every call queued before it, not the ones after', async () => {
    const s = engine.createSession({ contextLength: 16 });
    const before = [s.eval([expected.bos]), s.eval([expected.tokens[0]])];
    s.abort();
    const after = s.eval([expected.bos]);
    for (const p of before) await expect(p).rejects.toBeInstanceOf(AbortError);
    expect(maxAbsDiff(await after, refRow(0))).toBeLessThanOrEqual(0.001);
    s.dispose();
  });
});

describe('dispose', () => {
  /** Lets the wrapper hand a queued call to the native session. */
  const started = () => new Promise((resolve) => setImmediate(resolve));

  test('disposing a session before its queued call starts rejects it with DisposedError', async () => {
    const s = engine.createSession({ contextLength: 256 });
    const queued = s.eval(prompt);
    s.dispose();
    await expect(queued).rejects.toBeInstanceOf(DisposedError);
  });

  test('disposing a session while it runs settles the call and rejects later ones', async () => {
    const s = engine.createSession({ contextLength: 256 });
    const running = s.eval(prompt);
    await started();
    s.dispose();
    s.dispose(); // twice is fine
    await running.then(
      (logits) => expect(logits.length).toBe(V),
      (error) => expect(error).toBeInstanceOf(AbortError),
    );
    await expect(s.eval([1])).rejects.toBeInstanceOf(DisposedError);
    expect(s.disposed).toBe(true);
  });

  test('disposing the model disposes its sessions; the mappings may close under a running call', async () => {
    const w = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
    const e = await DecoderEngine.load(w, { threads: 2 });
    const s = e.createSession({ contextLength: 256 });
    const running = s.eval(prompt);
    await started();
    closeWeights(w); // the engine holds its own reference to the pages
    e.dispose();
    e.dispose();
    await running.then(
      (logits) => expect(logits.length).toBe(V),
      (error) => expect(error).toBeInstanceOf(AbortError),
    );
    expect(e.disposed).toBe(true);
    expect(() => e.createSession()).toThrow(DisposedError);
    await expect(s.eval([1])).rejects.toBeInstanceOf(DisposedError);
  });

  test('a closed mapping cannot be loaded', async () => {
    const w = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
    closeWeights(w);
    await expect(DecoderEngine.load(w)).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_CLOSED' });
  });
});

describe('misuse', () => {
  test('ids that do not fit the context reject with RangeError and change nothing', async () => {
    const s = engine.createSession({ contextLength: 8 });
    await s.eval([1, 2, 3, 4, 5]);
    await expect(s.eval([1, 2, 3, 4])).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
    expect(s.position).toBe(5);
    await s.eval([1, 2, 3]);
    expect(s.position).toBe(8);
    s.dispose();
  });

  test('token ids outside the vocabulary and empty input are RangeErrors', async () => {
    const s = engine.createSession({ contextLength: 8 });
    await expect(s.eval([V])).rejects.toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
    await expect(s.eval([-1])).rejects.toBeInstanceOf(RangeError);
    await expect(s.eval([])).rejects.toBeInstanceOf(RangeError);
    expect(s.position).toBe(0);
    s.dispose();
  });

  test('a context longer than the model allows is a RangeError', () => {
    expect(() => engine.createSession({ contextLength: 513 })).toThrow(RangeError);
    expect(() => engine.createSession({ contextLength: 0 })).toThrow(RangeError);
  });

  test('the native session refuses a second call while one runs (the wrapper queues instead)', async () => {
    const s = engine.createSession({ contextLength: 256 });
    const raw = (s as unknown as { native: { eval(ids: Int32Array): Promise<Float32Array> } }).native;
    const first = raw.eval(Int32Array.from(prompt));
    expect(() => raw.eval(Int32Array.of(1))).toThrow(expect.objectContaining({ code: 'ERR_WEIGHTMAP_BUSY' }));
    await first;
    s.dispose();
  });

  test('native classes cannot be constructed from JS', () => {
    const { DecoderModel, DecoderSession } = native() as unknown as Record<string, new () => unknown>;
    // (Errors thrown natively come from Node's own realm, not jest's: compare by name and code.)
    expect(() => new DecoderModel()).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => new DecoderSession()).toThrow(expect.objectContaining({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' }));
  });

  test('a model that is not a decoder is UnsupportedError', async () => {
    await expect(DecoderEngine.load({ ...weights, config: { architecture: 'unknown' } })).rejects.toBeInstanceOf(UnsupportedError);
  });
});

describe('hostile specs are WeightFormatErrors before anything runs', () => {
  type Spec = { spec: EngineWeightsSpec; config: DecoderConfig };
  const load = (edit: (s: Spec) => void) => {
    const s = decoderWeightsSpec(weights);
    edit(s);
    return () => native().DecoderModel.load(s.spec, s.config);
  };
  const q = 'model.layers.0.self_attn.q_proj.weight';

  test.each([
    ['a view past the end of the file', 'OUT_OF_BOUNDS', (s: Spec) => { s.spec.tensors[q].byteOffset = 1_056_540 - 100; }],
    ['an offset near 2^53', 'OUT_OF_BOUNDS', (s: Spec) => { s.spec.tensors[q].byteOffset = 2 ** 53 - 1; }],
    ['a byte length that disagrees with the shape', 'SHAPE_MISMATCH', (s: Spec) => { s.spec.tensors[q].byteLength -= 4; }],
    ['an unknown dtype', 'BAD_DTYPE', (s: Spec) => { s.spec.tensors[q].dtype = 'i8'; }],
    ['q8_0 without scales', 'MISSING_TENSOR', (s: Spec) => { s.spec.tensors[q].dtype = 'q8_0'; s.spec.tensors[q].byteLength /= 4; }],
  ])('%s', (_label, code, edit) => {
    expect(load(edit)).toThrow(expect.objectContaining({ code }));
  });

  test.each([
    ['a missing tensor', 'MISSING_TENSOR', (s: Spec) => { delete s.spec.tensors['model.layers.4.mlp.down_proj.weight']; }],
    ['a shape that disagrees with the config', 'SHAPE_MISMATCH', (s: Spec) => { s.config.intermediateSize = 171; }],
    ['heads that do not group', 'CONFIG_MISMATCH', (s: Spec) => { s.config.numKvHeads = 3; }],
    ['an odd head_dim', 'CONFIG_MISMATCH', (s: Spec) => { s.config.headDim = 7; s.config.numHeads = 8; }],
  ])('%s (found while preparing)', async (_label, code, edit) => {
    await expect(load(edit)()).rejects.toMatchObject({ code });
  });

  test('through the wrapper they arrive as WeightFormatError with the path', async () => {
    const bad = { ...weights, tensors: weights.tensors.filter((t) => t.name !== 'model.norm.weight') };
    const error = await DecoderEngine.load(bad).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(WeightFormatError);
    expect(error).toMatchObject({ code: 'MISSING_TENSOR', path: weights.path });
  });
});
