/**
 * The names the native decoder reads (native/napi/decoder_config.cc: one row per DecoderConfig
 * field, one table per enum value set) spelled as lib spells them: every field it reads is one the
 * config readers produce, every enum list equals lib/architectures/decoder.ts's, and a value outside
 * a list is refused naming the list.
 */
import { native } from '../../lib/addon/native';
import { DecoderEngine } from '../../lib/engines/decoder';
import { DECODER_ACTIVATIONS, DECODER_QUANTS, KV_CACHE_TYPES, ROPE_PAIRINGS } from '../../lib/architectures/decoder';
import { decoderConfigFromHf } from '../../lib/formats/containers/hf-config';
import { readWeights } from '../../lib/formats';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';

const names = () => native().decoderNames;
const opened: ModelWeights[] = [];
afterAll(() => opened.forEach(closeWeights));

test('every enum list is lib\'s, in the same order', () => {
  expect(names().kvCacheTypes).toEqual([...KV_CACHE_TYPES]);
  expect(names().activations).toEqual([...DECODER_ACTIVATIONS]);
  expect(names().ropePairings).toEqual([...ROPE_PAIRINGS]);
  expect(names().quants).toEqual([...DECODER_QUANTS]);
});

test('every config field the native side reads is one the config readers write', async () => {
  // Between them these set every optional feature: Gemma 3's (sliding window, local RoPE base, norm
  // offset, sandwich norms, GeGLU, embedding and attention scales; EmbeddingGemma's bidirectional attention), Granite's multipliers, SmolLM3's layers without RoPE, Phi-4-mini's partial rotary, Qwen2's biases, Llama 3's RoPE factors, gpt-oss's sinks, biases, routing and YaRN.
  const gemma = decoderConfigFromHf({
    architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 3,
    num_attention_heads: 4, num_key_value_heads: 1, head_dim: 16, vocab_size: 64, max_position_embeddings: 64, rms_norm_eps: 1e-6,
    rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 4, sliding_window_pattern: 3, query_pre_attn_scalar: 16,
    hidden_activation: 'gelu_pytorch_tanh', use_bidirectional_attention: true,
  });
  const read = async (dir: string, file: string) => {
    const w = await readWeights(fixture('gguf-quants', dir, file));
    opened.push(w);
    return w.config;
  };
  const granite = decoderConfigFromHf({
    architectures: ['GraniteForCausalLM'], model_type: 'granite', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2,
    num_attention_heads: 4, vocab_size: 64, embedding_multiplier: 12, residual_multiplier: 0.22, attention_multiplier: 0.0078125, logits_scaling: 8,
  });
  const smollm3 = decoderConfigFromHf({
    architectures: ['SmolLM3ForCausalLM'], model_type: 'smollm3', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 4,
    num_attention_heads: 4, vocab_size: 64, no_rope_layers: [1, 1, 1, 0],
  });
  const phi4mini = decoderConfigFromHf({
    architectures: ['Phi3ForCausalLM'], model_type: 'phi3', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2,
    num_attention_heads: 4, vocab_size: 64, partial_rotary_factor: 0.75,
  });
  const qwen3moe = decoderConfigFromHf({
    architectures: ['Qwen3MoeForCausalLM'], model_type: 'qwen3_moe', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2,
    num_attention_heads: 4, vocab_size: 64, num_experts: 4, num_experts_per_tok: 2, moe_intermediate_size: 16,
  });
  const gptoss = decoderConfigFromHf({
    architectures: ['GptOssForCausalLM'], model_type: 'gpt_oss', hidden_size: 32, intermediate_size: 16, num_hidden_layers: 2, head_dim: 8,
    num_attention_heads: 4, num_key_value_heads: 2, vocab_size: 64, num_local_experts: 4, num_experts_per_tok: 2, attention_bias: true, sliding_window: 4,
    // truncate: false, as the released config says (ropeYarnUnroundedDims).
    layer_types: ['sliding_attention', 'full_attention'], rope_scaling: { rope_type: 'yarn', factor: 32, beta_fast: 32, beta_slow: 1, original_max_position_embeddings: 4096, truncate: false },
  });
  const configs = [gemma, granite, smollm3, phi4mini, qwen3moe, gptoss, await read('qwen2-bias', 'qwen2-bias.Q4_1.gguf'), await read('llama-ropefreqs', 'llama-ropefreqs.Q8_0.gguf')];
  const written = new Set(configs.flatMap((c) => Object.keys(c)));
  expect(names().configFields.filter((f) => !written.has(f))).toEqual([]);
  expect(names().configFields.length).toBeGreaterThan(20);
});

describe('a value outside its list is a TypeError that lists it', () => {
  let weights: ModelWeights;
  let engine: DecoderEngine;
  beforeAll(async () => {
    weights = await readWeights(fixture('llama-stories260k', 'stories260K.gguf'));
    opened.push(weights);
    engine = await DecoderEngine.load(weights, { threads: 1 });
  });
  afterAll(() => engine.dispose());

  test.each([
    ['activation', { activation: 'relu' }, "activation must be 'silu' or 'gelu_tanh'"],
    ['ropePairing', { ropePairing: 'neox' }, "ropePairing must be 'half' or 'interleaved'"],
  ])('config.%s', async (_field, edit, message) => {
    await expect(DecoderEngine.load({ ...weights, config: { ...weights.config, ...edit } as typeof weights.config })).rejects.toThrow(message);
  });

  test('options.quant and kvCache', async () => {
    await expect(DecoderEngine.load(weights, { quant: 'q4' as 'none' })).rejects.toThrow("quant must be 'none', 'q8_0' or 'f32'");
    expect(() => engine.createSession({ kvCache: 'q4' as 'f16' })).toThrow("kvCache must be 'f16', 'f32' or 'q8_0'");
  });
});
