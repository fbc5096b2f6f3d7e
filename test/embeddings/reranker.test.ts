/**
 * loadReranker on a random-weight cross-encoder HF folder (test/helpers/tiny-cross-encoder.ts)
 * against a float64 BertForSequenceClassification written here from HF's modeling code
 * (cross-encoder-reference.ts), and its pair encoding against Hugging Face's Rust tokenizer
 * encoding the same pairs with the same truncation.
 */
import { Tokenizer as HfTokenizer, TruncationStrategy } from '@anush008/tokenizers';
import * as path from 'node:path';
import { loadEmbedder } from '../../lib/models/embedder';
import { DisposedError, UnsupportedError, WeightFormatError } from '../../lib/base/errors';
import { loadReranker, type Reranker } from '../../lib/models/reranker';
import { fixture, tempDir } from '../helpers/fixtures';
import { writeTinyCrossEncoder, type TinyCrossEncoder } from '../helpers/tiny-cross-encoder';
import { crossEncoderLogit } from './cross-encoder-reference';

const QUERY = 'How many people live in Berlin?';
const DOCS = [
  'Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.',
  'New York City is famous for the Metropolitan Museum of Art.',
  'Berlin is the capital and largest city of Germany, both by area and by population.',
  '',
  'Héllo wörld! 東京 is not Berlin; naïve café-owners count people.',
  'population population population population population population population population population population population',
];

let tmp: ReturnType<typeof tempDir>;
let model: TinyCrossEncoder;
let reranker: Reranker;
let hf: HfTokenizer;

beforeAll(async () => {
  tmp = tempDir('weightmap-rerank-');
  model = writeTinyCrossEncoder(path.join(tmp.dir, 'ce'), { maxPositions: 48 });
  reranker = await loadReranker(model.dir, { threads: 2 });
  hf = HfTokenizer.fromFile(fixture('tokenizers', 'minilm', 'tokenizer.json'));
  hf.disablePadding();
});

afterAll(() => {
  reranker?.dispose();
  tmp?.cleanup();
});

async function hfPair(query: string, doc: string, maxLength: number, strategy: TruncationStrategy): Promise<{ ids: number[]; types: number[] }> {
  hf.setTruncation(maxLength, { strategy });
  const e = await hf.encode(query, doc);
  return { ids: e.getIds(), types: e.getTypeIds() };
}

test('scores equal the float64 reference on HF pairs, and rank sorts by them', async () => {
  const { scores, tokens } = await reranker.score(QUERY, DOCS);
  let worst = 0;
  let total = 0;
  for (let i = 0; i < DOCS.length; i++) {
    const pair = await hfPair(QUERY, DOCS[i], 48, TruncationStrategy.LongestFirst);
    total += pair.ids.length;
    const expected = crossEncoderLogit(model, pair.ids, pair.types);
    worst = Math.max(worst, Math.abs(scores[i] - expected));
  }
  expect(worst).toBeLessThan(1e-5);
  expect(tokens).toBe(total);
  const spread = Math.max(...scores) - Math.min(...scores);
  expect(spread).toBeGreaterThan(0.1); // the documents are told apart

  const ranked = await reranker.rank(QUERY, DOCS, { topN: 3, returnDocuments: true });
  const order = scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a]);
  expect(ranked).toEqual(order.slice(0, 3).map((index) => ({ index, score: scores[index], document: DOCS[index] })));
  expect((await reranker.rank(QUERY, DOCS)).map((r) => Object.keys(r))).toEqual(DOCS.map(() => ['index', 'score']));
});

test('the token types matter: the same ids with all types 0 score differently', async () => {
  const pair = await hfPair(QUERY, DOCS[0], 48, TruncationStrategy.LongestFirst);
  expect(pair.types).toContain(1);
  const withTypes = crossEncoderLogit(model, pair.ids, pair.types);
  const zeros = crossEncoderLogit(model, pair.ids, pair.ids.map(() => 0));
  const [score] = (await reranker.score(QUERY, [DOCS[0]])).scores;
  expect(Math.abs(score - withTypes)).toBeLessThan(1e-5);
  expect(Math.abs(withTypes - zeros)).toBeGreaterThan(1e-3);
});

