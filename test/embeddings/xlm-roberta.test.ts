/**
 * XLM-RoBERTa encoders (XLMRobertaModel: bge-m3, multilingual-e5) from HF folders. An XLM-R is
 * BERT's encoder whose positions start at row padding_idx + 1 and whose token-type table has one
 * row, so the fixture MiniLM rewritten as one — two random rows put in front of its position
 * table, its token-type table cut to row 0 — must embed exactly as the fixture says: any
 * position read from a wrong row lands in the random rows or off by two.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadEmbedder, similarity } from '../../lib/models/embedder';
import { readWeights, writeWeights } from '../../lib/formats';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, numel, type ModelWeights } from '../../lib/addon/weights';
import type { BertConfig } from '../../lib/architectures/bert';
import { WeightFormatError } from '../../lib/base/errors';
import { writeSafetensors } from '../convert/helpers';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { mulberry32 } from '../helpers/rng';

const MODEL = fixture('embd-minilm-tiny', 'model.weights');
const sentences: { text: string; ids: number[]; embedding: number[] }[] = readJson('embd-minilm-tiny', 'expected.json').sentences;
const PAD = 1;
const OFFSET = PAD + 1;

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

function f32Bytes(values: Float32Array): Uint8Array {
  return new Uint8Array(values.buffer, values.byteOffset, values.byteLength);
}

/** The fixture MiniLM as an XLMRobertaModel folder (sentence-transformers files included). */
function writeXlmRobertaFolder(dir: string, weights: ModelWeights, overrides: Record<string, unknown> = {}): void {
  const c = weights.config as BertConfig;
  const H = c.hiddenSize;
  const random = mulberry32(7);
  fs.mkdirSync(path.join(dir, '1_Pooling'), { recursive: true });
  const json = (name: string, value: unknown) => fs.writeFileSync(path.join(dir, name), JSON.stringify(value, null, 2));
  json('config.json', {
    architectures: ['XLMRobertaModel'],
    model_type: 'xlm-roberta',
    hidden_size: H,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    intermediate_size: c.intermediateSize,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.maxPositionEmbeddings + OFFSET,
    type_vocab_size: 1,
    layer_norm_eps: c.layerNormEps,
    hidden_act: 'gelu',
    pad_token_id: PAD,
    bos_token_id: 0,
    eos_token_id: 2,
    position_embedding_type: 'absolute',
    ...overrides,
  });
  json('modules.json', [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
  ]);
  json('sentence_bert_config.json', { max_seq_length: 128, do_lower_case: false });
  json(path.join('1_Pooling', 'config.json'), { word_embedding_dimension: H, pooling_mode_mean_tokens: true, pooling_mode_cls_token: false, pooling_mode_max_tokens: false });
  fs.copyFileSync(fixture('tokenizers', 'minilm', 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  writeSafetensors(
    path.join(dir, 'model.safetensors'),
    weights.tensors.map((t) => {
      let values = Float32Array.from(readF32(t, 0, numel(t.shape)));
      let shape = t.shape;
      if (t.name === 'embeddings.position_embeddings.weight') {
        const front = Float32Array.from({ length: OFFSET * H }, () => random() * 2 - 1);
        values = Float32Array.from([...front, ...values]);
        shape = [t.shape[0] + OFFSET, H];
      } else if (t.name === 'embeddings.token_type_embeddings.weight') {
        values = values.slice(0, H);
        shape = [1, H];
      }
      return { name: t.name, dtype: 'F32' as const, shape, data: f32Bytes(values) };
    }),
  );
}

describe('XLM-RoBERTa encoders', () => {
  const tmp = tempDir('weightmap-xlmr-');
  let weights: ModelWeights;
  const folder = path.join(tmp.dir, 'xlmr');

  beforeAll(async () => {
    weights = await readWeights(MODEL);
    writeXlmRobertaFolder(folder, weights);
  });
  afterAll(() => {
    closeWeights(weights);
    tmp.cleanup();
  });

  test('the config: positions from padding_idx + 1, one token type, sequences up to the rows past the offset', async () => {
    const read = await readWeights(folder);
    try {
      const c = read.config as BertConfig;
      expect(c).toMatchObject({ architecture: 'bert', modelType: 'xlm-roberta', positionOffset: OFFSET, typeVocabSize: 1, maxSeqLength: 128 });
    } finally {
      closeWeights(read);
    }
  });

  test('embeds as the fixture MiniLM it was made from (f32 and int8)', async () => {
    const embedder = await loadEmbedder(folder, { threads: 2 });
    try {
      const vectors = await embedder.embedTokens(sentences.map((s) => s.ids));
      sentences.forEach((s, i) => {
        expect(maxAbsDiff(vectors[i], s.embedding)).toBeLessThanOrEqual(1e-4);
        expect(similarity(vectors[i], s.embedding)).toBeGreaterThanOrEqual(0.99999);
      });
    } finally {
      embedder.dispose();
    }
    const int8 = await loadEmbedder(folder, { threads: 1, quant: 'int8' });
    try {
      const vectors = await int8.embedTokens(sentences.map((s) => s.ids));
      sentences.forEach((s, i) => expect(similarity(vectors[i], s.embedding)).toBeGreaterThanOrEqual(0.999));
    } finally {
      int8.dispose();
    }
  });

  test('a sequence longer than the rows past the offset is refused; the longest that fits runs', async () => {
    const c = weights.config as BertConfig;
    const embedder = await loadEmbedder(folder, { threads: 1, maxSeqLength: c.maxPositionEmbeddings });
    try {
      const longest = Array.from({ length: c.maxPositionEmbeddings }, (_, i) => 5 + (i % 50));
      expect((await embedder.embedTokens([longest]))[0]).toHaveLength(c.hiddenSize);
      await expect(embedder.embedTokens([[...longest, 7]])).rejects.toThrow(/takes 1 to/);
    } finally {
      embedder.dispose();
    }
    await expect(loadEmbedder(folder, { maxSeqLength: c.maxPositionEmbeddings + 1 })).rejects.toThrow(RangeError);
  });

  test('an HF folder written back keeps model_type, pad_token_id and the offset; EMBD refuses it, GGUF one without a Unigram tokenizer.json, with a typed error', async () => {
    const read = await readWeights(folder);
    try {
      const out = path.join(tmp.dir, 'written', 'model.safetensors');
      fs.mkdirSync(path.dirname(out), { recursive: true });
      await writeWeights(read, out, { format: 'safetensors' });
      const config = JSON.parse(fs.readFileSync(path.join(path.dirname(out), 'config.json'), 'utf8'));
      expect(config).toMatchObject({ model_type: 'xlm-roberta', architectures: ['XLMRobertaModel'], pad_token_id: PAD });
      const embedder = await loadEmbedder(path.dirname(out), { threads: 1 });
      try {
        const [v] = await embedder.embedTokens([sentences[0].ids]);
        expect(maxAbsDiff(v, sentences[0].embedding)).toBeLessThanOrEqual(1e-4);
      } finally {
        embedder.dispose();
      }
      await expect(writeWeights(read, path.join(tmp.dir, 'x.weights'), { format: 'embd' })).rejects.toBeInstanceOf(WeightFormatError);
      await expect(writeWeights(read, path.join(tmp.dir, 'x.gguf'), { format: 'gguf' })).rejects.toThrow(/XLM-RoBERTa/);
      expect(fs.existsSync(path.join(tmp.dir, 'x.weights'))).toBe(false);
    } finally {
      closeWeights(read);
    }
  });

  test('a pad_token_id past the position table is a typed CONFIG_MISMATCH', async () => {
    const dir = path.join(tmp.dir, 'bad-pad');
    writeXlmRobertaFolder(dir, weights, { pad_token_id: 10_000 });
    await expect(readWeights(dir)).rejects.toMatchObject({ code: 'CONFIG_MISMATCH' });
  });
});
