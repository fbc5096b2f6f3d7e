/**
 * POST /v1/rerank and /rerank with the requests Cohere, Jina and llama-server clients send (plain
 * fetch): the order and scores against the float64 cross-encoder of the embeddings tests on the
 * pairs Hugging Face's Rust tokenizer makes, the usage, the 400s naming the field, and the metrics.
 */
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import * as path from 'node:path';
import { loadReranker, type Reranker } from '../../lib/models/reranker';
import { listModelsFolder } from '../../lib/server/models-folder';
import { main } from '../../lib/cli/main';
import { crossEncoderLogit } from '../embeddings/cross-encoder-reference';
import { fixture, tempDir } from '../helpers/fixtures';
import { writeTinyCrossEncoder, type TinyCrossEncoder } from '../helpers/tiny-cross-encoder';
import { rawRequest, startServer, until, type Running } from './server-helpers';

const QUERY = 'What is the capital of Germany?';
const DOCS = ['Berlin is the capital of Germany.', 'Paris is in France.', 'Bananas are yellow fruit.', 'The German capital is Berlin, a large city.'];

let tmp: ReturnType<typeof tempDir>;
let model: TinyCrossEncoder;
let reranker: Reranker;
let running: Running;
let strict: Running;
/** The reference scores and pair lengths, by document. */
const expected: { score: number; tokens: number }[] = [];

beforeAll(async () => {
  tmp = tempDir('weightmap-rerank-server-');
  model = writeTinyCrossEncoder(path.join(tmp.dir, 'ce'), { maxPositions: 64, seed: 99 });
  reranker = await loadReranker(model.dir, { threads: 1 });
  running = await startServer({ reranker, rerankerId: 'ce' });
  strict = await startServer({ reranker, rerankerId: 'ce', strict: true, metrics: false });
  const hf = HfTokenizer.fromFile(fixture('tokenizers', 'minilm', 'tokenizer.json'));
  hf.disablePadding();
  hf.setTruncation(64);
  for (const d of DOCS) {
    const e = await hf.encode(QUERY, d);
    expected.push({ score: crossEncoderLogit(model, e.getIds(), e.getTypeIds()), tokens: e.getIds().length });
  }
});

afterAll(async () => {
  await running?.stop();
  await strict?.stop();
  reranker?.dispose();
  tmp?.cleanup();
});

const post = (origin: string, route: string, body: unknown) =>
  rawRequest(origin, route, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });

const bestFirst = () => expected.map((_, i) => i).sort((a, b) => expected[b].score - expected[a].score);
const totalTokens = () => expected.reduce((sum, e) => sum + e.tokens, 0);

test('a Cohere-shaped request: top_n, return_documents, scores of the reference, usage', async () => {
  const { status, body } = await post(running.origin, '/v1/rerank', { model: 'ce', query: QUERY, documents: DOCS, top_n: 3, return_documents: true });
  expect(status).toBe(200);
  expect(body.model).toBe('ce');
  expect(body.object).toBe('list');
  expect(body.usage).toEqual({ prompt_tokens: totalTokens(), total_tokens: totalTokens() });
  expect(body.results.map((r: { index: number }) => r.index)).toEqual(bestFirst().slice(0, 3));
  for (const r of body.results) {
    expect(Math.abs(r.relevance_score - expected[r.index].score)).toBeLessThan(1e-5);
    expect(r.document).toEqual({ text: DOCS[r.index] });
  }
});

test('a Jina / llama-server-shaped request: {text} documents, no model, /rerank, every result without documents', async () => {
  const { status, body } = await post(running.origin, '/rerank', { query: QUERY, documents: DOCS.map((text) => ({ text })) });
  expect(status).toBe(200);
  expect(body.results.map((r: { index: number }) => r.index)).toEqual(bestFirst());
  expect(body.results.every((r: object) => Object.keys(r).join() === 'index,relevance_score')).toBe(true);
});