test('pairs are encoded and cut as the Rust tokenizer does (longest_first and only_second)', async () => {
  const long = 'Berlin '.repeat(30).trim();
  const cases: [string, string][] = [
    [QUERY, DOCS[0]],
    [long, DOCS[0]],
    [long, long],
    [long, 'short'],
    ['', DOCS[2]],
    [QUERY, ''],
  ];
  // The pairs weightmap scores, compared id for id through a 1-document score at each length.
  for (const maxLength of [48, 24, 17, 9]) {
    const cut = await loadReranker(model.dir, { threads: 1, maxSeqLength: maxLength });
    const only = await loadReranker(model.dir, { threads: 1, maxSeqLength: maxLength, truncation: 'only_second' });
    try {
      for (const [q, d] of cases) {
        const expected = await hfPair(q, d, maxLength, TruncationStrategy.LongestFirst);
        const [score] = (await cut.score(q, [d])).scores;
        expect([maxLength, q.length, d.length, Math.abs(score - crossEncoderLogit(model, expected.ids, expected.types)) < 1e-5]).toEqual([maxLength, q.length, d.length, true]);
        const qLen = (await hf.encode(q, null, { addSpecialTokens: false })).getIds().length;
        if (qLen <= maxLength - 3) {
          const second = await hfPair(q, d, maxLength, TruncationStrategy.OnlySecond);
          const [s2] = (await only.score(q, [d])).scores;
          expect(Math.abs(s2 - crossEncoderLogit(model, second.ids, second.types))).toBeLessThan(1e-5);
        } else {
          await expect(only.score(q, [d])).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
        }
      }
    } finally {
      cut.dispose();
      only.dispose();
    }
  }
});

test("a pair's score does not depend on its batch", async () => {
  const alone = await Promise.all(DOCS.map(async (d) => (await reranker.score(QUERY, [d])).scores[0]));
  const together = (await reranker.score(QUERY, DOCS, { batchSize: 4 })).scores;
  expect(together).toEqual(alone);
});

test("the checkpoint's sigmoid activation, the option, and int8", async () => {
  const sig = writeTinyCrossEncoder(path.join(tmp.dir, 'sigmoid'), { maxPositions: 48, extraConfig: { sentence_transformers: { activation_fn: 'torch.nn.modules.activation.Sigmoid' } } });
  const a = await loadReranker(sig.dir, { threads: 1 });
  const raw = await loadReranker(sig.dir, { threads: 1, activation: 'none' });
  const q8 = await loadReranker(model.dir, { threads: 1, quant: 'int8' });
  try {
    expect(a.activation).toBe('sigmoid');
    const logits = (await raw.score(QUERY, DOCS)).scores;
    const scores = (await a.score(QUERY, DOCS)).scores;
    scores.forEach((s, i) => expect(Math.abs(s - 1 / (1 + Math.exp(-logits[i])))).toBeLessThan(1e-7));
    const f32 = (await reranker.score(QUERY, DOCS)).scores;
    const int8 = (await q8.score(QUERY, DOCS)).scores;
    int8.forEach((s, i) => expect(Math.abs(s - f32[i])).toBeLessThan(0.05));
  } finally {
    a.dispose();
    raw.dispose();
    q8.dispose();
  }
});

test('bad input gets typed errors', async () => {
  const outOfRange = expect.objectContaining({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE' });
  await expect(reranker.rank(QUERY, DOCS, { topN: 0 })).rejects.toEqual(outOfRange);
  await expect(reranker.rank(QUERY, [1 as unknown as string])).rejects.toThrow(TypeError);
  await expect(reranker.rank(7 as unknown as string, DOCS)).rejects.toThrow(TypeError);
  expect(await reranker.rank(QUERY, [])).toEqual([]);
  await expect(loadReranker(model.dir, { truncation: 'middle' as never })).rejects.toEqual(outOfRange);
  await expect(loadReranker(model.dir, { maxSeqLength: 49 })).rejects.toEqual(outOfRange);
  // An embedder is not a reranker, and the reverse.
  await expect(loadReranker(fixture('embd-minilm-tiny', 'model.weights'))).rejects.toThrow(/loadEmbedder/);
  await expect(loadEmbedder(model.dir)).rejects.toThrow(UnsupportedError);
  const broken = writeTinyCrossEncoder(path.join(tmp.dir, 'nopooler'), { dropPooler: true });
  await expect(loadReranker(broken.dir)).rejects.toThrow(WeightFormatError);
  const two = writeTinyCrossEncoder(path.join(tmp.dir, 'two'), { numLabels: 2 });
  await expect(loadReranker(two.dir)).rejects.toThrow(/2 labels/);

  const gone = await loadReranker(model.dir, { threads: 1 });
  await gone[Symbol.asyncDispose]();
  await expect(gone.rank(QUERY, DOCS)).rejects.toThrow(DisposedError);
});
