/**
 * Cross-encoders in GGUF as llama.cpp lays them out (lib/formats/containers/gguf-bert.ts): weightmap's HF
 * folder converted to GGUF ranks as the folder does (the float64 reference, token for token the
 * same vocabulary), with llama.cpp's tensor names and keys; a GGUF without the pooler (what
 * llama.cpp's converter writes) runs the classifier on the [CLS] row, as llama.cpp does; an
 * embedder goes through GGUF too.
 */
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { loadEmbedder } from '../../lib/models/embedder';
import { BertEngine } from '../../lib/engines/bert';
import { convert } from '../../lib/formats/writing/convert';
import { readWeights, writeWeights } from '../../lib/formats';
import { loadReranker } from '../../lib/models/reranker';
import { closeWeights } from '../../lib/addon/weights';
import type { BertClassifierConfig } from '../../lib/architectures/bert';
import { fixture, tempDir } from '../helpers/fixtures';
import { writeTinyCrossEncoder, type TinyCrossEncoder } from '../helpers/tiny-cross-encoder';
import { crossEncoderLogit } from './cross-encoder-reference';

const QUERY = 'How many people live in Berlin?';
const DOCS = ['Berlin has 3.5 million inhabitants.', 'Héllo wörld! 東京 naïve café-owners count people.', 'Bananas are yellow.', ''];

let tmp: ReturnType<typeof tempDir>;
let model: TinyCrossEncoder;
let pairs: { ids: number[]; types: number[] }[];

beforeAll(async () => {
  tmp = tempDir('weightmap-rerank-gguf-');
  model = writeTinyCrossEncoder(path.join(tmp.dir, 'ce'), { seed: 21 });
  const hf = HfTokenizer.fromFile(fixture('tokenizers', 'minilm', 'tokenizer.json'));
  hf.disablePadding();
  hf.setTruncation(64);
  pairs = [];
  for (const d of DOCS) {
    const e = await hf.encode(QUERY, d);
    pairs.push({ ids: e.getIds(), types: e.getTypeIds() });
  }
});

afterAll(() => tmp?.cleanup());

test("the HF folder converted to GGUF: llama.cpp's names and keys, the reference's scores", async () => {
  const out = path.join(tmp.dir, 'ce.gguf');
  await convert(model.dir, out, { to: 'gguf' });
  const w = await readWeights(out);
  try {
    const names = (w.metadata['gguf.tensors'] as { name: string }[]).map((t) => t.name);
    expect(names).toEqual(expect.arrayContaining(['token_embd.weight', 'token_types.weight', 'position_embd.weight', 'token_embd_norm.bias', 'blk.1.attn_q.weight', 'blk.1.attn_output_norm.weight', 'blk.1.ffn_up.bias', 'blk.1.layer_output_norm.bias', 'cls.weight', 'cls.bias', 'cls.output.weight', 'cls.output.bias']));
    expect([w.metadata['general.architecture'], w.metadata['bert.pooling_type'], w.metadata['bert.classifier.output_labels'], w.metadata['tokenizer.ggml.model']]).toEqual(['bert', 4, ['LABEL_0'], 'bert']);
    expect((w.metadata['tokenizer.ggml.tokens'] as string[]).slice(100, 104)).toEqual(['[UNK]', '[CLS]', '[SEP]', '[MASK]']);
    expect((w.config as BertClassifierConfig).pooler).toBe(true);
  } finally {
    closeWeights(w);
  }
  const reranker = await loadReranker(out, { threads: 1 });
  try {
    const { scores } = await reranker.score(QUERY, DOCS);
    scores.forEach((s, i) => expect(Math.abs(s - crossEncoderLogit(model, pairs[i].ids, pairs[i].types))).toBeLessThan(1e-5));
  } finally {
    reranker.dispose();
  }
  // Q8_0 blocks (llama-quantize's choice of tensors) stay close.
  const q8 = path.join(tmp.dir, 'ce.q8_0.gguf');
  await convert(model.dir, q8, { to: 'gguf', quant: 'q8_0' });
  const quantized = await loadReranker(q8, { threads: 1 });
  try {
    const { scores } = await quantized.score(QUERY, DOCS);
    scores.forEach((s, i) => expect(Math.abs(s - crossEncoderLogit(model, pairs[i].ids, pairs[i].types))).toBeLessThan(0.05));
  } finally {
    quantized.dispose();
  }
});