test('bad requests are 400s naming the field; an unknown model is a 404', async () => {
  const cases: [unknown, string][] = [
    [{ documents: DOCS }, 'query'],
    [{ query: QUERY }, 'documents'],
    [{ query: QUERY, documents: [] }, 'documents'],
    [{ query: QUERY, documents: ['a', 5] }, 'documents[1]'],
    [{ query: QUERY, documents: [{ txt: 'a' }] }, 'documents[0]'],
    [{ query: 7, documents: DOCS }, 'query'],
    [{ query: QUERY, documents: DOCS, top_n: 0 }, 'top_n'],
    [{ query: QUERY, documents: DOCS, top_n: 1.5 }, 'top_n'],
    [{ query: QUERY, documents: DOCS, return_documents: 'yes' }, 'return_documents'],
  ];
  for (const [body, param] of cases) {
    const res = await post(running.origin, '/v1/rerank', body);
    expect([param, res.status, res.body.error?.param]).toEqual([param, 400, param]);
  }
  const unknown = await post(strict.origin, '/v1/rerank', { query: QUERY, documents: DOCS, rank_fields: ['text'] });
  expect([unknown.status, unknown.body.error.param]).toEqual([400, 'rank_fields']);
  const lenient = await post(running.origin, '/v1/rerank', { query: QUERY, documents: DOCS, rank_fields: ['text'] });
  expect(lenient.status).toBe(200);
  const missing = await post(running.origin, '/v1/rerank', { model: 'nope', query: QUERY, documents: DOCS });
  expect([missing.status, missing.body.error.code]).toEqual([404, 'model_not_found']);
  const get = await rawRequest(running.origin, '/v1/rerank');
  expect(get.status).toBe(405);
});

test('metrics count rerank pairs as prompt tokens and the route by name', async () => {
  const before = await rawRequest(running.origin, '/metrics');
  const count = (text: string, name: string) => Number(new RegExp(`^${name} (\\S+)$`, 'm').exec(text)?.[1] ?? 0);
  const tokensBefore = count(before.body, 'weightmap_prompt_tokens_total\\{model="ce"\\}');
  await post(running.origin, '/v1/rerank', { query: QUERY, documents: DOCS });
  const after = await rawRequest(running.origin, '/metrics');
  expect(count(after.body, 'weightmap_prompt_tokens_total\\{model="ce"\\}') - tokensBefore).toBe(totalTokens());
  expect(after.body).toMatch(/weightmap_http_requests_total\{method="POST",route="\/v1\/rerank",status="200"\} \d+/);
});

test('a cross-encoder in a --models folder is listed as a reranker and loads on its first request', async () => {
  const folder = await listModelsFolder(tmp.dir, { rerank: { threads: 1 } });
  expect(folder.models.map((m) => [m.id, m.kind, m.info?.architecture])).toEqual([['ce', 'rerank', 'bert-classifier']]);
  const pool = await startServer({ models: folder.models, metrics: false });
  try {
    const { status, body } = await post(pool.origin, '/v1/rerank', { model: 'ce', query: QUERY, documents: DOCS, top_n: 1 });
    expect([status, body.results[0].index]).toEqual([200, bestFirst()[0]]);
    expect(Math.abs(body.results[0].relevance_score - expected[bestFirst()[0]].score)).toBeLessThan(1e-5);
    const listed = await rawRequest(pool.origin, '/api/tags');
    expect(listed.body.models.map((m: { name: string; capabilities?: string[] }) => m.name)).toEqual(['ce:latest']); // Ollama's naming
  } finally {
    await pool.stop();
  }
});

test('weightmap serve --reranker MODEL answers /v1/rerank under the folder name, and drains on SIGTERM', async () => {
  const printed: string[] = [];
  const write = process.stdout.write.bind(process.stdout);
  process.stdout.write = ((chunk: string | Uint8Array) => (printed.push(chunk.toString()), true)) as typeof process.stdout.write;
  const before = new Set(process.listeners('SIGTERM'));
  const serving = main(['node', 'weightmap', 'serve', '--reranker', model.dir, '--port', '0', '--threads', '1', '--no-metrics']);
  try {
    await until(() => printed.join('').includes('listening on'));
    const origin = /listening on (http:\/\/127\.0\.0\.1:\d+)/.exec(printed.join(''))![1];
    const { status, body } = await post(origin, '/v1/rerank', { query: QUERY, documents: DOCS });
    expect([status, body.model, body.results.map((r: { index: number }) => r.index)]).toEqual([200, 'ce', bestFirst()]);
    const added = process.listeners('SIGTERM').filter((listener) => !before.has(listener));
    expect(added).toHaveLength(1);
    (added[0] as () => void)();
    await serving;
  } finally {
    process.stdout.write = write;
  }
});
