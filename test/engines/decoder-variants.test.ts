/**
 * The decoder-variant registry (lib/architectures/decoder.ts) as config readers use it: Llama 3's
 * RoPE factors against the ones convert_hf_to_gguf stored in the gguf-quants llama fixture
 * (float32, so within 1e-6 relative), and HF config.json for Qwen2 and rope_scaling 'llama3'.
 */
import { DECODER_VARIANTS, decoderTensorShapes, llama3RopeFactors } from '../../lib/architectures/decoder';
import { decoderConfigFromHf } from '../../lib/formats/containers/hf-config';
import { readJson } from '../helpers/fixtures';

const llama = readJson('gguf-quants', 'llama-ropefreqs', 'expected.json').config;

const hfBase = {
  hidden_size: 256, intermediate_size: 512, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
  vocab_size: 512, rms_norm_eps: 1e-6, rope_theta: 10000, max_position_embeddings: 256,
};

test("llama3RopeFactors equals llama.cpp's rope_freqs of the fixture", () => {
  const got = llama3RopeFactors(llama.head_dim, llama.theta, llama.rope_freqs.llama3_params);
  const want: number[] = llama.rope_freqs.values;
  expect(got).toHaveLength(want.length);
  for (let i = 0; i < want.length; i++) expect(Math.abs(got[i] - want[i])).toBeLessThanOrEqual(1e-6 * want[i]);
});

test("HF config.json: rope_scaling 'llama3' becomes ropeFreqFactors; other scalings are refused", () => {
  const params = llama.rope_freqs.llama3_params;
  const c = decoderConfigFromHf({ ...hfBase, model_type: 'llama', rope_scaling: { rope_type: 'llama3', ...params } });
  expect(c.ropeFreqFactors).toEqual(llama3RopeFactors(64, 10000, params));
  expect(decoderConfigFromHf({ ...hfBase, model_type: 'llama', rope_scaling: { rope_type: 'default' } }).ropeFreqFactors).toBeUndefined();
  expect(() => decoderConfigFromHf({ ...hfBase, model_type: 'llama', rope_scaling: { rope_type: 'yarn', factor: 4 } })).toThrow(expect.objectContaining({ code: 'UNSUPPORTED' }));
});

test('HF config.json: Qwen2 has q/k/v biases and needs their tensors', () => {
  const c = decoderConfigFromHf({ ...hfBase, architectures: ['Qwen2ForCausalLM'] });
  expect([c.architecture, c.qkvBias, c.qkNorm, c.ropePairing]).toEqual(['qwen2', true, false, 'half']);
  expect(DECODER_VARIANTS.qwen2.qkvBias).toBe(true);
  const names = decoderTensorShapes(c).map((t) => `${t.name} ${t.shape.join('x')}`);
  expect(names).toEqual(expect.arrayContaining(['model.layers.1.self_attn.q_proj.bias 256', 'model.layers.1.self_attn.k_proj.bias 128', 'model.layers.1.self_attn.v_proj.bias 128']));
  expect(() => decoderConfigFromHf({ ...hfBase, model_type: 'qwen2', use_sliding_window: true })).toThrow(expect.objectContaining({ code: 'UNSUPPORTED' }));
});
