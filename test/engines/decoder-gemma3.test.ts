/**
 * Gemma 3 (text, the 1B's shape scaled down) through the one decoder engine, from an HF folder and
 * from the GGUF the project's writer makes of it, against the float64 reference of
 * tiny-decoder.ts: logits within 2e-4·(1 + max |logit|) (f32 weights and activations against
 * f64), greedy tokens equal on a prompt longer than the sliding window (top-1/top-2 gaps checked
 * to exceed 1e-2), batched decode equal to decoding alone, and HF and GGUF logits equal to 1e-5
 * (the GGUF stores norms as 1 + w, as llama.cpp's converter does, and the engine adds nothing).
 */
import { native } from '../../lib/addon/native';
import { DecoderEngine } from '../../lib/engines/decoder';
import { writeGguf } from '../../lib/formats/writing/gguf-writer';
import { decoderConfigFromHf, hfConfigFromDecoder } from '../../lib/formats/containers/hf-config';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { findTensor, type ModelWeights } from '../../lib/addon/weights';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { testWorkspace } from '../helpers/workspace';
import { argmax, maxAbsDiff } from './decoder-helpers';
import { engineLogits, referenceGreedy, referenceLogits, referenceTolerance, tinyDecoder, writeHfFolder, type TinyDecoder } from './tiny-decoder';

const ws = testWorkspace('gemma3-');

const GEMMA_HF = {
  architectures: ['Gemma3ForCausalLM'],
  model_type: 'gemma3_text',
  hidden_size: 32,
  intermediate_size: 48,
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 1,
  head_dim: 16,
  vocab_size: 64,
  max_position_embeddings: 64,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  rope_local_base_freq: 10000,
  rope_scaling: null,
  sliding_window: 4,
  sliding_window_pattern: 3,
  query_pre_attn_scalar: 16,
  hidden_activation: 'gelu_pytorch_tanh',
  final_logit_softcapping: null,
  attn_logit_softcapping: null,
  bos_token_id: 2,
  eos_token_id: 1,
};

/** 40 tokens: ten windows of 4; prefill's second tile of 32 queries starts past the window. */
const PROMPT = [2, ...Array.from({ length: 39 }, (_, i) => (i * 29 + 5) % 64)];


async function load(model: TinyDecoder): Promise<{ weights: ModelWeights; engine: DecoderEngine }> {
  const weights = await ws.read(writeHfFolder(model, ws.fresh('hf')));
  const engine = await DecoderEngine.load(weights, { threads: 2 });
  return { weights, engine };
}

function expectNearReference(got: Float32Array, want: Float64Array[], vocab: number): void {
  want.forEach((row, t) => {
    expect(maxAbsDiff(got.subarray(t * vocab, (t + 1) * vocab), row)).toBeLessThanOrEqual(referenceTolerance(row));
  });
}

const model = tinyDecoder(GEMMA_HF, 7);

test('config.json of Gemma3ForCausalLM: the Gemma fields, sliding layers 0 and 1, global layer 2', () => {
  const c = decoderConfigFromHf(GEMMA_HF);
  expect(c).toMatchObject<Partial<DecoderConfig>>({
    architecture: 'gemma3', headDim: 16, qkNorm: true, sandwichNorms: true, activation: 'gelu_tanh', normWeightOffset: 1,
    embeddingScale: Math.sqrt(32), queryPreAttnScalar: 16, slidingWindow: 4, slidingWindowPattern: 3, ropeTheta: 1e6, ropeLocalTheta: 10000,
    tieWordEmbeddings: true, ropePairing: 'half',
  });
  // transformers ≥ 4.56: layer_types and rope_parameters per attention kind.
  const { sliding_window_pattern: _p, rope_local_base_freq: _r, rope_theta: _t, ...modern } = GEMMA_HF;
  const c2 = decoderConfigFromHf({
    ...modern,
    layer_types: ['sliding_attention', 'sliding_attention', 'full_attention'],
    rope_parameters: { full_attention: { rope_type: 'default', rope_theta: 1e6 }, sliding_attention: { rope_type: 'default', rope_theta: 10000 } },
  });
  expect([c2.slidingWindowPattern, c2.ropeTheta, c2.ropeLocalTheta]).toEqual([3, 1e6, 10000]);
  // Written back (weightmap's HF writer) and read again: the same config.
  expect(decoderConfigFromHf(hfConfigFromDecoder(c))).toEqual(c);
  const allSliding = { ...c, slidingWindowPattern: undefined };
  expect(decoderConfigFromHf(hfConfigFromDecoder(allSliding))).toEqual({ ...c, slidingWindowPattern: undefined, slidingWindow: 4 });
  expect(() => decoderConfigFromHf({ ...GEMMA_HF, final_logit_softcapping: 30 })).toThrow(expect.objectContaining({ code: 'UNSUPPORTED' }));
  expect(() => decoderConfigFromHf({ ...GEMMA_HF, hidden_activation: 'silu' })).toThrow(expect.objectContaining({ code: 'UNSUPPORTED' }));
});

