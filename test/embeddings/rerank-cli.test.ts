/** `weightmap rerank`: JSON Lines best first, from arguments or stdin, against the float64 cross-encoder. */
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import * as path from 'node:path';
import { runCli } from '../helpers/cli';
import { fixture, tempDir } from '../helpers/fixtures';
import { writeTinyCrossEncoder, type TinyCrossEncoder } from '../helpers/tiny-cross-encoder';
import { crossEncoderLogit } from './cross-encoder-reference';

const QUERY = 'where do pandas live?';
const DOCS = ['Giant pandas live in the mountains of central China.', 'The stock market fell today.', 'Pandas eat bamboo.'];

let tmp: ReturnType<typeof tempDir>;
let model: TinyCrossEncoder;
let reference: number[];

beforeAll(async () => {
  tmp = tempDir('weightmap-rerank-cli-');
  model = writeTinyCrossEncoder(path.join(tmp.dir, 'ce'), { seed: 7 });
  const hf = HfTokenizer.fromFile(fixture('tokenizers', 'minilm', 'tokenizer.json'));
  hf.disablePadding();
  hf.setTruncation(64);
  reference = [];
  for (const d of DOCS) {
    const e = await hf.encode(QUERY, d);
    reference.push(crossEncoderLogit(model, e.getIds(), e.getTypeIds()));
  }
});

afterAll(() => tmp?.cleanup());

const parse = (stdout: string) => stdout.trimEnd().split('\n').map((line) => JSON.parse(line) as { index: number; score: number; document: string });

test('documents as arguments: every one, best first, with the reference scores', async () => {
  const r = await runCli(['rerank', model.dir, QUERY, ...DOCS, '--threads', '1']);
  expect([r.exitCode, r.stderr]).toEqual([0, '']);
  const rows = parse(r.stdout);
  expect(rows.map((row) => row.index)).toEqual([0, 1, 2].sort((a, b) => reference[b] - reference[a]));
  for (const row of rows) {
    expect(row.document).toBe(DOCS[row.index]);
    expect(Math.abs(row.score - reference[row.index])).toBeLessThan(1e-5);
  }
});

test('documents from stdin, --top-n and --sigmoid; bad options exit 2', async () => {
  const r = await runCli(['rerank', model.dir, QUERY, '--top-n', '1', '--sigmoid'], DOCS.join('\n') + '\n');
  expect(r.exitCode).toBe(0);
  const [best, ...rest] = parse(r.stdout);
  expect(rest).toEqual([]);
  const top = reference.indexOf(Math.max(...reference));
  expect(best.index).toBe(top);
  expect(Math.abs(best.score - 1 / (1 + Math.exp(-reference[top])))).toBeLessThan(1e-6);
  expect((await runCli(['rerank', model.dir, QUERY, 'a', '--top-n', '0'])).exitCode).toBe(2);
  expect((await runCli(['rerank', model.dir, QUERY, 'a', '--truncation', 'middle'])).exitCode).toBe(2);
  expect((await runCli(['rerank', fixture('embd-minilm-tiny', 'model.weights'), QUERY, 'a'])).exitCode).toBe(2);
});
