/**
 * The JSON-schema grammar (lib/constrain) against independent judges: JSON.parse and ajv. Values
 * drawn at random from each schema, written compactly and pretty-printed, must be accepted; texts
 * that break the schema must not be; random walks through the automaton must end in texts that
 * parse and validate.
 */
import Ajv from 'ajv';
import { UnsupportedError } from '../../lib/base/errors';
import { advance, advanceBytes, canContinue, isComplete, startState, type Frame } from '../../lib/constrain/automaton';
import { compileJsonSchema, type JsonSchema } from '../../lib/constrain/json-schema';
import { mulberry32 } from '../helpers/rng';

const ajv = new Ajv({ strict: false });

const SCHEMAS: Record<string, JsonSchema> = {
  person: {
    type: 'object',
    properties: {
      name: { type: 'string' },
      age: { type: 'integer' },
      height: { type: 'number' },
      member: { type: 'boolean' },
      nickname: { type: ['string', 'null'] },
      tags: { type: 'array', items: { type: 'string' }, maxItems: 3 },
      address: { type: 'object', properties: { city: { type: 'string' }, zip: { enum: ['75001', 10115, null] } }, required: ['city'] },
    },
    required: ['name', 'age', 'address'],
    additionalProperties: false,
  },
  list: { type: 'array', items: { anyOf: [{ type: 'integer' }, { type: 'object', properties: { k: { const: 'v' } }, required: ['k'] }] }, minItems: 2, maxItems: 4 },
  anything: {},
  freeObject: { type: 'object' },
  scalar: { type: 'number' },
};

/** A random value of `schema` (the subset the grammar supports). */
function randomValue(schema: JsonSchema, rand: () => number, depth = 0): unknown {
  if (schema === true || (typeof schema === 'object' && Object.keys(schema).length === 0)) return randomAny(rand, depth);
  const s = schema as Record<string, any>;
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  if ('const' in s) return s.const;
  if (s.enum) return pick(s.enum);
  if (s.anyOf) return randomValue(pick(s.anyOf), rand, depth);
  const type = Array.isArray(s.type) ? pick(s.type) : s.type;
  switch (type) {
    case 'string':
      return pick(['', 'plain', 'with "quotes" and \\ backslash', 'tab\tnewline\n', 'café 日本 🦙', '\u0001ctl']);
    case 'integer':
      return pick([0, -7, 42, 123456789012345]);
    case 'number':
      return pick([0, -0.5, 3.25, 1e21, -1.5e-7, 12]);
    case 'boolean':
      return rand() < 0.5;
    case 'null':
      return null;
    case 'array': {
      const min = s.minItems ?? 0;
      const max = s.maxItems ?? min + 3;
      const n = min + Math.floor(rand() * (max - min + 1));
      return Array.from({ length: n }, () => randomValue(s.items ?? {}, rand, depth + 1));
    }
    case 'object': {
      if (!s.properties) return randomAny(rand, 3, 'object');
      const out: Record<string, unknown> = {};
      for (const [k, sub] of Object.entries(s.properties)) if ((s.required ?? []).includes(k) || rand() < 0.5) out[k] = randomValue(sub as JsonSchema, rand, depth + 1);
      return out;
    }
  }
  throw new Error(`no generator for ${JSON.stringify(schema)}`);
}

function randomAny(rand: () => number, depth: number, kind?: string): unknown {
  const k = kind ?? (depth > 2 ? ['string', 'number', 'bool', 'null'] : ['string', 'number', 'bool', 'null', 'object', 'array'])[Math.floor(rand() * (depth > 2 ? 4 : 6))];
  if (k === 'string') return ['x', 'ü "q"', ''][Math.floor(rand() * 3)];
  if (k === 'number') return [1, -2.5, 0, 7e-3][Math.floor(rand() * 4)];
  if (k === 'bool') return rand() < 0.5;
  if (k === 'null') return null;
  if (k === 'array') return Array.from({ length: Math.floor(rand() * 3) }, () => randomAny(rand, depth + 1));
  const out: Record<string, unknown> = {};
  for (let i = Math.floor(rand() * 3); i > 0; i--) out[`k${i}`] = randomAny(rand, depth + 1);
  return out;
}

function run(schema: JsonSchema, text: string): Frame | null {
  return advanceBytes(startState(compileJsonSchema(schema)), Buffer.from(text, 'utf8'));
}

const accepts = (schema: JsonSchema, text: string) => {
  const end = run(schema, text);
  return end !== null && isComplete(end);
};

