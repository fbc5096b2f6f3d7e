/**
 * Hostile JSON schemas against the grammar's bounds (lib/constrain/limits.ts): literal bytes, nodes
 * and depth are refused with a ConstraintError naming the bound; what fits compiles into a grammar
 * whose memory stays a small multiple of the schema's literal bytes, accepts exactly the literal set
 * (judged by JSON.stringify and ajv), and is compiled in slices that let the event loop turn.
 */
import Ajv from 'ajv';
import { ConstraintError } from '../../lib/base/errors';
import { advanceBytes, isComplete, MAX_DEPTH, startState } from '../../lib/constrain/automaton';
import { compiledJsonSchema, prepareJsonSchema } from '../../lib/constrain/compiled-schema';
import { compileJsonSchema, type JsonSchema } from '../../lib/constrain/json-schema';
import { SCHEMA_LIMITS } from '../../lib/constrain/limits';
import { MAX_ANY_ORDER_PROPERTIES } from '../../lib/constrain/json-nodes';
import { watchEventLoop } from '../helpers/event-loop';

function accepts(schema: JsonSchema, text: string): boolean {
  const end = advanceBytes(startState(compileJsonSchema(schema)), Buffer.from(text, 'utf8'));
  return end !== null && isComplete(end);
}

function boundOf(schema: JsonSchema): string | undefined {
  try {
    compileJsonSchema(schema);
  } catch (error) {
    if (error instanceof ConstraintError) return `${error.code} ${error.bound}`;
    throw error;
  }
  return undefined;
}

/** Objects nested `levels` deep, each with one required property "a", a string at the bottom. */
function nested(levels: number): { schema: JsonSchema; value: unknown } {
  let schema: JsonSchema = { type: 'string' };
  let value: unknown = 'bottom';
  for (let i = 0; i < levels; i++) {
    schema = { type: 'object', properties: { a: schema }, required: ['a'] };
    value = { a: value };
  }
  return { schema, value };
}

