/**
 * The bidirectional image prefix (upstream Moondream's prefix attention), which the fixtures do
 * not cover: the engine against a float64 forward pass of the text model written here from
 * FORMATS.md §2.4, run on moon-tiny's weights with the mask "row i sees key j when j <= i, or
 * when both are < prefix". The same reference with prefix 0 is first checked against the
 * fixture's causal logits, so it is known to compute the model.
 */
import { moonFormat } from '../../lib/formats/containers/moon';
import { readF32 as readTensor } from '../../lib/formats/quantization/tensor-data';
import { MoondreamEngine } from '../../lib/engines/moondream';
import { MOONDREAM_NAMES as N, type MoondreamConfig } from '../../lib/architectures/moondream';
import { closeWeights, findTensor, numel, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readF32, readJson } from '../helpers/fixtures';

const expected = readJson('moon-tiny', 'expected.json');

function tensor(weights: ModelWeights, name: string): Float64Array {
  const view = findTensor(weights, name);
  if (!view) throw new Error(`no tensor ${name}`);
  return Float64Array.from(readTensor(view, 0, numel(view.shape)));
}

function layerNorm(x: Float64Array, g: Float64Array, b: Float64Array, eps: number): Float64Array {
  const n = x.length;
  const mean = x.reduce((s, v) => s + v, 0) / n;
  const variance = x.reduce((s, v) => s + (v - mean) ** 2, 0) / n;
  const inv = 1 / Math.sqrt(variance + eps);
  return x.map((v, i) => (v - mean) * inv * g[i] + b[i]);
}

/** y [out] = W [out, in] · x + bias. */
function linear(w: Float64Array, bias: Float64Array, x: Float64Array): Float64Array {
  const out = bias.length;
  const inn = x.length;
  const y = new Float64Array(out);
  for (let o = 0; o < out; o++) {
    let s = bias[o];
    for (let i = 0; i < inn; i++) s += w[o * inn + i] * x[i];
    y[o] = s;
  }
  return y;
}

const gelu = (v: number) => 0.5 * v * (1 + Math.tanh(0.7978845608028654 * (v + 0.044715 * v * v * v)));

/** Logits [rows, V] of the text model over input rows (embeddings), with a bidirectional prefix. */
function referenceLogits(weights: ModelWeights, c: MoondreamConfig['text'], inputs: Float64Array[], prefix: number): Float64Array[] {
  const d = c.hiddenSize;
  const H = c.numHeads;
  const hd = c.headDim;
  const rot = c.rotaryDim;
  const T = inputs.length;
  const h = inputs.map((r) => Float64Array.from(r));
  const rope = (x: Float64Array, off: number, pos: number) => {
    for (let i = 0; i < rot / 2; i++) {
      const angle = pos * Math.pow(c.ropeTheta, (-2 * i) / rot);
      const a = x[off + i];
      const b = x[off + i + rot / 2];
      x[off + i] = a * Math.cos(angle) - b * Math.sin(angle);
      x[off + i + rot / 2] = a * Math.sin(angle) + b * Math.cos(angle);
    }
  };
  for (let l = 0; l < c.numLayers; l++) {
    const lnW = tensor(weights, N.textLn(l, 'weight'));
    const lnB = tensor(weights, N.textLn(l, 'bias'));
    const qkvW = tensor(weights, N.textQkv(l, 'weight'));
    const qkvB = tensor(weights, N.textQkv(l, 'bias'));
    const projW = tensor(weights, N.textProj(l, 'weight'));
    const projB = tensor(weights, N.textProj(l, 'bias'));
    const fc1W = tensor(weights, N.textFc1(l, 'weight'));
    const fc1B = tensor(weights, N.textFc1(l, 'bias'));
    const fc2W = tensor(weights, N.textFc2(l, 'weight'));
    const fc2B = tensor(weights, N.textFc2(l, 'bias'));
    const a = h.map((x) => layerNorm(x, lnW, lnB, c.layerNormEps));
    const qkv = a.map((x, pos) => {
      const y = linear(qkvW, qkvB, x);
      for (let head = 0; head < H; head++) {
        rope(y, head * hd, pos);
        rope(y, d + head * hd, pos);
      }
      return y;
    });
    for (let i = 0; i < T; i++) {
      const att = new Float64Array(d);
      for (let head = 0; head < H; head++) {
        const visible = [...Array(T).keys()].filter((j) => j <= i || (i < prefix && j < prefix));
        const scores = visible.map((j) => {
          let s = 0;
          for (let e = 0; e < hd; e++) s += qkv[i][head * hd + e] * qkv[j][d + head * hd + e];
          return s / Math.sqrt(hd);
        });
        const max = Math.max(...scores);
        const p = scores.map((s) => Math.exp(s - max));
        const sum = p.reduce((x, y) => x + y, 0);
        visible.forEach((j, k) => {
          for (let e = 0; e < hd; e++) att[head * hd + e] += (p[k] / sum) * qkv[j][2 * d + head * hd + e];
        });
      }
      const o = linear(projW, projB, att);
      const m = linear(fc2W, fc2B, linear(fc1W, fc1B, a[i]).map(gelu));
      for (let e = 0; e < d; e++) h[i][e] += o[e] + m[e];
    }
  }
  const postW = tensor(weights, N.postLn('weight'));
  const postB = tensor(weights, N.postLn('bias'));
  const lmW = tensor(weights, N.lmHead('weight'));
  const lmB = tensor(weights, N.lmHead('bias'));
  return h.map((x) => linear(lmW, lmB, layerNorm(x, postW, postB, c.layerNormEps)));
}

