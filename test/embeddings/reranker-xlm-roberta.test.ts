/**
 * XLM-RoBERTa cross-encoders (XLMRobertaForSequenceClassification: bge-reranker-v2-m3's layout)
 * against the float64 BertForSequenceClassification reference — the same head under other names:
 * classifier.dense + tanh is BERT's pooler, classifier.out_proj its classifier — on the pairs
 * Hugging Face's Rust tokenizer makes with RoBERTa's post-processor (`<s> a </s></s> b </s>`,
 * types all 0), positions from padding_idx + 1.
 */
import { Tokenizer as HfTokenizer, TruncationStrategy } from '@anush008/tokenizers';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readWeights, writeWeights } from '../../lib/formats';
import { closeWeights } from '../../lib/addon/weights';
import { loadReranker, type Reranker } from '../../lib/models/reranker';
import { tempDir } from '../helpers/fixtures';
import { writeTinyCrossEncoder, type TinyCrossEncoder } from '../helpers/tiny-cross-encoder';
import { crossEncoderLogit } from './cross-encoder-reference';

const QUERY = 'How many people live in Berlin?';
const DOCS = [
  'Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.',
  'New York City is famous for the Metropolitan Museum of Art.',
  'Berlin is the capital and largest city of Germany, both by area and by population.',
  '',
  'population population population population population population population population population population population',
];
const MAX = 40;

let tmp: ReturnType<typeof tempDir>;
let model: TinyCrossEncoder;
let reranker: Reranker;
let hf: HfTokenizer;

beforeAll(async () => {
  tmp = tempDir('weightmap-xlmr-rerank-');
  model = writeTinyCrossEncoder(path.join(tmp.dir, 'ce'), { maxPositions: MAX, xlmRoberta: true, seed: 99 });
  reranker = await loadReranker(model.dir, { threads: 2 });
  hf = HfTokenizer.fromFile(path.join(model.dir, 'tokenizer.json'));
  hf.disablePadding();
});

afterAll(() => {
  reranker?.dispose();
  tmp?.cleanup();
});

async function hfPair(query: string, doc: string, maxLength: number): Promise<{ ids: number[]; types: number[] }> {
  hf.setTruncation(maxLength, { strategy: TruncationStrategy.LongestFirst });
  const e = await hf.encode(query, doc);
  return { ids: e.getIds(), types: e.getTypeIds() };
}

test('scores equal the float64 reference on the Rust tokenizer\'s RoBERTa pairs, cut at the positions past the offset', async () => {
  expect(reranker.maxSeqLength).toBe(MAX);
  const { scores, tokens } = await reranker.score(QUERY, DOCS);
  let worst = 0;
  let total = 0;
  for (let i = 0; i < DOCS.length; i++) {
    const pair = await hfPair(QUERY, DOCS[i], MAX);
    expect(pair.ids.filter((id) => id === 102).length).toBe(3);
    expect(new Set(pair.types)).toEqual(new Set([0]));
    total += pair.ids.length;
    worst = Math.max(worst, Math.abs(scores[i] - crossEncoderLogit(model, pair.ids, pair.types)));
  }
  expect(total).toBe(tokens);
  expect(worst).toBeLessThan(1e-5);
  expect(Math.max(...scores) - Math.min(...scores)).toBeGreaterThan(0.1);
});

test('written back as an HF folder: XLMRobertaForSequenceClassification names and config, the same scores', async () => {
  const weights = await readWeights(model.dir);
  try {
    const out = path.join(tmp.dir, 'out', 'model.safetensors');
    fs.mkdirSync(path.dirname(out), { recursive: true });
    await writeWeights(weights, out, { format: 'safetensors' });
    const config = JSON.parse(fs.readFileSync(path.join(path.dirname(out), 'config.json'), 'utf8'));
    expect(config).toMatchObject({ architectures: ['XLMRobertaForSequenceClassification'], model_type: 'xlm-roberta', pad_token_id: 1, type_vocab_size: 1 });
    const bytes = fs.readFileSync(out);
    const header = JSON.parse(bytes.subarray(8, 8 + Number(bytes.readBigUInt64LE(0))).toString('utf8'));
    const names = Object.keys(header).filter((k) => k !== '__metadata__');
    expect(names).toEqual(expect.arrayContaining(['classifier.dense.weight', 'classifier.out_proj.weight', 'classifier.out_proj.bias', 'roberta.embeddings.position_embeddings.weight']));
    expect(names.filter((n) => !n.startsWith('roberta.') && !n.startsWith('classifier.'))).toEqual([]);
    fs.copyFileSync(path.join(model.dir, 'tokenizer.json'), path.join(path.dirname(out), 'tokenizer.json'));
    const again = await loadReranker(path.dirname(out), { threads: 1 });
    try {
      expect((await again.score(QUERY, DOCS)).scores).toEqual((await reranker.score(QUERY, DOCS)).scores);
    } finally {
      again.dispose();
    }
  } finally {
    closeWeights(weights);
  }
});
