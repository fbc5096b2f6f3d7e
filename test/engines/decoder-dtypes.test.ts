/**
 * The weight layouts the engine accepts besides f32 and ajc1 Q8_0, each checked against the same
 * values in a layout already checked against the fixtures:
 *   f16 (hgemm kernels)            vs  the same f16 values converted to f32 at load (sgemm);
 *   bf16 (converted once at load)  vs  f32 holding the same values: identical logits;
 *   ggml_q8_0 (blocks in place)    vs  q8_0 with the same int8 values and scales: identical logits;
 *   misaligned f32 (copied)        vs  the fixture;
 *   quant 'q8_0' at load           vs  the original Q8_0 file the f32 values came from.
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { ajc1Format } from '../../lib/formats/containers/ajc1';
import { encodeFloats, f16ToF32, f32ToF16 } from '../../lib/formats/quantization/dtype-convert';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { readF32 as readTensor } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, numel, type ModelWeights, type TensorView } from '../../lib/addon/weights';
import { blobWeights, type BlobTensor } from '../formats/synthetic';
import { fixture, readF32, readJson, tempDir } from '../helpers/fixtures';
import { maxAbsDiff, storiesExpected } from './decoder-helpers';

const stories = storiesExpected();
const V = stories.vocab;
const storiesIds = [stories.bos, ...stories.tokens.slice(0, 63)];

let tmp: { dir: string; cleanup: () => void };
let storiesF32: ModelWeights;
let qwen: ModelWeights;
const opened: ModelWeights[] = [];

beforeAll(async () => {
  tmp = tempDir('weightmap-decoder-');
  storiesF32 = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
  qwen = await ajc1Format.read(fixture('ajc1-qwen3-tiny', 'model.bin'));
});
afterAll(() => {
  for (const w of [storiesF32, qwen, ...opened]) closeWeights(w);
  tmp.cleanup();
});

const isMatrix = (t: TensorView) => t.shape.length === 2;
const values = (t: TensorView) => readTensor(t, 0, numel(t.shape));

/** The same model with every tensor rewritten by `encode` into one blob file. */
function rewrite(base: ModelWeights, file: string, encode: (t: TensorView) => BlobTensor, misalign = false): ModelWeights {
  const w = blobWeights(tmp.dir, file, base.format, base.config, base.tensors.map(encode), { misalign });
  opened.push(w);
  return w;
}

/** Logits of every position of `ids` as one batch. */
async function allLogits(weights: ModelWeights, ids: number[], options: Parameters<typeof DecoderEngine.load>[1] = {}) {
  const engine = await DecoderEngine.load(weights, { threads: 2, ...options });
  const session = engine.createSession({ contextLength: 128 });
  const logits = await session.eval(ids, { allLogits: true });
  const info = engine.loadInfo;
  engine.dispose();
  return { logits, info };
}

const f32Tensor = (t: TensorView, v: Float32Array): BlobTensor => ({ name: t.name, dtype: 'f32', shape: t.shape, bytes: encodeFloats(v, 'f32') });

test('f16 weights through the f16 kernels match the same values in f32', async () => {
  const rounded = (t: TensorView) => values(t).map((x) => f16ToF32(f32ToF16(x)));
  const f16 = rewrite(storiesF32, 'f16.blob', (t) =>
    isMatrix(t) ? { name: t.name, dtype: 'f16', shape: t.shape, bytes: encodeFloats(values(t), 'f16') } : f32Tensor(t, values(t)));
  const f32 = rewrite(storiesF32, 'f16-as-f32.blob', (t) => f32Tensor(t, isMatrix(t) ? rounded(t) : values(t)));
  const a = await allLogits(f16, storiesIds);
  const b = await allLogits(f32, storiesIds);
  expect(a.info.converted).toBe(0); // f16 used in place
  expect(maxAbsDiff(a.logits, b.logits)).toBeLessThanOrEqual(1e-4);
  // And the f16 model is still the model: close to the f32 reference on most of the run.
  expect(maxAbsDiff(a.logits, stories.logits, 64 * V)).toBeLessThan(0.05);
});

test('bf16 weights are converted once at load and give exactly the f32 result', async () => {
  const bf16 = rewrite(storiesF32, 'bf16.blob', (t) => ({ name: t.name, dtype: 'bf16', shape: t.shape, bytes: encodeFloats(values(t), 'bf16') }));
  const truncated = rewrite(storiesF32, 'bf16-as-f32.blob', (t) => {
    const v = values(t);
    const bits = new Uint16Array(encodeFloats(v, 'bf16').buffer);
    const back = new Float32Array(v.length);
    new Uint32Array(back.buffer).set(Array.from(bits, (b) => b << 16));
    return f32Tensor(t, back);
  });
  const a = await allLogits(bf16, storiesIds);
  const b = await allLogits(truncated, storiesIds);
  // 5 layers x 7 matrices; the tied classifier converts the embedding table too (the lookup reads bf16 rows).
  expect(a.info.converted).toBe(36);
  expect(a.info.copiedBytes).toBeGreaterThan(4 * 36 * 64 * 64);
  expect(maxAbsDiff(a.logits, b.logits)).toBe(0);
});

test('misaligned f32 tensors are copied and still give the reference logits', async () => {
  const odd = rewrite(storiesF32, 'misaligned.blob', (t) => f32Tensor(t, values(t)), true);
  const a = await allLogits(odd, storiesIds);
  expect(a.info.converted).toBe(36);
  expect(maxAbsDiff(a.logits, stories.logits, 64 * V)).toBeLessThanOrEqual(0.001);
});

