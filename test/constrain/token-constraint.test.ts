/**
 * Token masks (lib/constrain/token-constraint.ts) against a brute-force reference (every token of
 * the vocabulary walked through the automaton on its own), on Qwen3's 151k byte-level vocabulary
 * and llama2.c's SentencePiece one; the native sampler's allowedTokens bitset; and generation with
 * a jsonSchema on a real model, judged by ajv.
 */
import Ajv from 'ajv';
import { native } from '../../lib/addon/native';
import { loadModel, type Model } from '../../lib/models/model';
import type { Tokenizer } from '../../lib/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { advanceBytes, startState, type Frame } from '../../lib/constrain/automaton';
import { compileJsonSchema, type JsonSchema } from '../../lib/constrain/json-schema';
import { JsonGrammar, TokenConstraint } from '../../lib/constrain/token-constraint';
import { vocabularyIndex } from '../../lib/constrain/vocabulary-index';
import { fixture } from '../helpers/fixtures';

const SCHEMA: JsonSchema = {
  type: 'object',
  properties: {
    name: { type: 'string' },
    count: { type: 'integer' },
    ratio: { type: 'number' },
    kind: { enum: ['cat', 'dog', 42] },
    flags: { type: 'array', items: { type: 'boolean' }, maxItems: 3 },
    note: { type: ['string', 'null'] },
  },
  required: ['name', 'count', 'kind'],
};
const DOCUMENT = '{"name": "Zoë \\"the\\" café 🦙\\u00e9", "count": -12, "ratio": 3.5e-2, "kind": 42, "flags": [true, false], "note": null}';
/** Constrained strings and numbers: patterns, formats, lengths (short ones walked, long ones on the fast path), ranges. */
const KEYWORDS: JsonSchema = {
  type: 'object',
  properties: {
    code: { type: 'string', pattern: '^[A-Z]{2}-\\d+$' },
    note: { type: 'string', maxLength: 40 },
    long: { type: 'string', maxLength: 5000 },
    tail: { type: 'string', minLength: 3 },
    day: { type: 'string', format: 'date' },
    n: { type: 'integer', minimum: -5, maximum: 300 },
    x: { type: 'number', exclusiveMinimum: 0, maximum: 2.5 },
    link: { type: 'string', pattern: '^https://' },
  },
  required: ['code', 'note', 'long', 'tail', 'day', 'n', 'x', 'link'],
};
const KEYWORDS_DOCUMENT =
  '{"code": "AB-12", "note": "Zoë \\"q\\" café 🦙 a note", "long": "a long string\\n with \\u00e9 and 日本", "tail": "x\\u00e9 and more", "day": "2024-02-29", "n": 299, "x": 2.25, "link": "https://example.com/ü?q=1"}';

function bit(mask: Uint32Array, t: number): boolean {
  return ((mask[t >>> 5] >>> (t & 31)) & 1) === 1;
}

/** The states met after each byte of `text` (byte-level, so also the states inside tokens). */
function statesAlong(schema: JsonSchema, text: string): Frame[] {
  let state = startState(compileJsonSchema(schema));
  const states = [state];
  for (const b of Buffer.from(text, 'utf8')) {
    state = advanceBytes(state, Uint8Array.of(b))!;
    expect(state).not.toBeNull();
    states.push(state);
  }
  return states;
}

/** `every`: check every n-th state along the document (the brute force walks the whole vocabulary per state). */
async function checkMasks(tokenizer: Tokenizer, vocabSize: number, schema = SCHEMA, document = DOCUMENT, every = 1): Promise<void> {
  const index = await vocabularyIndex(tokenizer, vocabSize);
  const grammar = new JsonGrammar(compileJsonSchema(schema), index);
  const bytesOf = (tokenizer as Tokenizer & { tokenBytes(id: number): Uint8Array | undefined }).tokenBytes.bind(tokenizer);
  for (const [i, state] of statesAlong(schema, document).entries()) {
    if (i % every !== 0) continue;
    const mask = grammar.mask(state);
    const wrong: number[] = [];
    for (let t = 0; t < vocabSize; t++) {
      const bytes = t < tokenizer.vocabSize && !tokenizer.isSpecial(t) ? bytesOf(t) : undefined;
      const expected = bytes !== undefined && bytes.length > 0 && advanceBytes(state, bytes) !== null;
      if (bit(mask, t) !== expected) wrong.push(t);
    }
    expect({ state: state.key, wrong: wrong.slice(0, 5) }).toEqual({ state: state.key, wrong: [] });
  }
}