test('HF folder: logits of every position match the f64 reference (context longer than the window)', async () => {
  const { engine } = await load(model);
  try {
    expectNearReference(await engineLogits(engine, PROMPT), referenceLogits(model, PROMPT), 64);
    // One token at a time (decode) as well as the prompt in one batch (prefill).
    const session = engine.createSession({ contextLength: 64 });
    const want = referenceLogits(model, PROMPT);
    for (let t = 0; t < PROMPT.length; t++) {
      const got = await session.eval([PROMPT[t]]);
      expect(maxAbsDiff(got, want[t])).toBeLessThanOrEqual(referenceTolerance(want[t]));
    }
    session.dispose();
  } finally {
    engine.dispose();
  }
});

test('query_pre_attn_scalar other than head_dim scales the scores by 1/√scalar', async () => {
  const other = tinyDecoder({ ...GEMMA_HF, query_pre_attn_scalar: 40 }, 8);
  const { engine } = await load(other);
  try {
    expectNearReference(await engineLogits(engine, PROMPT), referenceLogits(other, PROMPT), 64);
  } finally {
    engine.dispose();
  }
});

test('greedy tokens equal the reference, decoding alone and in a batched step', async () => {
  const prompt = PROMPT.slice(0, 6);
  const want = referenceGreedy(model, prompt, 10);
  expect(want.minMargin).toBeGreaterThan(1e-2);
  const { engine } = await load(model);
  try {
    const alone = engine.createSession({ contextLength: 32 });
    let logits = await alone.eval(prompt);
    const tokens: number[] = [];
    for (let i = 0; i < 10; i++) {
      tokens.push(argmax(logits));
      logits = await alone.eval([tokens[i]]);
    }
    expect(tokens).toEqual(want.tokens);
    alone.dispose();

    // Two sessions at different positions step together (decoder/batch.cc).
    const sessions = [engine.createSession({ contextLength: 32 }), engine.createSession({ contextLength: 32 })];
    const samplers = [new (native().Sampler)(1), new (native().Sampler)(2)];
    const greedyParams = { temperature: 0 };
    const seqs = [[await sessions[0].step(prompt, samplers[0], greedyParams)], [await sessions[1].step(prompt.slice(0, 3), samplers[1], greedyParams)]];
    for (let i = 0; i < 9; i++) {
      const out = await engine.stepBatch(sessions.map((session, r) => ({ session, token: seqs[r].at(-1)!, sampler: samplers[r], params: greedyParams })));
      out.forEach((t, r) => seqs[r].push(t as number));
    }
    expect(seqs[0]).toEqual(want.tokens);
    expect(seqs[1]).toEqual(referenceGreedy(model, prompt.slice(0, 3), 10).tokens);
    // The keys and values the batched steps cached: the next position's logits against the reference.
    const seq = [...prompt, ...seqs[0]];
    const next = await sessions[0].eval([seq.at(-1)!]);
    const ref = referenceLogits(model, seq).at(-1)!;
    expect(maxAbsDiff(next, ref)).toBeLessThanOrEqual(referenceTolerance(ref));
    for (const s of sessions) s.dispose();
  } finally {
    engine.dispose();
  }
});

