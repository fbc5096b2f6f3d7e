/** `weightmap embed`: JSON Lines of vectors from arguments or stdin. */
import { float32Text } from '../../lib/cli/embed';
import { runCli } from '../helpers/cli';
import { fixture, readJson } from '../helpers/fixtures';

const MODEL = fixture('embd-minilm-tiny', 'model.weights');
const sentences: { text: string; embedding: number[] }[] = readJson('embd-minilm-tiny', 'expected.json').sentences;

function parseLines(stdout: string): number[][] {
  return stdout
    .trimEnd()
    .split('\n')
    .map((line) => JSON.parse(line) as number[]);
}

function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('weightmap embed', () => {
  test('texts as arguments: one vector per line, in order', async () => {
    const r = await runCli(['embed', MODEL, sentences[0].text, sentences[1].text, '--batch-size', '1', '--threads', '1']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    const vectors = parseLines(r.stdout);
    expect(vectors).toHaveLength(2);
    vectors.forEach((v, i) => {
      expect(v).toHaveLength(32);
      expect(maxAbsDiff(v, sentences[i].embedding)).toBeLessThanOrEqual(1e-4);
    });
  });

  test('one text per line of stdin, empty lines included', async () => {
    const input = `${sentences[2].text}\n\n${sentences[3].text}\n`;
    const r = await runCli(['embed', MODEL], input);
    expect(r.exitCode).toBe(0);
    const vectors = parseLines(r.stdout);
    expect(vectors).toHaveLength(3);
    expect(maxAbsDiff(vectors[0], sentences[2].embedding)).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(vectors[1], sentences.find((s) => s.text === '')!.embedding)).toBeLessThanOrEqual(1e-4);
    expect(maxAbsDiff(vectors[2], sentences[3].embedding)).toBeLessThanOrEqual(1e-4);
  });

  test('--no-normalize and --pooling change the output; bad options fail with exit code 2', async () => {
    const r = await runCli(['embed', MODEL, 'Hello, world!', '--no-normalize', '--pooling', 'max']);
    expect(r.exitCode).toBe(0);
    const [v] = parseLines(r.stdout);
    expect(Math.abs(Math.hypot(...v) - 1)).toBeGreaterThan(1e-3);
    const bad = await runCli(['embed', MODEL, 'x', '--batch-size', '0']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/batch-size/);
    const badPooling = await runCli(['embed', MODEL, 'x', '--pooling', 'sum']);
    expect(badPooling.exitCode).toBe(2);
  });

  test('--dimensions n: the fixture vector\'s first n components, normalized again', async () => {
    const r = await runCli(['embed', MODEL, sentences[0].text, '--dimensions', '8']);
    expect(r.exitCode).toBe(0);
    const [v] = parseLines(r.stdout);
    const head = sentences[0].embedding.slice(0, 8);
    const norm = Math.hypot(...head);
    expect(v).toHaveLength(8);
    expect(maxAbsDiff(v, head.map((x) => x / norm))).toBeLessThanOrEqual(1e-4);
    expect((await runCli(['embed', MODEL, 'x', '--dimensions', '0'])).exitCode).toBe(2);
    const tooMany = await runCli(['embed', MODEL, 'x', '--dimensions', '33']);
    expect(tooMany.exitCode).not.toBe(0);
    expect(tooMany.stderr).toMatch(/dimensions must be an integer from 1 to 32/);
  });

  test('--quant int8: within cosine 0.999 of the fixture; an unknown quant fails with exit code 2', async () => {
    const r = await runCli(['embed', MODEL, sentences[0].text, '--quant', 'int8']);
    expect(r.exitCode).toBe(0);
    const [v] = parseLines(r.stdout);
    const e = sentences[0].embedding;
    const cosine = v.reduce((a, x, i) => a + x * e[i], 0) / (Math.hypot(...v) * Math.hypot(...e));
    expect(cosine).toBeGreaterThanOrEqual(0.999);
    expect(maxAbsDiff(v, e)).toBeGreaterThan(0); // the int8 path, not f32
    const bad = await runCli(['embed', MODEL, 'x', '--quant', 'int4']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/'--quant <type>' argument 'int4' is invalid\. expected one of f32, int8, q8_0/);
  });

  test('float32 values print as the shortest decimal that reads back', () => {
    for (const x of [0.1, -0.11349419, 1e-9, 3.4028234663852886e38, 0, 1.5]) {
      const f = Math.fround(x);
      const s = float32Text(f);
      expect(Math.fround(Number(s))).toBe(f);
    }
    expect(float32Text(Math.fround(0.1))).toBe('0.1');
    expect(float32Text(Math.fround(-0.11349419))).toBe('-0.11349419');
  });
});