describe('JSON-schema grammar', () => {
  it.each(Object.keys(SCHEMAS))('accepts random valid values of %s, compact and pretty-printed', (name) => {
    const schema = SCHEMAS[name];
    const validate = ajv.compile(schema as object);
    const rand = mulberry32(name.length * 7919);
    for (let i = 0; i < 60; i++) {
      const value = randomValue(schema, rand);
      expect(validate(value)).toBe(true); // the generator itself is right
      for (const text of [JSON.stringify(value), JSON.stringify(value, null, 2)]) {
        if (!accepts(schema, text)) throw new Error(`${name}: rejected ${text}`);
      }
    }
  });

  it('rejects texts that break the schema', () => {
    const person = SCHEMAS.person;
    const bad = [
      '{"name": "x", "age": 3, "name": "y", "address": {"city": "p"}}', // a property twice
      '{"name": "x", "address": {"city": "p"}}', // age missing
      '{"name": "x", "age": 3.5, "address": {"city": "p"}}', // not an integer
      '{"name": "x", "age": 3, "address": {"city": "p"}, "extra": 1}', // undeclared
      '{"name": "x", "age": 3, "address": {"city": "p", "zip": "10115"}}', // not in the enum
      '{"name": "x", "age": 3, "tags": ["a", "b", "c", "d"], "address": {"city": "p"}}', // maxItems
      '{"name": "x\u0001", "age": 3, "address": {"city": "p"}}', // raw control character
      '{"name": "x", "age": 03, "address": {"city": "p"}}', // leading zero
      '{"name": "x", "age": 3, "address": {"city": "p"}} ', // trailing bytes
      '{"name": "\\q", "age": 3, "address": {"city": "p"}}', // bad escape
    ];
    for (const text of bad) expect([text, accepts(person, text)]).toEqual([text, false]);
    // Properties in any order the model chooses (an object of at most MAX_ANY_ORDER_PROPERTIES).
    expect(accepts(person, '{"address": {"city": "p"}, "age": 3, "name": "x"}')).toBe(true);
    expect(accepts(SCHEMAS.list, '[1]')).toBe(false); // minItems
    expect(accepts(SCHEMAS.list, '[1, {"k": "w"}]')).toBe(false); // const
    expect(accepts(SCHEMAS.scalar, '1e999')).toBe(false); // exponent digits bounded: numbers stay finite
    // Incomplete texts are prefixes, not complete values.
    const prefix = run(person, '{"name": "x", "age": 3');
    expect(prefix).not.toBeNull();
    expect(isComplete(prefix!)).toBe(false);
    // Invalid UTF-8 inside a string.
    expect(advanceBytes(startState(compileJsonSchema({ type: 'string' })), Uint8Array.of(0x22, 0xc3, 0x28))).toBeNull();
  });

  it.each(Object.keys(SCHEMAS))('random walks over %s end in text that parses and validates', (name) => {
    const schema = SCHEMAS[name];
    const validate = ajv.compile(schema as object);
    const root = compileJsonSchema(schema);
    const rand = mulberry32(1234 + name.length);
    for (let walk = 0; walk < 40; walk++) {
      let state = startState(root);
      const bytes: number[] = [];
      // Walk random allowed bytes, stopping at a complete value at some point (or when nothing can follow).
      while (!(isComplete(state) && (rand() < 0.3 || !canContinue(state)))) {
        const options: number[] = [];
        for (let b = 0; b < 256; b++) if (advance(state, b) !== null) options.push(b);
        expect(options.length).toBeGreaterThan(0); // never a dead end
        // Prefer structure over long strings and whitespace, so walks end.
        const closing = options.filter((b) => b === 0x22 || b === 0x7d || b === 0x5d);
        const b = closing.length && rand() < 0.5 ? closing[Math.floor(rand() * closing.length)] : options[Math.floor(rand() * options.length)];
        state = advance(state, b)!;
        bytes.push(b);
        if (bytes.length > 4000) throw new Error(`${name}: walk did not end: ${Buffer.from(bytes).toString('latin1').slice(0, 200)}`);
      }
      const text = Buffer.from(bytes).toString('utf8');
      expect(Buffer.from(text, 'utf8').equals(Buffer.from(bytes))).toBe(true); // well-formed UTF-8
      const value = JSON.parse(text);
      if (!validate(value)) throw new Error(`${name}: ${text} does not validate: ${ajv.errorsText(validate.errors)}`);
    }
  });

  it('raises UnsupportedError for what it cannot enforce, naming the keyword', () => {
    const cases: [JsonSchema, RegExp][] = [
      [{ type: 'string', pattern: '^(?=a)' }, /\.pattern: lookahead/],
      [{ type: 'string', pattern: '(a)\\1' }, /backreference/],
      [{ type: 'object', properties: { n: { type: 'integer', multipleOf: 2 } } }, /properties\["n"\]\.multipleOf/],
      [{ $ref: 'https://example.com/s.json' }, /\$ref .* points outside/],
      [{ $ref: '#/$defs/missing' }, /points to nothing/],
      [{ type: 'string', format: 'hostname' }, /format "hostname" is not supported/],
      [{ type: 'array', items: [{ type: 'string' }] }, /tuple/],
      [{ type: 'object', properties: { a: {} }, required: ['b'] }, /required property "b"/],
      [{ type: 'object', properties: { a: {} }, additionalProperties: { type: 'string' } }, /additionalProperties: a schema for undeclared properties beside/],
      [{ type: 'object', properties: { a: { $ref: '#' } }, required: ['a'] }, /admits no value/],
      [false, /admits no value/],
    ];
    for (const [schema, message] of cases) {
      expect(() => compileJsonSchema(schema)).toThrow(UnsupportedError);
      expect(() => compileJsonSchema(schema)).toThrow(message);
    }
  });
});
