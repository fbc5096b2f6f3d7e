/**
 * The decoder's output mode for embedding models (DecoderEngine.pool, native/engines/decoder/pooled.h):
 * several packed sequences in one pass, each in a one-pass KV cache, the final hidden state (after
 * the final norm) of each sequence's last token or the mean of its tokens', against the float64
 * forward pass of tiny-decoder.ts on each sequence alone; and the bidirectional option
 * (EmbeddingGemma: every position sees every position, a sliding layer's within half its window
 * either side) against the same reference run both ways. Bad input is a RangeError before anything runs.
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { AbortError } from '../../lib/base/errors';
import { testWorkspace } from '../helpers/workspace';
import { maxAbsDiff } from './decoder-helpers';
import { referenceLogits, tinyDecoder, writeHfFolder, type ReferenceMode, type TinyDecoder } from './tiny-decoder';

const ws = testWorkspace('decoder-pooled-');

const QWEN3 = {
  architectures: ['Qwen3ForCausalLM'], model_type: 'qwen3', hidden_size: 32, intermediate_size: 64, num_hidden_layers: 2,
  num_attention_heads: 4, num_key_value_heads: 2, head_dim: 16, vocab_size: 64, max_position_embeddings: 128, rms_norm_eps: 1e-6,
  rope_theta: 1000000, hidden_act: 'silu', tie_word_embeddings: true,
};
/** EmbeddingGemma's form: Gemma 3 with use_bidirectional_attention; layers 0 and 1 slide (window 4: two positions either side), layer 2 is global. */
const GEMMA_BIDIRECTIONAL = {
  architectures: ['Gemma3TextModel'], model_type: 'gemma3_text', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 3,
  num_attention_heads: 4, num_key_value_heads: 1, head_dim: 16, vocab_size: 64, max_position_embeddings: 128, rms_norm_eps: 1e-6,
  rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 4, sliding_window_pattern: 3, query_pre_attn_scalar: 16,
  hidden_activation: 'gelu_pytorch_tanh', use_bidirectional_attention: true,
};

/** Sequences of 1, 5, 40 (two attention tiles) and 9 tokens. */
const SEQUENCES = [[7], [3, 1, 4, 1, 5], Array.from({ length: 40 }, (_, i) => (i * 29 + 5) % 64), [2, 7, 1, 8, 2, 8, 1, 8, 2]];
const TOLERANCE = 2e-5;

async function load(model: TinyDecoder): Promise<DecoderEngine> {
  const weights = await ws.read(writeHfFolder(model, ws.fresh('hf')));
  return DecoderEngine.load(weights, { threads: 2 });
}

function packed(sequences: number[][]): [Int32Array, Int32Array] {
  return [Int32Array.from(sequences.flat()), Int32Array.from(sequences, (s) => s.length)];
}

/** The reference's pooled vector of one sequence. */
function pooled(model: TinyDecoder, tokens: number[], pooling: 'last' | 'mean', mode: ReferenceMode = {}): Float64Array {
  const hidden = referenceLogits(model, tokens, false, undefined, { ...mode, hidden: true });
  if (pooling === 'last') return hidden[hidden.length - 1];
  return hidden[0].map((_, d) => hidden.reduce((sum, h) => sum + h[d], 0) / hidden.length);
}

function expectPooled(got: Float32Array, model: TinyDecoder, pooling: 'last' | 'mean', mode: ReferenceMode = {}): void {
  const dim = model.hf.hidden_size as number;
  expect(got.length).toBe(SEQUENCES.length * dim);
  SEQUENCES.forEach((s, i) => expect(maxAbsDiff(got.subarray(i * dim, (i + 1) * dim), pooled(model, s, pooling, mode))).toBeLessThan(TOLERANCE));
}

test('Qwen3: the last-token and mean final hidden states of packed sequences, each as the reference of it alone', async () => {
  const model = tinyDecoder(QWEN3, 5);
  const engine = await load(model);
  try {
    const [ids, lengths] = packed(SEQUENCES);
    expectPooled(await engine.pool(ids, lengths, 'last'), model, 'last');
    expectPooled(await engine.pool(ids, lengths, 'mean'), model, 'mean');
    // One sequence per call: the same vectors.
    const dim = QWEN3.hidden_size;
    const together = await engine.pool(ids, lengths, 'last');
    for (const [i, s] of SEQUENCES.entries()) {
      const alone = await engine.pool(Int32Array.from(s), Int32Array.of(s.length), 'last');
      expect(maxAbsDiff(alone, Float64Array.from(together.subarray(i * dim, (i + 1) * dim)))).toBeLessThan(1e-6);
    }
    // Sessions of the same engine still generate: the pooled passes left no state behind.
    const session = engine.createSession({ contextLength: 16 });
    const logits = await session.eval(SEQUENCES[1]);
    const want = referenceLogits(model, SEQUENCES[1], true)[0];
    expect(maxAbsDiff(logits, want)).toBeLessThan(1e-4);
    session.dispose();
  } finally {
    engine.dispose();
  }
});

test('bidirectional (EmbeddingGemma): every position sees the whole sequence, a sliding layer two positions either side; not causal', async () => {
  const model = tinyDecoder(GEMMA_BIDIRECTIONAL, 9);
  const engine = await load(model);
  try {
    expect(engine.config.bidirectional).toBe(true);
    const [ids, lengths] = packed(SEQUENCES);
    const got = await engine.pool(ids, lengths, 'mean');
    expectPooled(got, model, 'mean', { bidirectional: true });
    // The causal reference is far from it (the option changes what is computed).
    const dim = GEMMA_BIDIRECTIONAL.hidden_size;
    expect(maxAbsDiff(got.subarray(2 * dim, 3 * dim), pooled(model, SEQUENCES[2], 'mean'))).toBeGreaterThan(1e-2);
    // Token by token has no meaning for it.
    const session = engine.createSession({ contextLength: 16 });
    await expect(session.eval([1, 2, 3])).rejects.toThrow(/bidirectional/);
    session.dispose();
  } finally {
    engine.dispose();
  }
});

test('bad input is a RangeError before anything runs; an aborted call rejects with AbortError', async () => {
  const engine = await load(tinyDecoder(QWEN3, 5));
  try {
    await expect(engine.pool(Int32Array.of(1, 2), Int32Array.of(3), 'last')).rejects.toThrow(RangeError);
    await expect(engine.pool(Int32Array.of(), Int32Array.of(0), 'last')).rejects.toThrow(RangeError);
    await expect(engine.pool(Int32Array.of(1, 64), Int32Array.of(2), 'last')).rejects.toThrow(/outside the vocabulary/);
    await expect(engine.pool(new Int32Array(129), Int32Array.of(129), 'last')).rejects.toThrow(/1 to 128/);
    await expect(engine.pool(Int32Array.of(1), Int32Array.of(1), 'first' as 'last')).rejects.toThrow(/pooling/);
    const aborted = new AbortController();
    aborted.abort();
    await expect(engine.pool(Int32Array.of(1, 2), Int32Array.of(2), 'last', aborted.signal)).rejects.toThrow(AbortError);
  } finally {
    engine.dispose();
  }
});