describe('JSON-schema bounds', () => {
  it('refuse literals past maxLiteralBytes: one 900,000-character name or enum string, 50,000 short enum strings', () => {
    const huge = 'x'.repeat(900_000);
    expect(boundOf({ type: 'object', properties: { [huge]: { type: 'string' } } })).toBe('SCHEMA_TOO_LARGE maxLiteralBytes');
    expect(boundOf({ enum: [huge] })).toBe('SCHEMA_TOO_LARGE maxLiteralBytes');
    expect(boundOf({ const: huge })).toBe('SCHEMA_TOO_LARGE maxLiteralBytes');
    expect(boundOf({ enum: Array.from({ length: 50_000 }, (_, i) => `value-${i}`) })).toBe('SCHEMA_TOO_LARGE maxLiteralBytes');
    // Counted in UTF-8 bytes, over the whole schema.
    const third = Math.floor(SCHEMA_LIMITS.maxLiteralBytes / 3);
    expect(boundOf({ enum: ['é'.repeat(third / 2 + 10)] })).toBeUndefined();
    expect(boundOf({ anyOf: [{ enum: ['é'.repeat(third)] }, { type: 'null' }] })).toBeUndefined();
    expect(boundOf({ type: 'object', properties: { a: { const: 'é'.repeat(third) }, b: { const: 'é'.repeat(third) } } })).toBe('SCHEMA_TOO_LARGE maxLiteralBytes');
  });

  it('refuse more grammar nodes than maxNodes', () => {
    const properties = (n: number) => Object.fromEntries(Array.from({ length: n }, (_, i) => [`p${i}`, { type: 'integer' }]));
    expect(boundOf({ type: 'object', properties: properties(SCHEMA_LIMITS.maxNodes) })).toBe('SCHEMA_TOO_LARGE maxNodes');
    expect(boundOf({ type: 'object', properties: properties(SCHEMA_LIMITS.maxNodes / 2) })).toBeUndefined();
    // A type list that compiles its object and array twice per level doubles the nodes per level.
    let doubling: JsonSchema = { type: 'integer' };
    for (let i = 0; i < 20; i++) doubling = { type: ['object', 'array'], properties: { a: doubling }, items: doubling };
    expect(boundOf(doubling)).toMatch(/^SCHEMA_TOO_(LARGE maxNodes|DEEP maxDepth)$/);
  });

  it(`refuse values nested deeper than MAX_DEPTH (${MAX_DEPTH}) at compile time; the deepest that fits is written to the end`, () => {
    const fits = nested(MAX_DEPTH - 1);
    expect(accepts(fits.schema, JSON.stringify(fits.value))).toBe(true);
    expect(accepts(fits.schema, JSON.stringify(fits.value, null, 1).replace(/\n */g, ' '))).toBe(true);
    expect(boundOf(nested(MAX_DEPTH).schema)).toBe('SCHEMA_TOO_DEEP maxDepth');
    // Nesting that makes no node of its own (single-alternative anyOf) counts too.
    const wrap = (levels: number) => {
      let wrapped: JsonSchema = { type: 'integer' };
      for (let i = 0; i < levels; i++) wrapped = { anyOf: [wrapped] };
      return wrapped;
    };
    expect(boundOf(wrap(MAX_DEPTH - 1))).toBeUndefined();
    expect(boundOf(wrap(100))).toBe('SCHEMA_TOO_DEEP maxDepth');
    // The document itself (walked, then written as JSON) is bounded before anything recurses: no stack overflow.
    expect(SCHEMA_LIMITS.maxNesting).toBeLessThan(2 * 200);
    expect(boundOf(nested(200).schema)).toBe('SCHEMA_TOO_DEEP maxNesting');
    expect(boundOf(wrap(100_000))).toBe('SCHEMA_TOO_DEEP maxNesting');
    let deepValue: unknown = 1;
    for (let i = 0; i < 100_000; i++) deepValue = [deepValue];
    expect(boundOf({ enum: [deepValue] })).toBe('SCHEMA_TOO_DEEP maxNesting');
    // Free-form JSON below the deepest level: whatever is open can always be closed.
    let free: JsonSchema = {};
    for (let i = 0; i < MAX_DEPTH - 3; i++) free = { type: 'array', items: free, minItems: 1 };
    const open = '['.repeat(MAX_DEPTH - 3);
    const deepest = advanceBytes(startState(compileJsonSchema(free)), Buffer.from(`${open}{"k": `));
    expect(deepest).toBeNull(); // the free object's key would commit to a value that cannot fit
    expect(accepts(free, `${open}{}${']'.repeat(MAX_DEPTH - 3)}`)).toBe(true);
    expect(accepts(free, `${open}[]${']'.repeat(MAX_DEPTH - 3)}`)).toBe(true);
    expect(accepts(free, `${open}"s"${']'.repeat(MAX_DEPTH - 3)}`)).toBe(true);
  });

  it('nested unions compile in linear time (first bytes read from each union, not recomputed per byte)', () => {
    // Each level adds an alternative with a first byte of its own.
    const alternatives: JsonSchema[] = [...Array.from({ length: 10 }, (_, i) => ({ const: i })), { const: -5 }, { type: 'null' }, { const: true }, { const: false }, { type: 'array', maxItems: 0 }];
    let schema: JsonSchema = { type: 'string' };
    for (const alternative of alternatives) schema = { anyOf: [schema, alternative] };
    const ajv = new Ajv().compile(schema as object);
    for (const value of ['s', 0, 9, -5, null, true, false, []]) {
      expect(ajv(value)).toBe(true);
      expect(accepts(schema, JSON.stringify(value))).toBe(true);
    }
    for (const text of ['10', '-4', '[1]', '{}']) expect([text, accepts(schema, text)]).toEqual([text, false]);
  });

  it('a large enum that fits: exactly its members, in memory a small multiple of its bytes', () => {
    const members = Array.from({ length: 20_000 }, (_, i) => `m-${(i * 7919) % 20_011}`);
    const literalBytes = members.reduce((n, m) => n + JSON.stringify(m).length, 0);
    const compiled = compiledJsonSchema({ enum: members });
    const root = compiled.root;
    const set = new Set(members);
    for (let i = 0; i < 20_011; i += 37) {
      const text = JSON.stringify(`m-${i}`);
      const end = advanceBytes(startState(root), Buffer.from(text));
      expect([text, end !== null && isComplete(end)]).toEqual([text, set.has(`m-${i}`)]);
    }
    expect(advanceBytes(startState(root), Buffer.from('"m-1x'))).toBeNull();
    expect(compiled.bytes).toBeLessThan(24 * literalBytes);
  });

  it('property names that share long prefixes: each property once, in any order, optional ones left out; past MAX_ANY_ORDER_PROPERTIES in declared order', () => {
    const prefix = 'k'.repeat(5000);
    const schema: JsonSchema = {
      type: 'object',
      properties: { [`${prefix}a`]: { type: 'integer' }, [`${prefix}b`]: { type: 'null' }, [prefix]: { type: 'boolean' }, '': { type: 'integer' } },
      required: [`${prefix}b`],
    };
    const validate = new Ajv().compile(schema as object);
    const good = [{ [`${prefix}a`]: 1, [`${prefix}b`]: null, [prefix]: true, '': 3 }, { [`${prefix}b`]: null }, { [`${prefix}b`]: null, '': 0 }];
    for (const value of good) {
      expect(validate(value)).toBe(true);
      expect(accepts(schema, JSON.stringify(value))).toBe(true);
    }
    expect(accepts(schema, JSON.stringify({ [`${prefix}a`]: 1 }))).toBe(false); // the required one missing
    expect(accepts(schema, JSON.stringify({ [`${prefix}b`]: null, [`${prefix}a`]: 1 }))).toBe(true); // any order
    expect(accepts(schema, `{"${prefix}b":null,"${prefix}a":1,"${prefix}a":2}`)).toBe(false); // a property twice
    // One property more than the bound: declared order (the set of written properties would be 2^17 states).
    const many: JsonSchema = { type: 'object', properties: Object.fromEntries(Array.from({ length: MAX_ANY_ORDER_PROPERTIES + 1 }, (_, i) => [`p${i}`, { type: 'null' }])) };
    expect(accepts(many, '{"p0":null,"p3":null}')).toBe(true);
    expect(accepts(many, '{"p3":null,"p0":null}')).toBe(false);
    expect(accepts(schema, JSON.stringify({ [`${prefix}b`]: null, [`${prefix}c`]: 1 }))).toBe(false); // undeclared
  });

  it('prepareJsonSchema compiles in slices (the event loop turns meanwhile), once for concurrent requests, and rejects with the bound', async () => {
    const schema: JsonSchema = {
      type: 'object',
      properties: Object.fromEntries(Array.from({ length: 2500 }, (_, i) => [`field-${i}`, { enum: Array.from({ length: 8 }, (_, j) => `v${i}-${j}`) }])),
    };
    const watch = watchEventLoop();
    const [a, b] = await Promise.all([prepareJsonSchema(schema), prepareJsonSchema(JSON.parse(JSON.stringify(schema)))]);
    const { ticks } = watch.stop();
    expect(a).toBe(b);
    expect(ticks).toBeGreaterThan(0);
    const text = JSON.stringify({ 'field-0': 'v0-3', 'field-2499': 'v2499-7' });
    const end = advanceBytes(startState(a.root), Buffer.from(text));
    expect(end !== null && isComplete(end)).toBe(true);
    await expect(prepareJsonSchema({ enum: ['x'.repeat(900_000)] })).rejects.toMatchObject({ code: 'SCHEMA_TOO_LARGE', bound: 'maxLiteralBytes' });
    await expect(prepareJsonSchema(nested(40).schema)).rejects.toMatchObject({ code: 'SCHEMA_TOO_DEEP', bound: 'maxDepth' });
  });
});
