/**
 * loadEmbedder on Hugging Face sentence-transformers folders built from the embd-minilm-tiny
 * weights (files written here by hand: safetensors, config.json, vocab.txt or tokenizer.json,
 * modules.json, sentence_bert_config.json, 1_Pooling/config.json): same ids, same vectors.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadEmbedder, similarity } from '../../lib/models/embedder';
import { readWeights } from '../../lib/formats';
import { f32ToF16 } from '../../lib/formats/quantization/dtype-convert';
import { readF32 as tensorF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, numel, type ModelWeights, type TokenizerData } from '../../lib/addon/weights';
import type { BertConfig } from '../../lib/architectures/bert';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { ReferenceBert } from './reference';

const MODEL = fixture('embd-minilm-tiny', 'model.weights');
const expected = readJson('embd-minilm-tiny', 'expected.json');
const sentences: { text: string; ids: number[]; embedding: number[] }[] = expected.sentences;
const texts = sentences.map((s) => s.text);

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

/** safetensors: u64 header length, JSON header (space-padded to 8 bytes), raw little-endian data. */
function writeSafetensors(file: string, tensors: { name: string; dtype: 'F32' | 'F16'; shape: number[]; data: Buffer }[]): void {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    header[t.name] = { dtype: t.dtype, shape: t.shape, data_offsets: [offset, offset + t.data.length] };
    offset += t.data.length;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(json), ...tensors.map((t) => t.data)]));
}

interface FolderOptions {
  pooling?: 'mean' | 'cls' | 'max';
  normalize?: boolean;
  dtype?: 'F32' | 'F16';
  /** 'bert.' as BertForMaskedLM-style checkpoints name their keys. */
  prefix?: string;
  tokenizer?: 'vocab.txt' | 'tokenizer.json';
}

function writeFolder(dir: string, weights: ModelWeights, o: FolderOptions = {}): void {
  const c = weights.config as BertConfig;
  fs.mkdirSync(path.join(dir, '1_Pooling'), { recursive: true });
  const json = (name: string, value: unknown) => fs.writeFileSync(path.join(dir, name), JSON.stringify(value, null, 2));
  json('config.json', {
    architectures: ['BertModel'],
    model_type: 'bert',
    hidden_size: c.hiddenSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    intermediate_size: c.intermediateSize,
    vocab_size: c.vocabSize,
    max_position_embeddings: c.maxPositionEmbeddings,
    type_vocab_size: c.typeVocabSize,
    layer_norm_eps: c.layerNormEps,
    hidden_act: 'gelu',
    position_embedding_type: 'absolute',
  });
  const modules = [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ];
  if (o.normalize !== false) modules.push({ idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' });
  json('modules.json', modules);
  json('sentence_bert_config.json', { max_seq_length: 256, do_lower_case: false });
  const pooling = o.pooling ?? 'mean';
  json(path.join('1_Pooling', 'config.json'), {
    word_embedding_dimension: c.hiddenSize,
    pooling_mode_cls_token: pooling === 'cls',
    pooling_mode_mean_tokens: pooling === 'mean',
    pooling_mode_max_tokens: pooling === 'max',
    pooling_mode_mean_sqrt_len_tokens: false,
  });
  if (o.tokenizer === 'tokenizer.json') {
    fs.copyFileSync(fixture('tokenizers', 'minilm', 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  } else {
    const vocab = (weights.tokenizer as Extract<TokenizerData, { kind: 'wordpiece' }>).tokens;
    fs.writeFileSync(path.join(dir, 'vocab.txt'), `${vocab.join('\n')}\n`);
    json('tokenizer_config.json', { do_lower_case: true, model_max_length: 512 });
  }
  const dtype = o.dtype ?? 'F32';
  writeSafetensors(
    path.join(dir, 'model.safetensors'),
    weights.tensors.map((t) => {
      const values = tensorF32(t, 0, numel(t.shape));
      const data =
        dtype === 'F32' ? Buffer.from(values.buffer, values.byteOffset, values.byteLength) : Buffer.from(Uint16Array.from(values, f32ToF16).buffer);
      return { name: (o.prefix ?? '') + t.name, dtype, shape: t.shape, data };
    }),
  );
}

describe('sentence-transformers folders', () => {
  const tmp = tempDir('weightmap-embed-');
  let weights: ModelWeights;
  let reference: ReferenceBert;

  beforeAll(async () => {
    weights = await readWeights(MODEL);
    reference = new ReferenceBert(weights, weights.config as BertConfig);
  });
  afterAll(() => {
    closeWeights(weights);
    tmp.cleanup();
  });

  test('vocab.txt + f32 safetensors, mean pooling, Normalize: the fixture vectors', async () => {
    const dir = path.join(tmp.dir, 'mean');
    writeFolder(dir, weights);
    const embedder = await loadEmbedder(dir, { threads: 2 });
    try {
      expect(embedder.info.format).toBe('safetensors');
      expect(embedder.config).toMatchObject({ pooling: 'mean', normalize: true, maxSeqLength: 256 });
      for (const s of sentences) expect(embedder.tokenizer.encode(s.text)).toEqual(s.ids);
      const vectors = await embedder.embed(texts, { batchSize: 5 });
      sentences.forEach((s, i) => {
        expect(maxAbsDiff(vectors[i], s.embedding)).toBeLessThanOrEqual(1e-4);
        expect(similarity(vectors[i], s.embedding)).toBeGreaterThanOrEqual(0.99999);
      });
    } finally {
      embedder.dispose();
    }
  });

  test('tokenizer.json, bert. prefix, cls pooling without Normalize', async () => {
    const dir = path.join(tmp.dir, 'cls');
    writeFolder(dir, weights, { pooling: 'cls', normalize: false, prefix: 'bert.', tokenizer: 'tokenizer.json' });
    const embedder = await loadEmbedder(dir, { threads: 1 });
    try {
      expect(embedder.config).toMatchObject({ pooling: 'cls', normalize: false });
      for (const s of sentences) expect(embedder.tokenizer.encode(s.text, { maxLength: embedder.maxSeqLength })).toEqual(s.ids);
      const vectors = await embedder.embed(texts);
      sentences.forEach((s, i) => {
        const e = reference.embed(s.ids, 'cls', false);
        expect(maxAbsDiff(vectors[i], e)).toBeLessThanOrEqual(1e-4);
      });
    } finally {
      embedder.dispose();
    }
  });

  test('f16 weights run through the half-precision path, close to f32', async () => {
    const dir = path.join(tmp.dir, 'f16');
    writeFolder(dir, weights, { dtype: 'F16' });
    const embedder = await loadEmbedder(dir);
    try {
      const vectors = await embedder.embed(texts);
      sentences.forEach((s, i) => expect(similarity(vectors[i], s.embedding)).toBeGreaterThanOrEqual(0.999));
    } finally {
      embedder.dispose();
    }
  });
});
