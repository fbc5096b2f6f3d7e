/**
 * Moondream's engines on moon-tiny (fixtures README §3): text logits and greedy tokens, vision
 * features and image embeddings of image.rgb, and the combined BOS + image + text sequence.
 * The engines keep activations in f32, so the fp32 tolerances apply.
 */
import * as fs from 'node:fs';
import { moonFormat } from '../../lib/formats/containers/moon';
import { MoondreamEngine, type MoondreamSession } from '../../lib/engines/moondream';
import { AbortError, DisposedError, UnsupportedError } from '../../lib/base/errors';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readF32, readJson } from '../helpers/fixtures';

const expected = readJson('moon-tiny', 'expected.json');
const LOGIT_TOL: number = expected.tolerances.logits_abs_fp32_engine; // 0.001
const EMB_TOL: number = expected.tolerances.image_embeddings_abs_fp32_engine; // 0.0001
const V = expected.config.vocab_size as number;
const BOS = expected.config.bos_token_id as number;

function argmax(x: Float32Array): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

async function greedy(session: MoondreamSession, first: Float32Array, max: number, stop: number[]): Promise<number[]> {
  const tokens: number[] = [];
  let logits = first;
  for (let i = 0; i < max; i++) {
    const t = argmax(logits);
    tokens.push(t);
    if (stop.includes(t)) break;
    logits = await session.eval([t]);
  }
  return tokens;
}

describe('Moondream engines on moon-tiny', () => {
  let weights: ModelWeights;
  let engine: MoondreamEngine;
  const image = new Uint8Array(fs.readFileSync(fixture('moon-tiny', 'image.rgb')));
  const textCase = expected.cases[0];
  const prompt: number[] = textCase.prompt.ids;
  const combined = expected.combined_case;

  beforeAll(async () => {
    weights = await moonFormat.read(fixture('moon-tiny', 'model.moon'));
    engine = await MoondreamEngine.load(weights, { threads: 2 });
  });
  afterAll(() => {
    engine.dispose();
    closeWeights(weights);
  });

  test('text: logits at every prompt position match text0.logits.f32', async () => {
    const session = engine.createSession();
    const logits = await session.eval(prompt, { logits: 'all' });
    expect(maxAbsDiff(logits, readF32('moon-tiny', 'text0.logits.f32'))).toBeLessThanOrEqual(LOGIT_TOL);
    session.dispose();
  });

  test('text: greedy continuation with the KV cache equals the reference', async () => {
    const session = engine.createSession();
    const first = await session.eval(prompt);
    const g = textCase.greedy;
    expect(await greedy(session, first, g.max_new_tokens, g.stop_ids)).toEqual(g.tokens);
    session.dispose();
  });

  test('vision: post-LN features and image embeddings of image.rgb', async () => {
    const { features, embeddings } = await engine.encodeRgb(image, { features: true });
    expect(maxAbsDiff(features!, readF32('moon-tiny', 'vision_features.f32'))).toBeLessThanOrEqual(EMB_TOL);
    expect(maxAbsDiff(embeddings, readF32('moon-tiny', 'image_embeddings.f32'))).toBeLessThanOrEqual(EMB_TOL);
  });

  test('combined: BOS + image embeddings + prompt, logits at every position and greedy tokens', async () => {
    const { embeddings } = await engine.encodeRgb(image);
    const d = engine.config.text.hiddenSize;
    const ids: number[] = combined.sequence[2].ids;
    const rows = new Float32Array((1 + engine.config.vision.numPatches + ids.length) * d);
    rows.set(engine.embed([BOS]), 0);
    rows.set(embeddings, d);
    rows.set(engine.embed(ids), (1 + engine.config.vision.numPatches) * d);
    const session = engine.createSession();
    const logits = await session.eval(rows, { logits: 'all' });
    expect(maxAbsDiff(logits, readF32('moon-tiny', 'combined.logits.f32'))).toBeLessThanOrEqual(LOGIT_TOL);
    const g = combined.greedy;
    const first = logits.subarray(logits.length - V);
    expect(await greedy(session, first, g.max_new_tokens, g.stop_ids)).toEqual(g.tokens);
    session.dispose();
  });

  test('combined in three calls (BOS id, image rows, prompt ids) gives the same last logits', async () => {
    const { embeddings } = await engine.encodeRgb(image);
    const session = engine.createSession();
    await session.eval([BOS], { logits: 'none' });
    await session.eval(embeddings, { logits: 'none' });
    const last = await session.eval(combined.sequence[2].ids);
    const reference = readF32('moon-tiny', 'combined.logits.f32');
    expect(maxAbsDiff(last, reference.subarray(reference.length - V))).toBeLessThanOrEqual(LOGIT_TOL);
    session.dispose();
  });

  test('a bidirectional prefix changes the prefix rows only through attention, and must be one call', async () => {
    const { embeddings } = await engine.encodeRgb(image);
    const d = engine.config.text.hiddenSize;
    const P = 1 + engine.config.vision.numPatches;
    const rows = new Float32Array(P * d);
    rows.set(engine.embed([BOS]), 0);
    rows.set(embeddings, d);
    const causal = engine.createSession();
    const prefixed = engine.createSession();
    const a = await causal.eval(rows, { logits: 'all' });
    const b = await prefixed.eval(rows, { logits: 'all', prefixAttention: P });
    // Row 0 sees only itself under the causal mask, every prefix row under the prefix mask.
    expect(maxAbsDiff(a.subarray(0, V), b.subarray(0, V))).toBeGreaterThan(1e-3);
    // prefixAttention = 1 is the causal mask.
    const one = engine.createSession();
    expect(maxAbsDiff(await one.eval(rows, { logits: 'all', prefixAttention: 1 }), a)).toBeLessThanOrEqual(1e-6);
    const split = engine.createSession();
    await split.eval(rows.subarray(0, d), { logits: 'none' });
    await expect(split.eval(rows.subarray(d), { prefixAttention: P })).rejects.toThrow(RangeError);
    for (const s of [causal, prefixed, one, split]) s.dispose();
  });

  test('encodeRgb rejects bytes of the wrong size; abort and dispose are typed', async () => {
    expect(() => engine.encodeRgb(new Uint8Array(10))).toThrow(RangeError);
    const controller = new AbortController();
    controller.abort();
    await expect(engine.encodeRgb(image, { signal: controller.signal })).rejects.toThrow(AbortError);
    const session = engine.createSession();
    await expect(session.eval([V])).rejects.toThrow(RangeError);
    session.dispose();
    await expect(session.eval(prompt)).rejects.toThrow(DisposedError);
  });

  test('weights with a vision matrix of the wrong shape are a WeightFormatError', async () => {
    const tensors = weights.tensors.map((t) =>
      t.name === 'model.vision.blocks.0.attn.qkv.weight' ? { ...t, shape: [...t.shape].reverse() } : t,
    );
    await expect(MoondreamEngine.load({ ...weights, tensors })).rejects.toThrow(
      expect.objectContaining({ name: 'WeightFormatError', code: 'SHAPE_MISMATCH' }),
    );
  });

  test('matrices in the other orientation than MOON stores are refused, not misread', async () => {
    const flip = (name: string) => weights.tensors.map((t) => (t.name === name ? { ...t, transposed: !t.transposed } : t));
    await expect(MoondreamEngine.load({ ...weights, tensors: flip('model.text.blocks.0.attn.proj.weight') })).rejects.toThrow(UnsupportedError);
    await expect(MoondreamEngine.load({ ...weights, tensors: flip('model.vision.blocks.1.attn.proj.weight') })).rejects.toThrow(UnsupportedError);
  });
});
