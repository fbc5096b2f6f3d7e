/**
 * Sentence embeddings on the embd-minilm-tiny fixture (BERT hidden 32, 2 layers, 4 heads): token
 * ids, embeddings against the fixture's float64 reference, batch invariance, the int8 path,
 * pooling modes against an independent float64 forward pass, abort, dispose and concurrency.
 */
import { AbortError, DisposedError, UnsupportedError } from '../../lib/base/errors';
import { loadEmbedder, similarity, type Embedder } from '../../lib/models/embedder';
import { readWeights } from '../../lib/formats';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import type { BertConfig } from '../../lib/architectures/bert';
import { fixture, readF32, readJson } from '../helpers/fixtures';
import { ReferenceBert } from './reference';

interface Sentence {
  text: string;
  ids: number[];
  embedding: number[];
}

const MODEL = fixture('embd-minilm-tiny', 'model.weights');
const expected = readJson('embd-minilm-tiny', 'expected.json');
const sentences: Sentence[] = expected.sentences;
const texts = sentences.map((s) => s.text);
const H = expected.config.hidden_size as number;

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function expectSameVectors(a: Float32Array[], b: Float32Array[], tolerance: number): void {
  expect(a).toHaveLength(b.length);
  for (let i = 0; i < a.length; i++) expect(maxAbsDiff(a[i], b[i])).toBeLessThanOrEqual(tolerance);
}

