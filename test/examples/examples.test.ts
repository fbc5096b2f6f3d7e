/**
 * Every script in examples/ runs as a user runs it (`node examples/X.mjs` from the repository root,
 * `import ... from 'weightmap'` resolved by the package's self-reference to dist/) on the fixtures,
 * and prints what the fixtures' references say it should. README.md's code samples are these files,
 * included verbatim (readme-samples.test.ts). Needs `npm run build:ts` (CI runs it before the tests).
 */
import { execFile } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { promisify } from 'node:util';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import Ajv from 'ajv';
import { crossEncoderLogit } from '../embeddings/cross-encoder-reference';
import { fixture, readF32, readJson, tempDir } from '../helpers/fixtures';
import { writeTinyCrossEncoder } from '../helpers/tiny-cross-encoder';

const root = path.join(__dirname, '..', '..');
const golden = fs.readFileSync(fixture('llama-stories260k', 'expected_greedy_200steps.txt'), 'utf8');
const PROMPT = 'Once upon a time';

async function runExample(name: string, args: string[] = []): Promise<string[]> {
  const { stdout, stderr } = await promisify(execFile)(process.execPath, [path.join('examples', name), ...args], { cwd: root, encoding: 'utf8', timeout: 120_000 });
  expect(stderr).toBe('');
  return stdout.trimEnd().split('\n');
}

/** Greedy text after PROMPT continues llama2.c's golden story. */
function continuesGolden(text: string): boolean {
  return text.length > 0 && golden.startsWith(PROMPT + text);
}

function cosine(a: Float32Array, b: Float32Array): number {
  let dot = 0;
  let na = 0;
  let nb = 0;
  for (let i = 0; i < a.length; i++) {
    dot += a[i] * b[i];
    na += a[i] * a[i];
    nb += b[i] * b[i];
  }
  return dot / Math.sqrt(na * nb);
}

const ajc1Reply = (readJson('ajc1-qwen3-tiny', 'expected.json').cases[0].greedy.text as string).replace('<|im_end|>', '');

/** rerank.mjs's query and documents, as the example has them. */
const RERANK_QUERY = 'What is the capital of Germany?';
const RERANK_DOCS = ['Berlin is the capital of Germany.', 'Bananas are yellow.', 'Germany has 84 million people.'];

/** Runs rerank.mjs on a random-weight cross-encoder made here: its two lines are the best two pairs of the float64 reference. */
async function checkRerank(): Promise<void> {
  const out = tempDir('weightmap-example-');
  try {
    const model = writeTinyCrossEncoder(path.join(out.dir, 'ce'), { seed: 5 });
    const hf = HfTokenizer.fromFile(fixture('tokenizers', 'minilm', 'tokenizer.json'));
    hf.disablePadding();
    const scores: number[] = [];
    for (const d of RERANK_DOCS) {
      const e = await hf.encode(RERANK_QUERY, d);
      scores.push(crossEncoderLogit(model, e.getIds(), e.getTypeIds()));
    }
    const best = scores.map((_, i) => i).sort((a, b) => scores[b] - scores[a]).slice(0, 2);
    const lines = await runExample('rerank.mjs', [model.dir]);
    expect(lines).toHaveLength(2);
    lines.forEach((line, i) => {
      const [, index, score, document] = /^(\d+) (-?[\d.]+) (.*)$/.exec(line)!;
      expect([Number(index), document]).toEqual([best[i], RERANK_DOCS[best[i]]]);
      expect(Math.abs(Number(score) - scores[best[i]])).toBeLessThanOrEqual(5e-5 + 1e-5);
    });
  } finally {
    out.cleanup();
  }
}