describe('Q8_0 layouts (ajc1-qwen3-tiny)', () => {
  const expected = readJson('ajc1-qwen3-tiny', 'expected.json');
  const ids: number[] = expected.cases[0].prompt.ids;
  const QV = expected.config.vocab_size as number;
  const GS = 32;

  test('ggml_q8_0 blocks run in place and compute exactly what q8_0 does', async () => {
    // Both files hold the same int8 values and the same scales (rounded to f16, which ggml stores).
    const q8Parts = (t: TensorView) => {
      const n = numel(t.shape);
      const q = new Int8Array(t.source.bytes.buffer, t.source.bytes.byteOffset + t.byteOffset, n);
      const s = readTensor({ ...t, dtype: 'f32', shape: [n / GS], byteOffset: t.scales!.byteOffset, byteLength: t.scales!.byteLength }, 0, n / GS);
      return { q, s: s.map((x) => f16ToF32(f32ToF16(x))) };
    };
    const ggml = rewrite(qwen, 'ggml.blob', (t) => {
      if (t.dtype !== 'q8_0') return f32Tensor(t, values(t));
      const { q, s } = q8Parts(t);
      const blocks = new Uint8Array((q.length / 32) * 34);
      for (let b = 0; b < q.length / 32; b++) {
        const h = f32ToF16(s[b]);
        blocks[b * 34] = h & 0xff;
        blocks[b * 34 + 1] = h >> 8;
        blocks.set(new Uint8Array(q.buffer, q.byteOffset + b * 32, 32), b * 34 + 2);
      }
      return { name: t.name, dtype: 'ggml_q8_0', shape: t.shape, bytes: blocks };
    });
    const q8 = rewrite(qwen, 'q8-f16-scales.blob', (t) => {
      if (t.dtype !== 'q8_0') return f32Tensor(t, values(t));
      const { q, s } = q8Parts(t);
      return { name: t.name, dtype: 'q8_0', shape: t.shape, bytes: new Uint8Array(q), scales: { bytes: encodeFloats(s, 'f32'), groupSize: GS } };
    });
    const a = await allLogits(ggml, ids);
    const b = await allLogits(q8, ids);
    expect(a.info.converted).toBe(0); // the blocks run in place
    expect(maxAbsDiff(a.logits, b.logits)).toBe(0);
    // f16 scales move the logits only a little from the reference.
    expect(maxAbsDiff(a.logits.subarray((ids.length - 1) * QV), readF32('ajc1-qwen3-tiny', expected.cases[0].logits_file.path))).toBeLessThanOrEqual(0.12);
  });

  test("quant 'q8_0' requantizes dequantized Q8_0 weights back to the same computation", async () => {
    // Every group holds a value of q = ±127 (export: s = max|w|/127), so quantizing q·s again
    // gives the same int8 values and the scale up to rounding.
    const f32 = rewrite(qwen, 'dequantized.blob', (t) => f32Tensor(t, values(t)));
    const requantized = await allLogits(f32, ids, { quant: 'q8_0', groupSize: GS });
    const original = await allLogits(qwen, ids);
    expect(requantized.info.converted).toBe(15);
    expect(requantized.info.kept).toEqual([]);
    expect(maxAbsDiff(requantized.logits, original.logits)).toBeLessThanOrEqual(1e-4);
  });
});

test('a separate classifier is used instead of the embedding: lm_head = 2·E doubles every logit exactly', async () => {
  const embed = storiesF32.tensors.find((t) => t.name === 'model.embed_tokens.weight')!;
  const separate = blobWeights(
    tmp.dir,
    'separate-head.blob',
    storiesF32.format,
    { ...storiesF32.config, tieWordEmbeddings: false } as typeof storiesF32.config,
    [...storiesF32.tensors.map((t) => f32Tensor(t, values(t))), f32Tensor({ ...embed, name: 'lm_head.weight' }, values(embed).map((x) => 2 * x))],
  );
  opened.push(separate);
  const tied = await allLogits(storiesF32, storiesIds);
  const doubled = await allLogits(separate, storiesIds);
  expect(maxAbsDiff(doubled.logits, tied.logits.map((x) => 2 * x))).toBe(0);
});

test("quant 'q8_0' with any group size that divides the rows: finer groups land closer", async () => {
  // stories260K rows are 64 and 172 long: groups of 4 divide both, so nothing stays f32.
  const fine = await allLogits(storiesF32, storiesIds, { quant: 'q8_0', groupSize: 4 });
  const coarse = await allLogits(storiesF32, storiesIds, { quant: 'q8_0', groupSize: 64 });
  expect(fine.info.kept).toEqual([]);
  expect(fine.info.converted).toBe(36);
  const fineDiff = maxAbsDiff(fine.logits, stories.logits, 64 * V);
  const coarseDiff = maxAbsDiff(coarse.logits, stories.logits, 64 * V);
  // (Q8_0 activations make the logits a step function of the inputs: a rounding that flips in one
  // group moves a logit by up to a few tenths on this real model, for every group size.)
  expect(fineDiff).toBeLessThan(coarseDiff);
  expect(fineDiff).toBeLessThan(0.3);
});

test("quant 'q8_0' leaves matrices whose rows are not whole groups as stored", async () => {
  // stories260K: hidden 172 is not a multiple of 32, so the five down projections stay f32.
  const { logits, info } = await allLogits(storiesF32, storiesIds, { quant: 'q8_0', groupSize: 32 });
  expect(info.kept).toEqual([0, 1, 2, 3, 4].map((l) => `model.layers.${l}.mlp.down_proj.weight`));
  expect(info.converted).toBe(31);
  // A quantized model: near the f32 reference, not equal to it.
  const diff = maxAbsDiff(logits, stories.logits, 64 * V);
  expect(diff).toBeGreaterThan(1e-4);
  expect(diff).toBeLessThan(0.5);
});