function maxAbsDiff(ours: Float32Array, reference: Float64Array[]): number {
  const V = reference[0].length;
  expect(ours.length).toBe(reference.length * V);
  let m = 0;
  reference.forEach((row, r) => row.forEach((v, i) => (m = Math.max(m, Math.abs(ours[r * V + i] - v)))));
  return m;
}

describe('Moondream bidirectional image prefix', () => {
  let weights: ModelWeights;
  let engine: MoondreamEngine;
  let rows: Float32Array;
  let inputs: Float64Array[];
  const P = 1 + (expected.config.n_patches as number);

  beforeAll(async () => {
    weights = await moonFormat.read(fixture('moon-tiny', 'model.moon'));
    engine = await MoondreamEngine.load(weights, { threads: 2 });
    const embeddings = readF32('moon-tiny', 'image_embeddings.f32');
    const d = engine.config.text.hiddenSize;
    const ids: number[] = expected.combined_case.sequence[2].ids;
    rows = new Float32Array((P + ids.length) * d);
    rows.set(engine.embed([expected.config.bos_token_id]), 0);
    rows.set(embeddings, d);
    rows.set(engine.embed(ids), P * d);
    inputs = [...Array(P + ids.length).keys()].map((r) => Float64Array.from(rows.subarray(r * d, (r + 1) * d)));
  });
  afterAll(() => {
    engine.dispose();
    closeWeights(weights);
  });

  test('the float64 reference reproduces the fixture causal logits (prefix 0)', () => {
    const reference = referenceLogits(weights, engine.config.text, inputs, 0);
    const fixtureLogits = readF32('moon-tiny', 'combined.logits.f32');
    // Both are float64 computations from the same weights and inputs (the fixture's image
    // embeddings), stored as float32.
    expect(maxAbsDiff(fixtureLogits, reference)).toBeLessThanOrEqual(1e-4);
  });

  test(`engine logits with prefixAttention = ${P} match the reference at every position`, async () => {
    const reference = referenceLogits(weights, engine.config.text, inputs, P);
    const session = engine.createSession();
    const logits = await session.eval(rows, { logits: 'all', prefixAttention: P });
    expect(maxAbsDiff(logits, reference)).toBeLessThanOrEqual(expected.tolerances.logits_abs_fp32_engine);
    // The prefix mask matters: the first row's logits move by far more than the tolerance.
    const causal = referenceLogits(weights, engine.config.text, inputs.slice(0, 1), 0)[0];
    expect(Math.max(...reference[0].map((v, i) => Math.abs(v - causal[i])))).toBeGreaterThan(0.05);
    // Decoding after the prefix continues from the same cache.
    const next = await session.eval([expected.combined_case.greedy.tokens[0]]);
    const extended = referenceLogits(weights, engine.config.text, [...inputs, Float64Array.from(engine.embed([expected.combined_case.greedy.tokens[0]]))], P);
    expect(maxAbsDiff(next, extended.slice(-1))).toBeLessThanOrEqual(expected.tolerances.logits_abs_fp32_engine);
    session.dispose();
  });
});