describe('token masks', () => {
  it("equal a brute-force walk of every token, on Qwen3's vocabulary (ids past the tokenizer's never allowed)", async () => {
    const tokenizer = await loadTokenizer(fixture('tokenizers', 'qwen3'));
    await checkMasks(tokenizer, 151936);
  });

  it("equal a brute-force walk of every token, on llama2.c's SentencePiece vocabulary", async () => {
    const tokenizer = await loadTokenizer(fixture('llama-stories260k', 'tok512.bin'));
    await checkMasks(tokenizer, 512);
  });

  it("with patterns, formats, lengths and ranges: equal the brute-force walk on Qwen3's and llama2.c's vocabularies", async () => {
    await checkMasks(await loadTokenizer(fixture('tokenizers', 'qwen3')), 151936, KEYWORDS, KEYWORDS_DOCUMENT, 5);
    await checkMasks(await loadTokenizer(fixture('llama-stories260k', 'tok512.bin')), 512, KEYWORDS, KEYWORDS_DOCUMENT);
  }, 120_000);

  it('allow the stop tokens exactly when the text is one complete value', async () => {
    const tokenizer = await loadTokenizer(fixture('tokenizers', 'qwen3'));
    const stop = 151645;
    const constraint = new TokenConstraint(new JsonGrammar(compileJsonSchema({ type: 'integer' }), await vocabularyIndex(tokenizer, 151936)), [stop]);
    expect(bit(constraint.allowed(), stop)).toBe(false);
    expect(() => constraint.advance(stop)).toThrow(/before the JSON value is complete/);
    constraint.advance(tokenizer.encode('12')[0]);
    expect(constraint.complete).toBe(true);
    expect(bit(constraint.allowed(), stop)).toBe(true);
    expect(() => constraint.advance(tokenizer.encode('x')[0])).toThrow(/does not continue/);
  });
});

describe('the native sampler with allowedTokens', () => {
  const { Sampler } = native();
  const logits = Float32Array.from({ length: 70 }, (_, i) => Math.sin(i * 1.7) * 3);
  const bitset = (ids: number[], words = 3) => {
    const out = new Uint32Array(words);
    for (const t of ids) out[t >>> 5] |= 1 << (t & 31);
    return out;
  };

  it('bans every token outside the bitset (ids past its end too), after bias and penalties', () => {
    const allowed = [3, 31, 32, 64, 69];
    const adjusted = Sampler.adjustLogits(logits, { allowedTokens: bitset(allowed), logitBiasIds: Int32Array.of(5), logitBiasValues: Float32Array.of(100) });
    for (let t = 0; t < logits.length; t++) expect(adjusted[t]).toBe(allowed.includes(t) ? Math.fround(logits[t]) : -Infinity);
    const short = Sampler.adjustLogits(logits, { allowedTokens: bitset([3, 40], 2) });
    expect(short[3]).toBe(Math.fround(logits[3]));
    expect(short[69]).toBe(-Infinity);
  });

  it('draws only allowed tokens, greedy and sampled', () => {
    const allowed = [2, 33, 50];
    const best = allowed.reduce((a, b) => (logits[b] > logits[a] ? b : a));
    expect(new Sampler(1).sample(logits, { allowedTokens: bitset(allowed) })).toBe(best);
    const sampler = new Sampler(7);
    for (let i = 0; i < 200; i++) expect(allowed).toContain(sampler.sample(logits, { temperature: 5, topK: 0, topP: 1, allowedTokens: bitset(allowed) }));
  });

  it('rejects an allowedTokens that is not a non-empty Uint32Array', () => {
    expect(() => new Sampler(1).sample(logits, { allowedTokens: new Int32Array(3) as never })).toThrow(/Uint32Array/);
    expect(() => new Sampler(1).sample(logits, { allowedTokens: new Uint32Array(0) })).toThrow(/empty/);
  });
});

describe('generate({ jsonSchema })', () => {
  let model: Model;
  beforeAll(async () => {
    model = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'));
  });
  afterAll(() => model.dispose());

  // Bounded values (enums, integers, booleans, capped arrays): every text ends within the token limit.
  const bounded: JsonSchema = {
    type: 'object',
    properties: {
      color: { enum: ['red', 'green', 'blue'] },
      size: { type: 'integer' },
      flags: { type: 'array', items: { type: 'boolean' }, maxItems: 4 },
      extra: { type: 'null' },
    },
    required: ['color', 'size'],
  };

  it('produces text that parses and validates, greedy and sampled, through chat and plain generation', async () => {
    const validate = new Ajv().compile(bounded as object);
    const runs = [
      model.chat([{ role: 'user', content: 'Describe a ball as JSON.' }], { jsonSchema: bounded, maxTokens: 200 }),
      ...[1, 2, 3].map((seed) => model.generate('A ball:', { jsonSchema: bounded, maxTokens: 200, temperature: 1, seed })),
    ];
    for (const generation of runs) {
      const text = await generation.text();
      expect(generation.stopReason).toBe('stop-token');
      const value = JSON.parse(text);
      if (!validate(value)) throw new Error(`${text}: ${JSON.stringify(validate.errors)}`);
    }
  });

  it('raises UnsupportedError at once for a schema it cannot enforce', () => {
    expect(() => model.generate('x', { jsonSchema: { type: 'number', multipleOf: 3 } })).toThrow(/multipleOf/);
  });
});