const CHECKS: Record<string, (lines: string[]) => void> = {
  'generate.mjs': ([greedy, summary, sampled]) => {
    expect(continuesGolden(greedy)).toBe(true);
    expect(summary).toBe('[48 tokens, max-tokens]');
    expect(sampled.length).toBeGreaterThan(0);
  },
  'chat.mjs': ([reply, reason, sessionReply, count]) => {
    expect(reply).toBe(ajc1Reply);
    expect(reason).toBe('[stop-token]');
    expect(sessionReply.length).toBeGreaterThan(0);
    expect(count).toBe('[5 messages]'); // system, then two user turns and two replies
  },
  'agent.mjs': ([called, said, rounds]) => {
    // The forced call's arguments parse and validate against the tool's schema (ajv, not the mask); the handler's result is what went back.
    const [, name, args] = /^called (\w+)\((.*)\)$/.exec(called)!;
    const value = JSON.parse(args) as { city: string };
    const schema = { type: 'object', properties: { city: { type: 'string', pattern: '^[A-Z][a-z]+$', maxLength: 12 } }, required: ['city'] };
    expect({ name, valid: new Ajv().validate(schema, value) }).toEqual({ name: 'get_weather', valid: true });
    expect(said).toBe(`tool said ${JSON.stringify({ city: value.city, celsius: 21 })}`);
    expect(rounds).toMatch(/^\[1 round, then (stop-token|max-tokens)\]$/);
  },
  'agent-server.mjs': ([called, then]) => {
    // Through the openai client and /v1/responses: the forced call validates against the tool's schema (ajv); the second round read the result.
    const [, name, args] = /^called (\w+)\((.*)\)$/.exec(called)!;
    const schema = { type: 'object', properties: { city: { type: 'string', pattern: '^[A-Z][a-z]+$', maxLength: 12 } }, required: ['city'] };
    expect({ name, valid: new Ajv().validate(schema, JSON.parse(args)) }).toEqual({ name: 'get_weather', valid: true });
    expect(then).toMatch(/^then (message|function_call)(, function_call)* \((completed|incomplete), \d+ input tokens\)$/);
  },
  'embed.mjs': ([f32, int8]) => {
    const dims = readJson('embd-minilm-tiny', 'expected.json').config.hidden_size as number;
    const all = readF32('embd-minilm-tiny', 'embeddings.f32');
    const expected = cosine(all.subarray(0, dims), all.subarray(dims, 2 * dims)); // sentences 0 and 1
    expect(f32).toBe(`dimensions: ${dims}, cosine: ${expected.toFixed(4)}`);
    const [, value] = /^int8 vs f32 cosine: ([\d.]+)$/.exec(int8)!;
    expect(Number(value)).toBeGreaterThan(0.99);
  },
  'vision.mjs': ([line]) => {
    const expected = readJson('moon-tiny', 'expected.json');
    const config = expected.config;
    const values = config.n_patches * config.text_dim;
    expect(line).toBe(`${values} embedding values; answer tokens: ${expected.combined_case.greedy.tokens.join(' ')}`);
  },
  'serve.mjs': ([line]) => {
    const [, status, reason, content] = /^(\d+) (\w+) (".*")$/.exec(line)!;
    expect({ status, reason }).toEqual({ status: '200', reason: 'length' });
    expect(ajc1Reply.startsWith(JSON.parse(content))).toBe(true);
    expect(JSON.parse(content).length).toBeGreaterThan(0);
  },
  'convert.mjs': ([wrote, inspected, text]) => {
    expect(wrote).toMatch(/^wrote \d+ bytes to .*stories260K\.q8_0\.gguf$/);
    expect(inspected).toMatch(/^gguf, llama, \d+ tensors, first model\.embed_tokens\.weight ggml_q8_0$/);
    expect(continuesGolden(text)).toBe(true); // Q8_0 keeps stories260K's first greedy tokens
  },
  'pipeline.mjs': ([text]) => {
    expect(continuesGolden(text)).toBe(true);
  },
  'rerank.mjs': () => {}, // checkRerank runs it on a model made for it
};

describe('examples/', () => {
  beforeAll(() => {
    if (!fs.existsSync(path.join(root, 'dist', 'esm', 'index.mjs'))) throw new Error('dist/ is missing: run `npm run build:ts` first');
  });

  test('every example has a check here', () => {
    expect(fs.readdirSync(path.join(root, 'examples')).filter((f) => f.endsWith('.mjs')).sort()).toEqual(Object.keys(CHECKS).sort());
  });

  test.each(Object.keys(CHECKS))('%s runs and prints what the fixtures say', async (name) => {
    if (name === 'rerank.mjs') return checkRerank();
    if (name !== 'convert.mjs') return CHECKS[name](await runExample(name));
    // Its output goes to a folder of the test's own, removed afterwards (by default: a new temp folder).
    const out = tempDir('weightmap-example-');
    try {
      CHECKS[name](await runExample(name, [fixture('llama-stories260k', 'stories260K.bin'), path.join(out.dir, 'stories260K.q8_0.gguf')]));
    } finally {
      out.cleanup();
    }
  });
});