test('GGUF back to an HF folder (vocab.txt from the GGUF vocabulary) ranks the same', async () => {
  const gguf = path.join(tmp.dir, 'ce.gguf');
  if (!fs.existsSync(gguf)) await convert(model.dir, gguf, { to: 'gguf' });
  const back = path.join(tmp.dir, 'back');
  await convert(gguf, path.join(back, 'model.safetensors'), { to: 'safetensors' });
  const reranker = await loadReranker(back, { threads: 1 });
  try {
    expect(JSON.parse(fs.readFileSync(path.join(back, 'config.json'), 'utf8')).architectures).toEqual(['BertForSequenceClassification']);
    expect(reranker.info.format).toBe('safetensors');
    const { scores } = await reranker.score(QUERY, DOCS);
    scores.forEach((s, i) => expect(Math.abs(s - crossEncoderLogit(model, pairs[i].ids, pairs[i].types))).toBeLessThan(1e-5));
  } finally {
    reranker.dispose();
  }
});

test("a GGUF without the pooler (llama.cpp's converter drops it) runs the classifier on the [CLS] row", async () => {
  const w = await readWeights(model.dir);
  const out = path.join(tmp.dir, 'nopooler.gguf');
  try {
    const stripped = { ...w, config: { ...(w.config as BertClassifierConfig), pooler: false }, tensors: w.tensors.filter((t) => !t.name.startsWith('pooler.')) };
    await writeWeights(stripped, out, { format: 'gguf' });
  } finally {
    closeWeights(w);
  }
  const reranker = await loadReranker(out, { threads: 1 });
  try {
    expect(reranker.info.pooler).toBe(false);
    const { scores } = await reranker.score(QUERY, DOCS);
    scores.forEach((s, i) => expect(Math.abs(s - crossEncoderLogit(model, pairs[i].ids, pairs[i].types, { pooler: false }))).toBeLessThan(1e-5));
  } finally {
    reranker.dispose();
  }
});

test('an EMBD embedder through GGUF (mean pooling, normalized) embeds as the fixture says', async () => {
  const out = path.join(tmp.dir, 'minilm.gguf');
  await convert(fixture('embd-minilm-tiny', 'model.weights'), out, { to: 'gguf' });
  const expected = JSON.parse(fs.readFileSync(fixture('embd-minilm-tiny', 'expected.json'), 'utf8'));
  const sentences: { text: string; ids: number[]; embedding: number[] }[] = expected.sentences;
  const embedder = await loadEmbedder(out, { threads: 1 });
  try {
    const vectors = await embedder.embed(sentences.map((s) => s.text));
    vectors.forEach((v, i) => {
      const worst = Math.max(...Array.from(v, (x, j) => Math.abs(x - sentences[i].embedding[j])));
      expect([i, worst < 1e-4]).toEqual([i, true]);
    });
    expect(sentences.map((s) => embedder.tokenizer.encode(s.text))).toEqual(sentences.map((s) => s.ids));
  } finally {
    embedder.dispose();
  }
});

test('a broken BERT GGUF is a WeightFormatError naming what is wrong; bad token types are RangeErrors', async () => {
  const w = await readWeights(model.dir);
  const noBias = path.join(tmp.dir, 'nobias.gguf');
  const labels = path.join(tmp.dir, 'labels.gguf');
  try {
    await writeWeights({ ...w, tensors: w.tensors.filter((t) => t.name !== 'classifier.bias') }, noBias, { format: 'gguf' });
    await writeWeights({ ...w, config: { ...(w.config as BertClassifierConfig), labels: ['a', 'b'] } }, labels, { format: 'gguf' });
  } finally {
    closeWeights(w);
  }
  await expect(loadReranker(noBias)).rejects.toMatchObject({ name: 'WeightFormatError', code: 'MISSING_TENSOR' });
  await expect(loadReranker(labels)).rejects.toMatchObject({ name: 'WeightFormatError', code: 'CONFIG_MISMATCH' });

  const weights = await readWeights(model.dir);
  const engine = await BertEngine.load(weights, { threads: 1 });
  try {
    const ids = Int32Array.from([101, 2054, 102]);
    await expect(engine.classify(ids, Int32Array.from([0, 2, 1]), Int32Array.from([3]))).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    await expect(engine.classify(ids, Int32Array.from([0, 1]), Int32Array.from([3]))).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    expect((await engine.classify(ids, null, Int32Array.from([3]))).length).toBe(1);
  } finally {
    engine.dispose();
    closeWeights(weights);
  }
});