describe('embd-minilm-tiny', () => {
  let embedder: Embedder;
  let weights: ModelWeights;
  let reference: ReferenceBert;

  beforeAll(async () => {
    embedder = await loadEmbedder(MODEL, { threads: 2 });
    weights = await readWeights(MODEL);
    reference = new ReferenceBert(weights, weights.config as BertConfig);
  });
  afterAll(() => {
    embedder.dispose();
    closeWeights(weights);
  });

  test('config and tokenizer come from the file', () => {
    expect(embedder.dimension).toBe(H);
    expect(embedder.maxSeqLength).toBe(256);
    expect(embedder.config).toMatchObject({ pooling: 'mean', normalize: true, layerNormEps: 1e-12, hiddenAct: 'gelu' });
    expect(embedder.info).toMatchObject({ format: 'embd', threads: 2, quant: 'f32' });
  });

  test('token ids equal the fixture', () => {
    for (const s of sentences) expect(embedder.tokenizer.encode(s.text)).toEqual(s.ids);
  });

  test('embeddings match the float64 reference (|d| <= 1e-4, cosine >= 0.99999)', async () => {
    const vectors = await embedder.embed(texts);
    const file = readF32('embd-minilm-tiny', 'embeddings.f32');
    sentences.forEach((s, i) => {
      expect(vectors[i]).toBeInstanceOf(Float32Array);
      expect(maxAbsDiff(vectors[i], s.embedding)).toBeLessThanOrEqual(expected.tolerances.embedding_abs);
      expect(maxAbsDiff(vectors[i], file.subarray(i * H, (i + 1) * H))).toBeLessThanOrEqual(expected.tolerances.embedding_abs);
      expect(similarity(vectors[i], s.embedding)).toBeGreaterThanOrEqual(expected.tolerances.cosine_min);
      // L2-normalized.
      expect(Math.hypot(...vectors[i])).toBeCloseTo(1, 6);
    });
  });

  test('a text gets the same vector alone, in any batch size and in any order', async () => {
    const batched = await embedder.embed(texts, { batchSize: 32 });
    const alone: Float32Array[] = [];
    for (const t of texts) alone.push((await embedder.embed([t]))[0]);
    expectSameVectors(batched, alone, 1e-6);
    expectSameVectors(await embedder.embed(texts, { batchSize: 5 }), alone, 1e-6);
    const order = texts.map((_, i) => (i * 7) % texts.length);
    const shuffled = await embedder.embed(order.map((i) => texts[i]), { batchSize: 4 });
    expectSameVectors(shuffled, order.map((i) => alone[i]), 1e-6);
    // Duplicates in one batch.
    const dup = await embedder.embed([texts[1], texts[1], texts[0]]);
    expectSameVectors(dup, [alone[1], alone[1], alone[0]], 1e-6);
  });

  test('one thread gives the vectors of two', async () => {
    const single = await loadEmbedder(MODEL, { threads: 1 });
    try {
      expect(single.info.threads).toBe(1);
      expectSameVectors(await single.embed(texts), await embedder.embed(texts), 1e-6);
    } finally {
      single.dispose();
    }
  });

  test.each(['int8', 'q8_0'] as const)('%s stays within cosine 0.999 of f32 and of the fixture', async (quant) => {
    const quantized = await loadEmbedder(MODEL, { quant, threads: 2 });
    try {
      expect(quantized.info.quant).toBe(quant);
      const f32 = await embedder.embed(texts);
      const int8 = await quantized.embed(texts);
      let worst = 1;
      int8.forEach((v, i) => {
        worst = Math.min(worst, similarity(v, f32[i]), similarity(v, Float32Array.from(sentences[i].embedding)));
      });
      expect(worst).toBeGreaterThanOrEqual(0.999);
      expect(worst).toBeLessThan(1); // it really is a different (quantized) path
      // Batch invariance holds for the int8 paths too, and concurrent calls (each with its own
      // activation and quantization buffers) give the same vectors.
      expectSameVectors(await quantized.embed(texts, { batchSize: 1 }), int8, 1e-6);
      const [all, tail] = await Promise.all([quantized.embed(texts, { batchSize: 2 }), quantized.embed(texts.slice(3))]);
      expectSameVectors(all, int8, 1e-6);
      expectSameVectors(tail, int8.slice(3), 1e-6);
    } finally {
      quantized.dispose();
    }
  });

  test('the float64 oracle itself reproduces the fixture', () => {
    for (const s of sentences) {
      const e = reference.embed(s.ids, 'mean', true);
      expect(maxAbsDiff(e, s.embedding)).toBeLessThanOrEqual(1e-6);
    }
  });

  test.each([
    ['mean', false],
    ['cls', true],
    ['cls', false],
    ['max', true],
    ['max', false],
  ] as const)('pooling %s, normalize %s matches the float64 oracle', async (pooling, normalize) => {
    const vectors = await embedder.embed(texts, { pooling, normalize, batchSize: 5 });
    sentences.forEach((s, i) => {
      const e = reference.embed(s.ids, pooling, normalize);
      const scale = Math.max(1, ...Array.from(e, Math.abs));
      expect(maxAbsDiff(vectors[i], e) / scale).toBeLessThanOrEqual(1e-5);
    });
  });

  test('long texts are truncated to max_seq_length, [SEP] kept', async () => {
    const long = Array.from({ length: 400 }, (_, i) => ['alpha', 'beta', 'gamma', 'delta'][i % 4]).join(' ');
    const ids = embedder.tokenizer.encode(long, { maxLength: embedder.maxSeqLength });
    expect(ids).toHaveLength(256);
    expect(ids[0]).toBe(101);
    expect(ids[255]).toBe(102);
    const [v] = await embedder.embed([long]);
    expect(maxAbsDiff(v, reference.embed(ids, 'mean', true))).toBeLessThanOrEqual(1e-5);
    // 70 × 256 tokens is past one native call's token budget: the batch is cut, the vectors are not.
    const many = await embedder.embed([...new Array(70).fill(long), texts[0]], { batchSize: 71 });
    many.slice(0, 70).forEach((m) => expect(maxAbsDiff(m, v)).toBeLessThanOrEqual(1e-6));
    expect(maxAbsDiff(many[70], sentences[0].embedding)).toBeLessThanOrEqual(1e-4);
  });

  test('embedTokens takes ids directly and checks them', async () => {
    const vectors = await embedder.embedTokens(sentences.map((s) => s.ids));
    sentences.forEach((s, i) => expect(maxAbsDiff(vectors[i], s.embedding)).toBeLessThanOrEqual(1e-4));
    await expect(embedder.embedTokens([[101, 30522, 102]])).rejects.toThrow(RangeError);
    await expect(embedder.embedTokens([[101, -1, 102]])).rejects.toThrow(RangeError);
    await expect(embedder.embedTokens([[]])).rejects.toThrow(RangeError);
    await expect(embedder.embedTokens([new Array(513).fill(1000)])).rejects.toThrow(RangeError);
    await expect(embedder.embed(texts, { batchSize: 0 })).rejects.toThrow(RangeError);
    await expect(embedder.embed(texts, { pooling: 'sum' as never })).rejects.toThrow(RangeError);
    expect(await embedder.embed([])).toEqual([]);
  });

  test('concurrent embed() calls give the same vectors as sequential ones', async () => {
    const a = texts.slice(0, 7);
    const b = texts.slice(4);
    const [ra, rb, ra2] = await Promise.all([embedder.embed(a, { batchSize: 2 }), embedder.embed(b), embedder.embed(a, { batchSize: 3 })]);
    const sa = await embedder.embed(a);
    expectSameVectors(ra, sa, 1e-6);
    expectSameVectors(ra2, sa, 1e-6);
    expectSameVectors(rb, await embedder.embed(b), 1e-6);
  });

  test('an aborted signal rejects with AbortError, before or during the work', async () => {
    const before = new AbortController();
    before.abort();
    await expect(embedder.embed(texts, { signal: before.signal })).rejects.toBeInstanceOf(AbortError);

    const many = Array.from({ length: 3000 }, (_, i) => `${texts[i % texts.length]} ${i}`);
    const during = new AbortController();
    const pending = embedder.embed(many, { batchSize: 1, signal: during.signal });
    setTimeout(() => during.abort(), 20);
    await expect(pending).rejects.toBeInstanceOf(AbortError);
    // The embedder still works afterwards.
    expect(maxAbsDiff((await embedder.embed([texts[0]]))[0], sentences[0].embedding)).toBeLessThanOrEqual(1e-4);
  });

  test('dispose while a call runs is safe; later calls throw DisposedError', async () => {
    const e = await loadEmbedder(MODEL, { threads: 2 });
    const many = Array.from({ length: 200 }, (_, i) => texts[i % texts.length]);
    const running = e.embed(many, { batchSize: 8 });
    e.dispose();
    e.dispose(); // idempotent
    const settled = await running.then(
      (v) => ({ ok: true as const, v }),
      (error: unknown) => ({ ok: false as const, error }),
    );
    if (settled.ok) {
      settled.v.forEach((v, i) => expect(maxAbsDiff(v, sentences[i % texts.length].embedding)).toBeLessThanOrEqual(1e-4));
    } else {
      expect(settled.error).toBeInstanceOf(DisposedError);
    }
    expect(e.disposed).toBe(true);
    await expect(e.embed(texts)).rejects.toBeInstanceOf(DisposedError);
    expect(() => e.info).toThrow(DisposedError);
  });

  test('a model that is not BERT is refused', async () => {
    await expect(loadEmbedder(fixture('tllm-tiny', 'model.tllm'))).rejects.toBeInstanceOf(UnsupportedError);
  });
});

describe('similarity', () => {
  test('cosine in closed form', () => {
    const a = Float32Array.from([1, 2, 3]);
    expect(similarity(a, a)).toBeCloseTo(1, 12);
    expect(similarity(a, Float32Array.from([-1, -2, -3]))).toBeCloseTo(-1, 12);
    expect(similarity([1, 0], [0, 5])).toBe(0);
    expect(similarity([3, 4], [4, 3])).toBeCloseTo(24 / 25, 12);
    expect(similarity([0, 0], [1, 2])).toBe(0);
    expect(() => similarity([1], [1, 2])).toThrow(RangeError);
  });
});