test("GGUF written from the HF folder: llama.cpp's gemma3 keys and names, norms stored as 1 + w, the same logits", async () => {
  const { weights: hf, engine: hfEngine } = await load(model);
  const file = ws.fresh('gemma3.gguf');
  await writeGguf(hf, file);
  const gguf = await ws.read(file);
  try {
    expect(gguf.architecture).toBe('gemma3');
    const m = gguf.metadata;
    expect([m['general.architecture'], m['gemma3.attention.sliding_window'], m['gemma3.attention.sliding_window_pattern'], m['gemma3.rope.freq_base'], m['gemma3.rope.freq_base_swa']])
      .toEqual(['gemma3', 4, 3, 1e6, 10000]);
    const names = (m['gguf.tensors'] as { name: string }[]).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['blk.1.attn_norm.weight', 'blk.1.post_attention_norm.weight', 'blk.1.ffn_norm.weight', 'blk.1.post_ffw_norm.weight', 'blk.1.attn_q_norm.weight']));
    expect(names).not.toContain('output.weight');
    const c = gguf.config as DecoderConfig;
    expect(c).toMatchObject({ normWeightOffset: 0, slidingWindow: 4, slidingWindowPattern: 3, ropeLocalTheta: 10000, queryPreAttnScalar: 16, sandwichNorms: true });
    // pre_feedforward_layernorm is GGUF's ffn_norm, stored as 1 + w.
    const stored = readF32(findTensor(gguf, 'model.layers.1.pre_feedforward_layernorm.weight')!, 0, 32);
    const w = model.weights.get('model.layers.1.pre_feedforward_layernorm.weight')!;
    expect(Array.from(stored)).toEqual(Array.from(w, (v) => Math.fround(v + 1)));

    const ggufEngine = await DecoderEngine.load(gguf, { threads: 2 });
    try {
      const a = await engineLogits(hfEngine, PROMPT);
      const b = await engineLogits(ggufEngine, PROMPT);
      expect(maxAbsDiff(a, b)).toBeLessThanOrEqual(1e-5);
    } finally {
      ggufEngine.dispose();
    }
  } finally {
    hfEngine.dispose();
  }
});

test("GGUF's per-layer form of sliding_window_pattern (a bool per layer, true: sliding) reads as the pattern", async () => {
  const source = await ws.read(writeHfFolder(model, ws.fresh('hf')));
  const file = ws.fresh('u32.gguf');
  await writeGguf(source, file);
  const gguf = await ws.read(file);
  const key = 'gemma3.attention.sliding_window_pattern';
  const rewrite = async (layers: boolean[]) => {
    const metadata = Object.defineProperties({}, Object.getOwnPropertyDescriptors(gguf.metadata)) as Record<string, unknown>;
    metadata[key] = layers;
    metadata['gguf.types'] = { ...(gguf.metadata['gguf.types'] as Record<string, string>), [key]: 'array<bool>' };
    const out = ws.fresh('bools.gguf');
    await writeGguf({ ...gguf, metadata }, out);
    return out;
  };
  const periodic = await ws.read(await rewrite([true, true, false]));
  expect(periodic.metadata[key]).toEqual([true, true, false]);
  expect(periodic.config).toMatchObject({ slidingWindow: 4, slidingWindowPattern: 3 });
  await expect(ws.read(await rewrite([false, true, true]))).rejects.toMatchObject({ code: 'UNSUPPORTED' });
  await expect(ws.read(await rewrite([true, false]))).rejects.toMatchObject({ code: 'CONFIG_MISMATCH' });
});

test('a query_pre_attn_scalar llama.cpp would not derive is refused by the GGUF writer', async () => {
  const weights = await ws.read(writeHfFolder(tinyDecoder({ ...GEMMA_HF, query_pre_attn_scalar: 40 }, 9), ws.fresh('hf')));
  await expect(writeGguf(weights, ws.fresh('refused.gguf'))).rejects.toMatchObject({ name: 'UnsupportedError' });
});
