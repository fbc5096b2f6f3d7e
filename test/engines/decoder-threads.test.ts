/**
 * A decode step's matrices and attention run inline under kernels::kMinParallelRowWork
 * multiply-adds and split across the pool above it: either way each output row is computed by
 * the same code, so 1 and 2 threads give the same logits and the same greedy tokens. The model is
 * sized so that both sides of the threshold occur: its gate+up call (2 × 2048 × 256) and classifier
 * (4096 × 256) reach 2^20, q/k/v (3 × 256 × 256) and down (256 × 2048) do not; a prefill's
 * attention does, a decode step's at these positions does not.
 */
import { loadModel, type Model } from '../../lib/models/model';
import { testWorkspace } from '../helpers/workspace';
import { tinyDecoder, writeHfFolder } from './tiny-decoder';

const ws = testWorkspace('decoder-threads-');

const HF = {
  architectures: ['MistralForCausalLM'],
  model_type: 'mistral',
  hidden_size: 256,
  intermediate_size: 2048,
  num_hidden_layers: 1,
  num_attention_heads: 4,
  num_key_value_heads: 4,
  head_dim: 64,
  vocab_size: 4096,
  max_position_embeddings: 128,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  sliding_window: null,
  hidden_act: 'silu',
  tie_word_embeddings: true,
};
const PROMPT = Array.from({ length: 40 }, (_, i) => (i * 389 + 7) % 4096);

async function run(dir: string, threads: number, quant: 'none' | 'q8_0'): Promise<{ logits: Float32Array; tokens: number[] }> {
  const model: Model = await loadModel(dir, { threads, quant, contextLength: 128 });
  try {
    const logits = await model.logits(PROMPT);
    const tokens: number[] = [];
    for await (const piece of model.generate(PROMPT, { maxTokens: 24, temperature: 0, stopTokens: [] })) tokens.push(piece.token);
    return { logits, tokens };
  } finally {
    model.dispose();
  }
}

describe('decode work split across threads or inline', () => {
  const dir = writeHfFolder(tinyDecoder(HF, 5), ws.fresh('model'));

  test.each(['none', 'q8_0'] as const)('quant %s: 1 and 2 threads give the same logits and greedy tokens', async (quant) => {
    const one = await run(dir, 1, quant);
    const two = await run(dir, 2, quant);
    expect(two.logits).toEqual(one.logits);
    expect(two.tokens).toEqual(one.tokens);
    expect(one.tokens).toHaveLength(24);
  });
});
