/**
 * The architecture registry (lib/architectures/index.ts) against the files it describes: every
 * entry is found again from the HF config.json names it claims, every decoder variant from its
 * GGUF general.architecture, and a decoder config survives config.json written and read back.
 */
import { ARCHITECTURES, architectureOf, architectureOfHf } from '../../lib/architectures';
import { DECODER_VARIANTS, decoderArchitectureOfGguf, unheldFields, variantNames, type DecoderArchitecture } from '../../lib/architectures/decoder';
import { decoderConfigFromHf, hfArchitecture, hfConfigFromDecoder } from '../../lib/formats/containers/hf-config';

const hfBase = {
  hidden_size: 64, intermediate_size: 128, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2,
  vocab_size: 100, rms_norm_eps: 1e-6, rope_theta: 10000, max_position_embeddings: 128,
};

test('every entry is named by its own HF model_type values, and only by them', () => {
  for (const entry of ARCHITECTURES.values()) {
    for (const modelType of entry.hf.modelTypes) expect([modelType, hfArchitecture({ model_type: modelType })]).toEqual([modelType, entry.name]);
  }
  expect(hfArchitecture({ model_type: 'mixtral' })).toBe('unknown');
  expect(architectureOfHf(undefined, ['MixtralForCausalLM'])).toBeUndefined();
});

test('without model_type, the HF classes name the decoder variants and BERT', () => {
  for (const name of Object.keys(DECODER_VARIANTS) as DecoderArchitecture[]) {
    expect([name, hfArchitecture({ architectures: [DECODER_VARIANTS[name].hfClass] })]).toEqual([name, name]);
  }
  expect(hfArchitecture({ architectures: ['BertModel'] })).toBe('bert');
  // A head class names its entry whatever the model_type: BERT cross-encoders.
  expect(hfArchitecture({ model_type: 'bert', architectures: ['BertForSequenceClassification'] })).toBe('bert-classifier');
  expect(hfArchitecture({ architectures: ['BertForSequenceClassification'] })).toBe('bert-classifier');
  expect(hfArchitecture({ model_type: 'bert', architectures: ['BertForMaskedLM'] })).toBe('bert');
  expect(hfArchitecture({ architectures: ['HfMoondream'] })).toBe('moondream');
  // Qwen3's class pattern leaves Qwen3-MoE's class to its own row.
  expect(hfArchitecture({ architectures: ['Qwen3MoeForCausalLM'] })).toBe('qwen3moe');
  expect(hfArchitecture({ architectures: ['GptOssForCausalLM'] })).toBe('gptoss');
  expect(hfArchitecture({ architectures: ['MixtralForCausalLM'] })).toBe('unknown');
});

test('every decoder variant is found from its GGUF architecture name', () => {
  // Mistral is stored as llama (llama.cpp's converter); gguf.ts tells it apart by its window key.
  // A name only one variant stores (gpt-oss's 'gpt-oss') names that variant.
  const names = Object.keys(DECODER_VARIANTS) as DecoderArchitecture[];
  for (const name of names) {
    const stored = DECODER_VARIANTS[name].ggufArchitecture;
    const shared = names.filter((n) => DECODER_VARIANTS[n].ggufArchitecture === stored).length > 1;
    expect(decoderArchitectureOfGguf(stored)).toBe(shared ? 'llama' : name);
  }
  expect(decoderArchitectureOfGguf('bert')).toBeUndefined();
});

test('a decoder config of every variant survives config.json, and its entry runs it on the decoder engine', () => {
  for (const name of Object.keys(DECODER_VARIANTS) as DecoderArchitecture[]) {
    const config = decoderConfigFromHf({ ...hfBase, model_type: DECODER_VARIANTS[name].hfModelTypes[0] });
    expect(config.architecture).toBe(name);
    expect(decoderConfigFromHf(hfConfigFromDecoder(config))).toEqual(config);
    const entry = architectureOf(config)!;
    expect([entry.family, entry.engine, entry.modelClass, entry.maxSeqLen(config)]).toEqual(['decoder', 'decoder', 'Model', 128]);
  }
});

test('each entry names the engine and class that run it', () => {
  const rows = [...ARCHITECTURES.values()].filter((e) => e.family !== 'decoder').map((e) => [e.name, e.engine, e.modelClass]);
  expect(rows).toEqual([
    ['tllm', 'gpt', 'Model'],
    ['moondream', 'moondream', 'MoondreamModel'],
    ['bert', 'bert', 'Embedder'],
    ['bert-classifier', 'bert', 'Reranker'],
    ['clip', 'vit', 'VisionProjector'],
  ]);
  expect(architectureOf({ architecture: 'unknown' })).toBeUndefined();
});

test('writers refuse every decoder field beyond Llama they do not list, a new one included', () => {
  const config = (name: string) => decoderConfigFromHf({ ...hfBase, model_type: name });
  expect(unheldFields(config('llama'), [])).toEqual([]);
  expect(unheldFields(config('qwen3'), [])).toEqual(['q/k norms']);
  expect(unheldFields(config('qwen3'), ['qkNorm'])).toEqual([]);
  expect(unheldFields(config('qwen2'), ['qkNorm'])).toEqual(['q/k/v biases']);
  expect(unheldFields({ ...config('llama'), slidingWindow: 4096 } as never, ['qkNorm'])).toEqual(['a sliding window']);
  expect(variantNames(['qkNorm'])).toBe('Llama/Qwen3/Mistral/Granite/Phi3');
  // Gemma 3's fields beyond Llama's are refused by a format that holds only q/k norms.
  expect(unheldFields(config('gemma3_text'), ['qkNorm'])).toEqual(expect.arrayContaining(['a sliding window', 'post-attention/post-FFN norms', 'an embedding scale']));
  expect(variantNames([])).toBe('Llama/Mistral/Granite/Phi3') // Granite's scalars and Phi-3's fused views and partial rotary are held by every format;
});
