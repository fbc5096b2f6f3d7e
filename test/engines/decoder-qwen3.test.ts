/**
 * The decoder engine on the ajc1-qwen3-tiny fixture (Qwen3: QK-norm, head_dim != dim/heads, GQA,
 * RoPE θ=1e6 half pairs, Q8_0 weights, tied classifier). The reference computes without
 * activation quantization: the default path (runq-style Q8_0 activations) must land within 0.12,
 * the exact path (quant 'f32': weights dequantized once, f32 activations) within 0.001.
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { ajc1Format } from '../../lib/formats/containers/ajc1';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readF32, readJson } from '../helpers/fixtures';
import { argmax, greedy, maxAbsDiff } from './decoder-helpers';

const expected = readJson('ajc1-qwen3-tiny', 'expected.json');
const c0 = expected.cases[0];
const promptIds: number[] = c0.prompt.ids;
const lastLogits = readF32('ajc1-qwen3-tiny', c0.logits_file.path);
const V: number = expected.config.vocab_size;

/** |ours - reference| for every id listed in a fixture `top` list ([[id, logit], ...]). */
function topDiff(logits: Float32Array, top: [number, number][]): number {
  return Math.max(...top.map(([id, value]) => Math.abs(logits[id] - value)));
}

let weights: ModelWeights;
beforeAll(async () => {
  weights = await ajc1Format.read(fixture('ajc1-qwen3-tiny', 'model.bin'));
});
afterAll(() => closeWeights(weights));

describe.each([
  ['Q8_0 weights with Q8_0 activations (runq)', 'none', expected.tolerances.logits_abs_q8_activation_engine],
  ['weights dequantized to f32 (exact path)', 'f32', expected.tolerances.logits_abs_fp32_engine],
] as const)('%s', (_label, quant, tolerance: number) => {
  let engine: DecoderEngine;
  beforeAll(async () => {
    engine = await DecoderEngine.load(weights, { threads: 2, quant });
  });
  afterAll(() => engine.dispose());

  test(`last prompt position: every logit within ${tolerance}`, async () => {
    const session = engine.createSession({ contextLength: 64 });
    const logits = await session.eval(promptIds);
    expect(logits.length).toBe(V);
    expect(maxAbsDiff(logits, lastLogits)).toBeLessThanOrEqual(tolerance);
    session.dispose();
  });

  test('every prompt position: the top-20 ids within tolerance (all logits of one batch)', async () => {
    const session = engine.createSession({ contextLength: 64 });
    const all = await session.eval(promptIds, { allLogits: true });
    c0.prompt_positions.forEach((p: { pos: number; top: [number, number][] }) => {
      const row = all.subarray(p.pos * V, (p.pos + 1) * V);
      expect(topDiff(row, p.top)).toBeLessThanOrEqual(tolerance);
      expect(argmax(row)).toBe(p.top[0][0]);
    });
    session.dispose();
  });

  test('greedy continuation equals the reference and stops on <|im_end|>', async () => {
    const session = engine.createSession({ contextLength: 64 });
    const run = await greedy(session, promptIds, c0.greedy.max_new_tokens, c0.greedy.stop_ids);
    expect(run.tokens).toEqual(c0.greedy.tokens);
    c0.greedy.steps.forEach((step: { top: [number, number][] }, j: number) => {
      expect(topDiff(run.logits[j], step.top)).toBeLessThanOrEqual(tolerance);
    });
    session.dispose();
  });

  test('the prompt as one batch equals feeding it token by token', async () => {
    const batched = engine.createSession({ contextLength: 64 });
    const stepped = engine.createSession({ contextLength: 64 });
    const all = await batched.eval(promptIds, { allLogits: true });
    for (let i = 0; i < promptIds.length; i++) {
      const one = await stepped.eval([promptIds[i]]);
      // The same arithmetic per row; only the order of the f32 sums over groups may differ.
      expect(maxAbsDiff(all.subarray(i * V, (i + 1) * V), one)).toBeLessThanOrEqual(1e-4);
    }
    batched.dispose();
    stepped.dispose();
  });
});

test('an f16 KV cache keeps the greedy continuation and the 0.12 tolerance (Q8_0 path)', async () => {
  const engine = await DecoderEngine.load(weights, { threads: 2 });
  const session = engine.createSession({ contextLength: 64, kvCache: 'f16' });
  const run = await greedy(session, promptIds, c0.greedy.max_new_tokens, c0.greedy.stop_ids);
  expect(maxAbsDiff(run.logits[0], lastLogits)).toBeLessThanOrEqual(expected.tolerances.logits_abs_q8_activation_engine);
  expect(run.tokens).toEqual(c0.greedy.tokens);
  engine.dispose();
});

test('the KV cache is f16 by default on the Q8_0 path and f32 on the exact path', async () => {
  for (const [quant, bytes] of [['none', 2], ['f32', 4]] as const) {
    const engine = await DecoderEngine.load(weights, { threads: 1, quant });
    const c = expected.config;
    // 2 (k, v) x layers x kv heads x positions x head_dim x element size.
    expect(engine.createSession({ contextLength: 64 }).cacheBytes).toBe(2 * c.n_layers * c.n_kv_heads * 64 * c.head_dim * bytes);
    engine.dispose();
  }
});

// int8 keys, values and queries are 8-bit quantizations like the runq activations the 0.12
// tolerance covers: both paths stay within it.
test.each(['none', 'f32'] as const)('a q8_0 KV cache (quant %s) keeps the greedy continuation and the 0.12 tolerance', async (quant) => {
  const engine = await DecoderEngine.load(weights, { threads: 2, quant });
  const session = engine.createSession({ contextLength: 64, kvCache: 'q8_0' });
  const c = expected.config;
  // Per cached row: head_dim int8 values and one f32 scale per 32 (head_dim is a multiple of 32).
  expect(c.head_dim % 32).toBe(0);
  expect(session.cacheBytes).toBe(2 * c.n_layers * c.n_kv_heads * 64 * (c.head_dim + (4 * c.head_dim) / 32));
  const run = await greedy(session, promptIds, c0.greedy.max_new_tokens, c0.greedy.stop_ids);
  expect(maxAbsDiff(run.logits[0], lastLogits)).toBeLessThanOrEqual(expected.tolerances.logits_abs_q8_activation_engine);
  c0.greedy.steps.forEach((step: { top: [number, number][] }, j: number) => {
    expect(topDiff(run.logits[j], step.top)).toBeLessThanOrEqual(expected.tolerances.logits_abs_q8_activation_engine);
  });
  expect(run.tokens).toEqual(c0.greedy.tokens);
  engine.dispose();
});

test('the Q8_0 weights are used in place: nothing copied but the norms', async () => {
  const engine = await DecoderEngine.load(weights, { threads: 1 });
  const c = expected.config;
  const normFloats = c.n_layers * (2 * c.dim + 2 * c.head_dim) + c.dim;
  expect(engine.loadInfo.copiedBytes).toBe(4 * normFloats);
  expect(engine.loadInfo.converted).toBe(0);
  engine.dispose();
});
