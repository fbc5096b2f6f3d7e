#!/usr/bin/env node
// Cost of the JSON-schema token mask (lib/constrain) on Qwen3's 151,936-token vocabulary
// (../shared/fixtures/tokenizers/qwen3): the one-time vocabulary index, then per generated token
// the mask (TokenConstraint.allowed) plus the advance over the token's bytes, replaying the tokens
// of JSON documents as a model would write them. "cold": every state's mask computed (a fresh
// grammar per document, JIT warmed on another schema); "warm": the same schema again (masks cached
// per state, as for repeated requests with one schema). Each replay runs --reps times and each
// token's cost is the minimum over them (a shared machine's scheduling noise left out); the mean
// of the first replay is printed too. --schema agents: the schema as agents write it, the largest the
// tests judge (the same object under allOf with a second part, formats email and date, a pattern,
// an integer range, a map of integers by propertyNames pattern, a union of objects sharing keys,
// properties in any order). Needs `npm run build:ts` (dist/).
//   node scripts/bench/json-mask.js [--tokenizer PATH] [--vocab 151936] [--docs 20] [--reps 5] [--schema plain|agents]
'use strict';
require('../args').scriptArgs('json-mask.js [--tokenizer PATH] [--vocab 151936] [--docs 20] [--reps 5] [--schema plain|agents]', {
  options: { tokenizer: 'string', vocab: 'string', docs: 'string', reps: 'string', schema: 'string' },
});
const path = require('node:path');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');
const { loadTokenizer } = require('../../dist/cjs/tokenizer-loading');
const { vocabularyIndex } = require('../../dist/cjs/constrain/vocabulary-index');
const { JsonGrammar, TokenConstraint } = require('../../dist/cjs/constrain/token-constraint');
const { compileJsonSchema } = require('../../dist/cjs/constrain/json-schema');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const tokenizerPath = opt('tokenizer', path.join(__dirname, '..', '..', '..', 'shared', 'fixtures', 'tokenizers', 'qwen3'));
const vocab = Number(opt('vocab', '151936'));
const docs = Number(opt('docs', '20'));
const reps = Number(opt('reps', '5'));
const agents = opt('schema', 'plain') === 'agents';

const SCHEMA = {
  type: 'object',
  properties: {
    id: { type: 'integer' },
    name: { type: 'string' },
    email: { type: 'string' },
    score: { type: 'number' },
    active: { type: 'boolean' },
    role: { enum: ['admin', 'editor', 'viewer'] },
    tags: { type: 'array', items: { type: 'string' }, maxItems: 8 },
    address: { type: 'object', properties: { street: { type: 'string' }, city: { type: 'string' }, zip: { type: ['string', 'null'] } }, required: ['city'] },
    notes: { type: ['string', 'null'] },
  },
  required: ['id', 'name', 'role'],
};

/** SCHEMA as agents write it: allOf of it and a second part, formats, a pattern, a range, a map. */
const AGENTS_SCHEMA = {
  allOf: [
    { ...SCHEMA, properties: { ...SCHEMA.properties, email: { type: 'string', format: 'email' } } },
    {
      type: 'object',
      properties: {
        id: { type: 'integer', minimum: 1000, maximum: 99999 },
        day: { type: 'string', format: 'date' },
        code: { type: 'string', pattern: '^[A-Z]{3}-[0-9]{2}$' },
        counts: { type: 'object', propertyNames: { pattern: '^[a-z]{1,8}$' }, additionalProperties: { type: 'integer', minimum: 0 }, maxProperties: 4 },
        // Objects sharing keys: run side by side.
        shape: {
          anyOf: [
            { type: 'object', properties: { kind: { const: 'circle' }, r: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['kind', 'r'], additionalProperties: false },
            { type: 'object', properties: { kind: { const: 'square' }, side: { type: 'integer', minimum: 1, maximum: 9 }, dark: { type: 'boolean' } }, required: ['kind', 'side'], additionalProperties: false },
          ],
        },
      },
      required: ['day', 'code'],
    },
  ],
};

const WORDS = ['alpha', 'Zoë', 'café', 'naïve', 'Straße', '東京', 'line\nbreak', 'quote "q"', 'tab\there', 'emoji 🦙', 'plain words here', 'back\\slash'];
function doc(i) {
  const w = (k) => WORDS[(i * 7 + k) % WORDS.length];
  const value = {
    id: 1000 + i * 37,
    name: `${w(0)} ${w(1)}`,
    email: `user${i}@example.com`,
    score: (i * 3.14159) % 100,
    active: i % 2 === 0,
    role: ['admin', 'editor', 'viewer'][i % 3],
    tags: Array.from({ length: i % 5 }, (_, k) => w(k + 2)),
    address: { street: `${i} ${w(3)} Street`, city: w(4), zip: i % 3 ? `${10000 + i}` : null },
    notes: i % 4 ? `Some notes about ${w(5)}: ${w(6)}, ${w(7)}.` : null,
  };
  if (agents) {
    Object.assign(value, {
      day: `20${10 + (i % 20)}-0${1 + (i % 9)}-${10 + (i % 18)}`,
      code: `${String.fromCharCode(65 + (i % 26), 66 + (i % 20), 67 + (i % 11))}-${10 + (i % 90)}`,
      counts: Object.fromEntries(Array.from({ length: i % 5 }, (_, k) => [['apples', 'pears', 'kiwis', 'figs'][k], i * k])),
      shape: i % 2 ? { kind: 'circle', r: 1 + (i % 9) } : { side: 1 + (i % 9), kind: 'square', dark: i % 3 === 0 },
    });
    // Properties in an order of the document's own (the grammar takes any): the new ones first.
    const { day, code, counts, ...rest } = value;
    const ordered = i % 3 ? { code, ...rest, counts, day } : value;
    return i % 2 ? JSON.stringify(ordered) : JSON.stringify(ordered, null, 2);
  }
  return i % 2 ? JSON.stringify(value) : JSON.stringify(value, null, 2);
}

const stats = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const at = (p) => s[Math.min(s.length - 1, Math.ceil(p * s.length) - 1)];
  return { mean: s.reduce((a, b) => a + b, 0) / s.length, p50: at(0.5), p99: at(0.99), max: s[s.length - 1] };
};
const ms = (x) => x.toFixed(3);

