/**
 * Mistral through the decoder engine: an HF folder (model_type "mistral", head_dim ≠ hidden /
 * heads, sliding_window) against the float64 reference of tiny-decoder.ts (logits within
 * 2e-4·(1 + max |logit|)), the window's closed form (with L sliding layers of window W the logits
 * at p depend on tokens p - L·(W - 1) .. p only), and the GGUF the project's writer makes of it
 * (llama.cpp's `llama` architecture, q/k rows in its interleaved order, plus the window key).
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { writeGguf } from '../../lib/formats/writing/gguf-writer';
import { writeWeights } from '../../lib/formats';
import { decoderConfigFromHf, hfConfigFromDecoder } from '../../lib/formats/containers/hf-config';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { testWorkspace } from '../helpers/workspace';
import { maxAbsDiff } from './decoder-helpers';
import { engineLogits, referenceGreedy, referenceLogits, referenceTolerance, tinyDecoder, writeHfFolder } from './tiny-decoder';

const ws = testWorkspace('mistral-');

const MISTRAL_HF = {
  architectures: ['MistralForCausalLM'],
  model_type: 'mistral',
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 12,
  vocab_size: 64,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  sliding_window: 4,
  hidden_act: 'silu',
  tie_word_embeddings: false,
};
const WINDOW = 4, LAYERS = 2;
/** 45 ids: prefill's second tile of 32 queries starts past the window (its keys start at 29). */
const PROMPT = [1, ...Array.from({ length: 44 }, (_, i) => (i * 37 + 11) % 64)];
const model = tinyDecoder(MISTRAL_HF, 11);
let engine: DecoderEngine;

beforeAll(async () => {
  engine = await DecoderEngine.load(await ws.read(writeHfFolder(model, ws.fresh('hf'))), { threads: 2 });
});
afterAll(() => engine.dispose());

test('config.json: explicit head_dim, the window on every layer; null means full attention', () => {
  const c = decoderConfigFromHf(MISTRAL_HF);
  expect(c).toMatchObject<Partial<DecoderConfig>>({ architecture: 'mistral', headDim: 12, slidingWindow: 4, ropePairing: 'half', qkNorm: false, tieWordEmbeddings: false });
  expect(c.slidingWindowPattern).toBeUndefined();
  expect(decoderConfigFromHf(hfConfigFromDecoder(c))).toEqual(c);
  expect(decoderConfigFromHf({ ...MISTRAL_HF, sliding_window: null }).slidingWindow).toBeUndefined();
  const { sliding_window: _w, ...noKey } = MISTRAL_HF;
  expect(decoderConfigFromHf(noKey).slidingWindow).toBe(4096); // MistralConfig's default
});

test('logits of every position match the f64 reference; greedy tokens equal', async () => {
  const got = await engineLogits(engine, PROMPT);
  referenceLogits(model, PROMPT).forEach((row, t) => expect(maxAbsDiff(got.subarray(t * 64, (t + 1) * 64), row)).toBeLessThanOrEqual(referenceTolerance(row)));

  const want = referenceGreedy(model, PROMPT.slice(0, 3), 12);
  expect(want.minMargin).toBeGreaterThan(1e-2);
  const session = engine.createSession({ contextLength: 32 });
  let logits = await session.eval(PROMPT.slice(0, 3));
  const tokens: number[] = [];
  for (let i = 0; i < 12; i++) {
    let best = 0;
    for (let v = 1; v < 64; v++) if (logits[v] > logits[best]) best = v;
    tokens.push(best);
    logits = await session.eval([best]);
  }
  session.dispose();
  expect(tokens).toEqual(want.tokens);
});

test('sliding window closed form: logits at p ignore tokens before p - L·(W - 1), and see the one at it', async () => {
  const p = PROMPT.length - 1;
  const edge = p - LAYERS * (WINDOW - 1); // the earliest position that reaches p
  const base = await engineLogits(engine, PROMPT);
  const at = (all: Float32Array) => all.subarray(p * 64, (p + 1) * 64);
  const changed = (pos: number) => PROMPT.map((t, i) => (i === pos ? (t + 31) % 64 : t));
  for (let pos = 0; pos < edge; pos++) {
    expect(maxAbsDiff(at(await engineLogits(engine, changed(pos))), at(base))).toBe(0);
  }
  expect(maxAbsDiff(at(await engineLogits(engine, changed(edge))), at(base))).toBeGreaterThan(1e-3);
  // With an f16 KV cache (hgemm over the window) too, and within f16 rounding of the f32 cache.
  const half = await engineLogits(engine, PROMPT, 'f16');
  expect(maxAbsDiff(at(await engineLogits(engine, changed(edge - 1), 'f16')), at(half))).toBe(0);
  expect(maxAbsDiff(half, base)).toBeLessThanOrEqual(1e-2 * (1 + Math.max(...Array.from(base, Math.abs))));
  // Decoded one token at a time the same holds (the window in the one-query path).
  const session = engine.createSession({ contextLength: 64 });
  let last!: Float32Array;
  for (const t of changed(edge - 1)) last = await session.eval([t]);
  session.dispose();
  expect(maxAbsDiff(last, at(base))).toBeLessThanOrEqual(1e-5);
});

test("GGUF written from the HF folder reads back as Mistral (llama.cpp's llama + the window) with the same logits", async () => {
  const hf = await ws.read(writeHfFolder(model, ws.fresh('hf')));
  const file = ws.fresh('mistral.gguf');
  await writeGguf(hf, file);
  const gguf = await ws.read(file);
  expect([gguf.metadata['general.architecture'], gguf.metadata['llama.attention.sliding_window'], gguf.metadata['llama.attention.key_length']]).toEqual(['llama', 4, 12]);
  expect(gguf.config).toMatchObject({ architecture: 'mistral', ropePairing: 'interleaved', slidingWindow: 4, headDim: 12 });
  const ggufEngine = await DecoderEngine.load(gguf, { threads: 2 });
  try {
    expect(maxAbsDiff(await engineLogits(ggufEngine, PROMPT), await engineLogits(engine, PROMPT))).toBeLessThanOrEqual(1e-5);
  } finally {
    ggufEngine.dispose();
  }
});

test('a sepweight tree of the HF folder keeps the window (its config.json): the same config and logits', async () => {
  const hf = await ws.read(writeHfFolder(model, ws.fresh('hf')));
  const tree = ws.fresh('tree');
  await writeWeights(hf, tree, { format: 'sepweight' });
  const back = await ws.read(tree);
  expect(back.config).toEqual(hf.config);
  const treeEngine = await DecoderEngine.load(back, { threads: 2 });
  try {
    expect(maxAbsDiff(await engineLogits(treeEngine, PROMPT), await engineLogits(engine, PROMPT))).toBe(0);
  } finally {
    treeEngine.dispose();
  }
});
