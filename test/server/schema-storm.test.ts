/**
 * A storm of hostile response_format schemas, a dozen at once, against a loopback server with a
 * tiny model: each past a bound is a 400 naming response_format and the bound (before any stream
 * starts), one that fits is served, and afterwards /health answers and the heap, after a full GC,
 * is back near where it was (the grammar caches hold at most their byte budgets).
 */
import * as v8 from 'node:v8';
import * as vm from 'node:vm';
import { GRAMMAR_CACHE_BYTES, SCHEMA_CACHE_BYTES } from '../../lib/constrain/limits';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture } from '../helpers/fixtures';
import { rawRequest, startServer, type Running } from './server-helpers';

v8.setFlagsFromString('--expose-gc');
const gc = vm.runInNewContext('gc') as () => void;

// A chat model with a byte-level vocabulary for the schemas; a 512-token one for a logit_bias that names every id.
let model: Model;
let running: Running;
let small: Model;
let smallRunning: Running;

beforeAll(async () => {
  model = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'));
  running = await startServer({ model, modelId: 'tiny' });
  small = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin') });
  smallRunning = await startServer({ model: small, modelId: 'stories' });
});

afterAll(async () => {
  await running.stop();
  await smallRunning.stop();
  model.dispose();
  small.dispose();
});

const post = (origin: string, path: string, body: Record<string, unknown>) =>
  rawRequest(origin, path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
const chat = (body: Record<string, unknown>) =>
  post(running.origin, '/v1/chat/completions', { model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 12, temperature: 0, ...body });
/** A request with a schema given as JSON text. */
const withSchemaText = (schema: string) =>
  rawRequest(running.origin, '/v1/chat/completions', {
    method: 'POST',
    headers: { 'Content-Type': 'application/json' },
    body: JSON.stringify({ model: 'tiny', messages: [{ role: 'user', content: 'Hi' }], max_tokens: 4, response_format: { type: 'json_schema', json_schema: { name: 'x', schema: '@' } } }).replace('"@"', schema),
  });
const withSchema = (schema: unknown, extra: Record<string, unknown> = {}) => chat({ response_format: { type: 'json_schema', json_schema: { name: 'x', schema } }, ...extra });

function nested(levels: number): unknown {
  let schema: unknown = { type: 'string' };
  for (let i = 0; i < levels; i++) schema = { type: 'object', properties: { a: schema }, required: ['a'] };
  return schema;
}

/** The JS heap and the memory outside it (typed arrays' buffers, where grammar tables live), after a full GC. */
function heapAfterGc(): number {
  gc();
  gc();
  const { heapUsed, external } = process.memoryUsage();
  return heapUsed + external;
}

describe('a storm of hostile schemas', () => {
  it('answers each with a 400 naming the bound, serves the one that fits, and leaves the server healthy at its baseline heap', async () => {
    // Warm the paths once (vocabulary index, validators), so the baseline holds what stays anyway.
    expect((await withSchema({ type: 'boolean' })).status).toBe(200);
    const baseline = heapAfterGc();

    const huge = 'x'.repeat(900_000);
    const members = Array.from({ length: 15_000 }, (_, i) => `m${i}`);
    // 5000 wrapped anyOf, written out by hand (JSON.stringify would overflow the stack).
    const wrapped = '{"anyOf":['.repeat(5000) + '{"type":"integer"}' + ']}'.repeat(5000);
    const schemaParam = 'response_format.json_schema.schema';
    const hostile: [string, Promise<{ status: number; body: any }>, number, string | null, RegExp | null][] = [
      ['900,000-character name', withSchema({ type: 'object', properties: { [huge]: { type: 'string' } } }), 400, 'schema_too_large', /maxLiteralBytes/],
      ['900,000-character name, streamed', withSchema({ type: 'object', properties: { [huge]: { type: 'string' } } }, { stream: true }), 400, 'schema_too_large', /maxLiteralBytes/],
      ['900,000-character enum string', withSchema({ enum: [huge] }), 400, 'schema_too_large', /maxLiteralBytes/],
      ['50,000 short enum strings', withSchema({ enum: Array.from({ length: 50_000 }, (_, i) => `value-${i}`) }), 400, 'schema_too_large', /maxLiteralBytes/],
      ['10,001 properties', withSchema({ type: 'object', properties: Object.fromEntries(Array.from({ length: 10_001 }, (_, i) => [`p${i}`, { type: 'integer' }])) }), 400, 'schema_too_large', /maxNodes/],
      ['40 levels of objects', withSchema(nested(40)), 400, 'schema_too_deep', /maxDepth/],
      ['32 levels of objects, streamed', withSchema(nested(32), { stream: true }), 400, 'schema_too_deep', /maxDepth/],
      ['5000 wrapped anyOf', withSchemaText(wrapped), 400, 'schema_too_deep', /maxNesting/],
      [
        'logit_bias banning every id',
        post(smallRunning.origin, '/v1/completions', { model: 'stories', prompt: [1], logit_bias: Object.fromEntries(Array.from({ length: small.vocabSize }, (_, t) => [t, -100])) }),
        400,
        'no_allowed_token',
        /bans every token/,
      ],
      ['an unsupported keyword past a big enum', withSchema({ type: 'object', properties: { a: { enum: members }, b: { type: 'number', multipleOf: 2 } } }), 400, null, /multipleOf/],
      ['15,000 enum strings (fits)', withSchema({ enum: members }), 200, null, null],
      ['31 levels of objects (fits)', withSchema(nested(31)), 200, null, null],
      ['a pattern whose automaton explodes', withSchema({ type: 'string', pattern: '^(a|b)*a(a|b){40}$' }), 400, 'schema_too_large', /maxPatternStates/],
    ];
    const health = rawRequest(running.origin, '/health');
    const answers = await Promise.all(hostile.map(([, response]) => response));
    expect((await health).status).toBe(200);

    answers.forEach((answer, i) => {
      const [name, , status, code, message] = hostile[i];
      expect([name, answer.status]).toEqual([name, status]);
      if (status !== 400) return;
      const { error } = answer.body;
      const param = code === 'no_allowed_token' ? 'logit_bias' : schemaParam;
      expect([name, error.param, error.code]).toEqual([name, param, code ?? error.code]);
      expect(error.message).toMatch(message!);
    });
    // What fits is served: an enum member, or (cut by max_tokens) the start of one.
    const content: string = answers[10].body.choices[0].message.content;
    const finish: string = answers[10].body.choices[0].finish_reason;
    const quoted = members.map((m) => JSON.stringify(m));
    expect(finish === 'stop' ? quoted.includes(content) : quoted.some((m) => m.startsWith(content))).toBe(true);

    const after = await rawRequest(running.origin, '/health');
    expect(after.status).toBe(200);
    expect(after.body.status).toBe('ok');
    // The storm's bodies and grammars are gone but for what the caches may keep.
    expect(heapAfterGc() - baseline).toBeLessThan(SCHEMA_CACHE_BYTES + GRAMMAR_CACHE_BYTES + 32 * 1024 * 1024);
  });
});