/** Replays each document's tokens through a constraint; returns the per-token costs (ms). */
function replay(grammarFor, texts, tokenizer, stop) {
  const costs = [];
  for (const text of texts) {
    const constraint = new TokenConstraint(grammarFor(), [stop]);
    for (const token of tokenizer.encode(text)) {
      const t0 = performance.now();
      const mask = constraint.allowed();
      if (((mask[token >>> 5] >>> (token & 31)) & 1) === 0) throw new Error(`token ${token} not allowed in ${text}`);
      constraint.advance(token);
      costs.push(performance.now() - t0);
    }
    if (!constraint.complete) throw new Error('document incomplete');
  }
  return costs;
}

async function main() {
  const tokenizer = await loadTokenizer(tokenizerPath);
  const stop = tokenizer.tokenToId('<|im_end|>') ?? 0;
  const delay = monitorEventLoopDelay({ resolution: 1 });
  delay.enable();
  let t0 = performance.now();
  const index = await vocabularyIndex(tokenizer, vocab);
  const indexMs = performance.now() - t0;
  delay.disable();
  const texts = Array.from({ length: docs }, (_, i) => doc(i));
  const schema = agents ? AGENTS_SCHEMA : SCHEMA;
  // JIT warm-up on another schema (its masks are not reused below).
  replay(() => new JsonGrammar(compileJsonSchema({ type: 'array', items: schema }), index), texts.map((t) => `[${t}]`), tokenizer, stop);

  const minOver = (run) => {
    const runs = Array.from({ length: reps }, run);
    return { first: runs[0], min: runs[0].map((_, i) => Math.min(...runs.map((r) => r[i]))) };
  };
  const cold = minOver(() => replay(() => new JsonGrammar(compileJsonSchema(schema), index), texts, tokenizer, stop));
  const shared = new JsonGrammar(compileJsonSchema(schema), index);
  replay(() => shared, texts, tokenizer, stop);
  const warm = minOver(() => replay(() => shared, texts, tokenizer, stop));
  t0 = performance.now();
  const compiles = 100;
  for (let i = 0; i < compiles; i++) compileJsonSchema(schema);
  const compileMs = (performance.now() - t0) / compiles;

  console.log(`vocabulary ${vocab} tokens (${tokenizerPath}); index built once in ${indexMs.toFixed(0)} ms, the event loop held ${(delay.max / 1e6).toFixed(1)} ms at most; schema compiled in ${ms(compileMs)} ms`);
  console.log(`${agents ? 'agents schema (allOf, formats, pattern, range, map, overlapping union, any order)' : 'plain schema'}: ${docs} documents, ${cold.min.length} tokens, min of ${reps} replays per token`);
  console.log('| per token (mask + advance) | mean ms | p50 ms | p99 ms | max ms | mean ms, one replay |');
  console.log('|---|---:|---:|---:|---:|---:|');
  for (const [name, costs] of [['cold (fresh grammar per document)', cold], ['warm (masks cached per state)', warm]]) {
    const s = stats(costs.min);
    console.log(`| ${name} | ${ms(s.mean)} | ${ms(s.p50)} | ${ms(s.p99)} | ${ms(s.max)} | ${ms(stats(costs.first).mean)} |`);
  }
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
