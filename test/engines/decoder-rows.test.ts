/**
 * Input rows at layer 0 (DecoderEngineSession.evalRows: image embeddings): rows that are the token
 * embeddings of a prompt give the fixture's logits for that prompt (llama2.c's stories260K, whose
 * embeddings are unscaled); the ids that name rows are the session's tokens (-1 unnamed); a
 * bidirectional span is one batch (at most 512 rows) of rows, never of token ids. Its numerics
 * against llama.cpp are test/engines/vision-llama-cpp.test.ts's (Gemma 3's image rows).
 */
import { DECODER_NAMES } from '../../lib/architectures/decoder';
import { DecoderEngine } from '../../lib/engines/decoder';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';
import { maxAbsDiff, storiesExpected } from './decoder-helpers';

const expected = storiesExpected();
const V = expected.vocab;
const prompt = [expected.bos, ...expected.tokens.slice(0, 19)];

let weights: ModelWeights;
let engine: DecoderEngine;
let dim: number;
beforeAll(async () => {
  weights = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
  engine = await DecoderEngine.load(weights, { threads: 2 });
  dim = weights.tensors.find((t) => t.name === DECODER_NAMES.embed)!.shape[1];
});
afterAll(() => {
  engine.dispose();
  closeWeights(weights);
});

/** The f32 embedding rows of `ids`, read from the mapped file. */
function embeddingRows(ids: number[]): Float32Array {
  const t = weights.tensors.find((v) => v.name === DECODER_NAMES.embed)!;
  expect(t.dtype).toBe('f32');
  const rows = new Float32Array(ids.length * dim);
  ids.forEach((id, i) => {
    const at = t.byteOffset + id * dim * 4;
    rows.set(new Float32Array(new Uint8Array(t.source.bytes.subarray(at, at + dim * 4)).buffer), i * dim);
  });
  return rows;
}

test('embedding rows of the prompt give its logits; ids name them in tokens', async () => {
  const s = engine.createSession({ contextLength: 64 });
  try {
    await s.eval(prompt.slice(0, 5));
    const all = await s.evalRows(embeddingRows(prompt.slice(5)), { logits: 'all', ids: prompt.slice(5) });
    for (let i = 0; i < prompt.length - 5; i++) expect(maxAbsDiff(all.subarray(i * V, (i + 1) * V), expected.logits.subarray((5 + i) * V, (6 + i) * V))).toBeLessThanOrEqual(0.001);
    expect(Array.from(s.tokens)).toEqual(prompt);
  } finally {
    s.dispose();
  }
  const unnamed = engine.createSession({ contextLength: 64 });
  try {
    await unnamed.evalRows(embeddingRows(prompt.slice(0, 3)), { logits: 'none' });
    expect(Array.from(unnamed.tokens)).toEqual([-1, -1, -1]);
  } finally {
    unnamed.dispose();
  }
});

test('a bidirectional span: rows in one batch, never token ids', async () => {
  const s = engine.createSession({ contextLength: 512 });
  try {
    await expect(s.evalRows(new Float32Array(513 * dim), { bidirectional: true })).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE', message: /at most 512/ });
    expect(s.position).toBe(0);
    // The first row sees the later ones: its logits change with them, unlike causal rows'.
    const rows = embeddingRows(prompt.slice(0, 4));
    const both = await s.evalRows(rows, { bidirectional: true, logits: 'all' });
    s.truncate(0);
    const causal = await s.evalRows(rows, { logits: 'all' });
    expect(maxAbsDiff(causal.subarray(0, V), expected.logits.subarray(0, V))).toBeLessThanOrEqual(0.001);
    expect(maxAbsDiff(both.subarray(0, V), causal.subarray(0, V))).toBeGreaterThan(0.01);
  } finally {
    s.dispose();
  }
  const native = engine.createSession({ contextLength: 64 });
  try {
    // The native session (what evalRows calls) refuses the option on ids before anything runs.
    const raw = (native as unknown as { live(): { eval(i: Int32Array, l: string, o: object): Promise<unknown> } }).live();
    expect(() => raw.eval(Int32Array.from([1]), 'last', { bidirectional: true })).toThrow(/input rows, not token ids/);
  } finally {
    native.dispose();
  }
});
