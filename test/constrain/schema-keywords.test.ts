/**
 * The schema keywords agents send ($ref, pattern, format, lengths, numeric bounds, merged unions,
 * nullable, what Zod emits) against independent judges: the regex automaton against JavaScript's
 * own RegExp (every string over a small alphabet), texts the grammar accepts against ajv with
 * ajv-formats (exhaustive enumerations, random walks through the automaton) and Zod's own parser,
 * and valid values (hand-written and generated: every day of several years, random UUIDs, every
 * integer in a window) against the grammar. Budgets: state explosions are a ConstraintError.
 */
import { randomUUID } from 'node:crypto';
import Ajv from 'ajv';
import Ajv2020 from 'ajv/dist/2020';
import addFormats from 'ajv-formats';
import { z } from 'zod';
import { advance, advanceBytes, isComplete, MAX_DEPTH, startState, type GrammarNode } from '../../lib/constrain/automaton';
import { PatternBudget, regexDfa } from '../../lib/constrain/char-dfa';
import { compileJsonSchema, type JsonSchema } from '../../lib/constrain/json-schema';
import { SCHEMA_LIMITS } from '../../lib/constrain/limits';
import { parseRegex } from '../../lib/constrain/regex-parse';
import { toEnd } from '../../lib/constrain/slices';
import { ConstraintError, UnsupportedError } from '../../lib/base/errors';
import { mulberry32 } from '../helpers/rng';

const ajv = addFormats(new Ajv({ strict: false, allowUnionTypes: true }));
const ajv2020 = addFormats(new Ajv2020({ strict: false, allowUnionTypes: true }));
const validatorOf = (schema: JsonSchema) => {
  const s = schema as Record<string, unknown>;
  return (typeof s.$schema === 'string' && s.$schema.includes('2020') ? ajv2020 : ajv).compile(schema as object);
};

function accepts(root: GrammarNode, text: string | Uint8Array): boolean {
  const end = advanceBytes(startState(root), typeof text === 'string' ? Buffer.from(text, 'utf8') : text);
  return end !== null && isComplete(end);
}

/** A random walk of allowed bytes to a complete value (never a dead end); prefers ASCII and closing bytes so walks end. */
function walk(root: GrammarNode, rand: () => number, maxBytes = 3000): string {
  let state = startState(root);
  const bytes: number[] = [];
  for (;;) {
    const options: number[] = [];
    for (let b = 0; b < 256; b++) if (advance(state, b) !== null) options.push(b);
    const complete = isComplete(state);
    if (options.length === 0) {
      if (!complete) throw new Error(`dead end after ${Buffer.from(bytes).toString('latin1')}`);
      break;
    }
    if (complete && rand() < 0.3) break;
    if (bytes.length > maxBytes) throw new Error(`walk did not end: ${Buffer.from(bytes).toString('latin1').slice(0, 200)}`);
    const closing = options.filter((b) => b === 0x22 || b === 0x7d || b === 0x5d);
    const ascii = options.filter((b) => b < 0x80 && b !== 0x5c);
    const r = rand();
    const pool = closing.length && r < 0.25 ? closing : ascii.length && r < 0.9 ? ascii : options;
    const b = pool[Math.floor(rand() * pool.length)];
    state = advance(state, b)!;
    bytes.push(b);
  }
  const text = Buffer.from(bytes).toString('utf8');
  expect(Buffer.from(text, 'utf8').equals(Buffer.from(bytes))).toBe(true); // well-formed UTF-8
  return text;
}

/** Random walks over `schema` that must all parse and validate (and pass `judge` when given). */
function walksValidate(schema: JsonSchema, walks: number, seed: number, judge?: (value: unknown) => boolean): string[] {
  const root = compileJsonSchema(schema);
  const validate = validatorOf(schema);
  const rand = mulberry32(seed);
  const texts: string[] = [];
  for (let i = 0; i < walks; i++) {
    const text = walk(root, rand);
    const value = JSON.parse(text);
    if (!validate(value)) throw new Error(`${JSON.stringify(schema).slice(0, 80)}: ${text} does not validate: ${ajv.errorsText(validate.errors)}`);
    if (judge && !judge(value)) throw new Error(`${text}: the second judge refuses it`);
    texts.push(text);
  }
  return texts;
}

/** Every string over `alphabet` of at most `length` characters. */
function* strings(alphabet: readonly string[], length: number): Generator<string> {
  yield '';
  let level = [''];
  for (let n = 1; n <= length; n++) {
    const next: string[] = [];
    for (const prefix of level) for (const c of alphabet) next.push(prefix + c);
    yield* next;
    level = next;
  }
}

/** The texts of a string value: JSON.stringify's, and one with every character of the BMP escaped as \uXXXX. */
function textsOf(value: string): string[] {
  const escaped = [...value].map((c) => (c.codePointAt(0)! <= 0xffff ? `\\u${c.codePointAt(0)!.toString(16).padStart(4, '0')}` : c)).join('');
  return [JSON.stringify(value), `"${escaped}"`];
}

describe('the regex subset', () => {
  const alphabet = ['a', 'b', 'c', 'x', 'z', '0', '7', '_', ' ', '.', '-', '\n', 'é', '🦙'];
  const patterns = [
    '^[a-z0-9_]+$', '^a|b$', 'ab', '^(ab|a)*c?$', '^\\d{2,3}$', '^[^a]b.$', '^(?:x|zb){1,3}$', '^a{2}b{0,2}$', '^\\w\\s\\W$',
    '^(?<n>a)+$', '[.]', '^\\.+$', '^a*?b+?$', '^$', '^[\\-a]$', '^[a-c-]+$', '^\\D\\S$', 'c$', '^.{2}$', '^[^\\d\\s]*$',
    '^(a|b|)(c|)$', '^\\u00e9|\\u{1F999}$', '^\\x61+$', '^[\\w.-]+$', '(?:)', '^z{0}a$', '^(?:a{1,2}){2}$',
  ];
  it.each(patterns)('%s: the automaton accepts exactly what RegExp(…, "u") matches, over every short string', (pattern) => {
    const dfa = toEnd(regexDfa(parseRegex(pattern, 'p'), new PatternBudget(SCHEMA_LIMITS.maxPatternStates), 'p'));
    const reference = new RegExp(pattern, 'u');
    const wrong: string[] = [];
    for (const s of strings(alphabet, 4)) {
      let state = dfa.start;
      for (const ch of s) if (state >= 0) state = dfa.step(state, ch.codePointAt(0)!);
      const matched = state >= 0 && dfa.accepting[state] === 1;
      if (matched !== reference.test(s)) wrong.push(JSON.stringify(s));
    }
    expect(wrong.slice(0, 5)).toEqual([]);
  });

  it('automata are minimal: the classic n-th-from-last pattern has 2^(n+1) states, and a matched prefix leaves one looping state', () => {
    const states = (pattern: string) => toEnd(regexDfa(parseRegex(pattern, 'p'), new PatternBudget(SCHEMA_LIMITS.maxPatternStates), 'p')).states;
    for (const n of [1, 3, 6]) expect(states(`^(a|b)*a(a|b){${n}}$`)).toBe(2 ** (n + 1));
    expect(states('^[a-z]+$')).toBe(2);
    expect(states('^https://')).toBe(9); // 8 prefix states and the accepting one every code point keeps
    // There the mask takes its fast path, as for a plain string.
    const root = compileJsonSchema({ type: 'string', pattern: '^https://' });
    const after = advanceBytes(startState(root), Buffer.from('"https://'))!;
    expect(after.node.isStringContent!(after.sub, 64)).toBe(true);
    const before = advanceBytes(startState(root), Buffer.from('"https:/'))!;
    expect(before.node.isStringContent!(before.sub, 64)).toBe(false);
  });

  it('names what is outside the subset', () => {
    const cases: [string, RegExp][] = [
      ['(?=a)b', /lookahead/], ['(?<=a)b', /lookbehind/], ['(a)\\1', /backreference/], ['\\bword', /word boundary/], ['\\p{L}', /property escape/],
      ['a^b', /anchor \(\^\)/], ['(a$)', /anchor \(\$\) inside a group/], ['a$b', /anchor \(\$\) inside the pattern/], ['(a', /unclosed group/], ['[a', /unclosed \[/],
      ['*a', /quantifier/], ['a{2,1}', /below m/], [`a{${200_000}}`, /repetition count/], ['a++', /possessive or doubled/], ['\\k<n>', /named backreference/],
    ];
    for (const [pattern, message] of cases) {
      expect(() => compileJsonSchema({ type: 'string', pattern })).toThrow(UnsupportedError);
      expect(() => compileJsonSchema({ type: 'string', pattern })).toThrow(message);
    }
  });
});

describe('strings: pattern, format, lengths', () => {
  it('minLength / maxLength count code points (as ajv does), in raw and escaped texts alike', () => {
    const schema: JsonSchema = { type: 'string', minLength: 2, maxLength: 4 };
    const root = compileJsonSchema(schema);
    const validate = validatorOf(schema);
    for (const s of strings(['a', 'é', '🦙', '"', '\n', '日'], 5)) {
      for (const text of textsOf(s)) expect([text, accepts(root, text)]).toEqual([text, validate(s)]);
    }
    walksValidate(schema, 60, 1);
    walksValidate({ type: 'string', maxLength: 0 }, 5, 2);
    walksValidate({ type: 'string', minLength: 40 }, 10, 3);
  });

  it('a pattern with lengths: exactly the strings both allow', () => {
    const schema: JsonSchema = { type: 'string', pattern: '^(ab|c)*$', minLength: 3, maxLength: 5 };
    const root = compileJsonSchema(schema);
    const validate = validatorOf(schema);
    for (const s of strings(['a', 'b', 'c', 'd'], 7)) expect([s, accepts(root, JSON.stringify(s))]).toEqual([s, validate(s)]);
    walksValidate(schema, 40, 4);
    // Lengths the pattern cannot meet: no value at all.
    expect(() => compileJsonSchema({ type: 'string', pattern: '^(ab)+$', minLength: 3, maxLength: 3 })).toThrow(/admits no value/);
  });

  it('date: every day of 1999-2001, 2024 and 2100 accepted; 29 February only in leap years; nothing ajv-formats refuses', () => {
    const root = compileJsonSchema({ type: 'string', format: 'date' });
    const validate = validatorOf({ type: 'string', format: 'date' });
    for (const year of [1999, 2000, 2001, 2024, 2100]) {
      for (let d = Date.UTC(year, 0, 1); d < Date.UTC(year + 1, 0, 1); d += 86_400_000) {
        const text = JSON.stringify(new Date(d).toISOString().slice(0, 10));
        expect([text, accepts(root, text)]).toEqual([text, true]);
      }
    }
    for (const bad of ['2023-02-29', '2100-02-29', '1900-02-29', '2024-13-01', '2024-00-10', '2024-04-31', '2024-1-01', '02024-01-01', '2024-01-01T']) {
      expect([bad, accepts(root, JSON.stringify(bad)), validate(bad)]).toEqual([bad, false, false]);
    }
    expect(accepts(root, '"2000-02-29"') && accepts(root, '"2400-02-29"') && accepts(root, '"0000-02-29"')).toBe(true);
    walksValidate({ type: 'string', format: 'date' }, 60, 5);
  });

  it('time and date-time: generated instants accepted, walks validate', () => {
    const time = compileJsonSchema({ type: 'string', format: 'time' });
    const dateTime = compileJsonSchema({ type: 'string', format: 'date-time' });
    const rand = mulberry32(6);
    for (let i = 0; i < 300; i++) {
      const iso = new Date(Math.floor(rand() * 8e12) - 1e12).toISOString(); // 1938..2223
      expect([iso, accepts(dateTime, JSON.stringify(iso))]).toEqual([iso, true]);
      expect(accepts(time, JSON.stringify(iso.slice(11)))).toBe(true);
      expect(accepts(time, JSON.stringify(`${iso.slice(11, 19)}+05:30`))).toBe(true);
    }
    for (const bad of ['24:00:00Z', '12:60:00Z', '12:00:00', '12:00:00+24:00', '1:00:00Z']) expect([bad, accepts(time, JSON.stringify(bad))]).toEqual([bad, false]);
    walksValidate({ type: 'string', format: 'time' }, 40, 7);
    walksValidate({ type: 'string', format: 'date-time' }, 40, 8);
  });

  it('uuid, email, ipv4, uri: generated and hand-written values accepted, every IPv4 octet judged as ajv-formats does, walks validate', () => {
    const uuid = compileJsonSchema({ type: 'string', format: 'uuid' });
    for (let i = 0; i < 200; i++) {
      const u = randomUUID();
      expect(accepts(uuid, JSON.stringify(u)) && accepts(uuid, JSON.stringify(u.toUpperCase()))).toBe(true);
    }
    expect(accepts(uuid, '"123e4567-e89b-12d3-a456-42661417400"')).toBe(false);
    const email = compileJsonSchema({ type: 'string', format: 'email' });
    for (const e of ['a@b.co', 'first.last+tag@sub.example.org', 'x_y-z%1@a-b.c-d.museum', 'USER@EXAMPLE.COM']) expect([e, accepts(email, JSON.stringify(e))]).toEqual([e, true]);
    for (const e of ['.a@b.co', 'a..b@c.de', 'a@b', 'a@-b.co', 'a@b.c', 'a b@c.de', '@b.co']) expect([e, accepts(email, JSON.stringify(e))]).toEqual([e, false]);
    const ipv4 = compileJsonSchema({ type: 'string', format: 'ipv4' });
    const validate = validatorOf({ type: 'string', format: 'ipv4' });
    for (let octet = 0; octet <= 300; octet++) {
      for (const text of [`${octet}.0.10.255`, `1.2.3.${octet}`, `0${octet}.1.1.1`]) expect([text, accepts(ipv4, JSON.stringify(text))]).toEqual([text, validate(text)]);
    }
    const uri = compileJsonSchema({ type: 'string', format: 'uri' });
    for (const u of ['https://example.com', 'http://a.b-c.org:8080/p/a%20th?q=1&r=%C3%A9#frag', 'https://x.io/', 'https://EXAMPLE.COM/A']) expect([u, accepts(uri, JSON.stringify(u))]).toEqual([u, true]);
    for (const u of ['example.com', 'ftp://x.org', 'https://a b.com', 'https://x.org/%zz', 'https://-x.org']) expect([u, accepts(uri, JSON.stringify(u))]).toEqual([u, false]);
    for (const format of ['uuid', 'email', 'ipv4', 'uri']) walksValidate({ type: 'string', format }, 40, format.length);
    const url = z.url();
    walksValidate(z.toJSONSchema(z.object({ url })) as JsonSchema, 20, 99, (v) => z.object({ url }).safeParse(v).success);
  });

  it("Zod's string schemas (format and pattern together): walks pass ajv and Zod's own parser", () => {
    const shape = z.object({ email: z.email(), id: z.uuid(), day: z.iso.date(), at: z.iso.datetime(), ip: z.ipv4(), code: z.string().regex(/^[A-Z]{3}-\d{2,4}$/), name: z.string().min(2).max(8) });
    const schema = z.toJSONSchema(shape) as JsonSchema;
    walksValidate(schema, 25, 9, (v) => shape.safeParse(v).success);
    const value = { email: 'ann@example.com', id: randomUUID(), day: '2024-02-29', at: '2024-02-29T12:34:56.789Z', ip: '10.0.0.1', code: 'ABC-123', name: 'Ann' };
    expect(shape.safeParse(value).success).toBe(true);
    expect(accepts(compileJsonSchema(schema), JSON.stringify(value))).toBe(true);
    expect(accepts(compileJsonSchema(schema), JSON.stringify(value, null, 2))).toBe(true);
  });
});

describe('numbers: minimum, maximum, exclusive bounds', () => {
  const bounds: Record<string, unknown>[] = [
    { minimum: 1, maximum: 10 }, { minimum: -5, exclusiveMaximum: 0 }, { exclusiveMinimum: 0 }, { minimum: 0 }, { maximum: -3 }, { minimum: 1.5, maximum: 7.25 },
    { exclusiveMinimum: -2.5, exclusiveMaximum: 2.5 }, { minimum: 0, maximum: 0 }, { minimum: 100, exclusiveMinimum: 100 }, { maximum: 0.30000000000000004 }, { minimum: -1e3, maximum: 1e21 },
  ];
  it.each(bounds.map((b) => [JSON.stringify(b), b] as const))('integer %s: every integer in [-120, 120] judged as ajv does; walks validate', (_, b) => {
    const schema: JsonSchema = { type: 'integer', ...b };
    const root = compileJsonSchema(schema);
    const validate = validatorOf(schema);
    for (let n = -120; n <= 120; n++) expect([n, accepts(root, String(n))]).toEqual([n, validate(n)]);
    expect(accepts(root, '-0')).toBe(validate(-0));
    expect(accepts(root, '1.0')).toBe(false);
    walksValidate(schema, 30, 10);
  });

  it.each(bounds.map((b) => [JSON.stringify(b), b] as const))('number %s: a grid of decimals judged as ajv does; walks validate', (_, b) => {
    const schema: JsonSchema = { type: 'number', ...b };
    const root = compileJsonSchema(schema);
    const validate = validatorOf(schema);
    const values = [...Array.from({ length: 161 }, (_, i) => (i - 80) / 8), 0.3, 0.30000000000000004, 0.1, 1e-7 * 3, 123456.789, -0.001, 99.99, 100, 100.5];
    for (const x of values) {
      const text = x.toFixed(Math.min(15, Math.max(0, -Math.floor(Math.log10(Math.abs(x) || 1)) + 14))).replace(/\.?0+$/, '') || '0';
      expect([text, accepts(root, text)]).toEqual([text, validate(JSON.parse(text))]);
    }
    walksValidate(schema, 30, 11);
  });

  it('a range no value is in admits none; exponents are not written for bounded numbers', () => {
    expect(() => compileJsonSchema({ type: 'integer', minimum: 1.2, maximum: 1.8 })).toThrow(/admits no value/);
    expect(() => compileJsonSchema({ type: 'number', minimum: 5, maximum: 4 })).toThrow(/admits no value/);
    expect(accepts(compileJsonSchema({ type: 'number', minimum: 0 }), '1e5')).toBe(false);
    expect(() => compileJsonSchema({ type: 'integer', exclusiveMinimum: true } as JsonSchema)).toThrow(/finite number/);
  });
});

describe('$ref, unions, nullable, enum beside other keywords', () => {
  const tree: JsonSchema = {
    $defs: { node: { type: 'object', properties: { name: { type: 'string', maxLength: 8 }, children: { type: 'array', items: { $ref: '#/$defs/node' } } }, required: ['name'] } },
    $ref: '#/$defs/node',
  };

  it('recursive references: values nested to the depth bound accepted, deeper ones not; walks validate', () => {
    const root = compileJsonSchema(tree);
    const nest = (levels: number): unknown => (levels === 0 ? { name: 'leaf' } : { name: 'n', children: [nest(levels - 1), { name: 'x', children: [] }] });
    // A value is written exactly when it nests at most MAX_DEPTH levels (each object, array and scalar one).
    const depthOf = (v: unknown): number => (typeof v === 'object' && v !== null ? 1 + Math.max(0, ...Object.values(v).map(depthOf)) : 1);
    for (let levels = 0; levels <= 18; levels++) {
      const value = nest(levels);
      expect([levels, accepts(root, JSON.stringify(value))]).toEqual([levels, depthOf(value) <= MAX_DEPTH]);
    }
    expect(depthOf(nest(15))).toBe(MAX_DEPTH);
    walksValidate(tree, 40, 12);
    // definitions (draft 7), the root (#), and Zod's recursive schema.
    walksValidate({ definitions: { list: { anyOf: [{ type: 'null' }, { type: 'object', properties: { head: { type: 'integer' }, tail: { $ref: '#/definitions/list' } }, required: ['head', 'tail'] }] } }, $ref: '#/definitions/list' }, 30, 13);
    const Category: z.ZodType<{ name: string; sub: unknown[] }> = z.object({ name: z.string(), get sub() { return z.array(Category); } });
    const zodSchema = z.toJSONSchema(Category) as JsonSchema;
    walksValidate(zodSchema, 30, 14, (v) => Category.safeParse(v).success);
  });

  it('refuses references that never nest a value and required recursion no value ends', () => {
    expect(() => compileJsonSchema({ $defs: { a: { $ref: '#/$defs/b' }, b: { $ref: '#/$defs/a' } }, $ref: '#/$defs/a' })).toThrow(/refers back to itself/);
    expect(() => compileJsonSchema({ type: 'object', properties: { self: { $ref: '#' } }, required: ['self'] })).toThrow(/admits no value/);
    expect(() => compileJsonSchema({ $ref: '#/$defs/x', type: 'string', $defs: { x: {} } })).toThrow(/type beside \$ref/);
  });

  it('unions that merge: literals, a plain string or number with what it holds, patterns and literals in one alternation', () => {
    const cases: [JsonSchema, string[], string[]][] = [
      [{ anyOf: [{ const: 'a' }, { const: 'b' }, { type: 'string', const: 'c' }] }, ['"a"', '"b"', '"c"'], ['"d"']],
      [{ anyOf: [{ type: 'string', format: 'email' }, { const: '' }] }, ['""', '"a@b.co"'], ['"a@b"', '" "']],
      [{ oneOf: [{ type: 'string', format: 'date' }, { type: 'string', format: 'date-time' }] }, ['"2024-01-31"', '"2024-01-31T10:00:00Z"'], ['"2024-01-32"']],
      [{ anyOf: [{ type: 'string' }, { type: 'string', pattern: '^a' }, { const: 'x' }] }, ['""', '"zz"'], ['1']],
      [{ anyOf: [{ type: 'integer', minimum: 3 }, { type: 'number' }, { const: 2 }] }, ['-1.5', '7'], ['"7"']],
      [{ type: ['string', 'null'], maxLength: 2 }, ['null', '"ab"'], ['"abc"']],
      [{ type: 'integer', nullable: true, maximum: 3 }, ['null', '3'], ['4']],
      [{ type: 'string', enum: ['a', 1, 'bcd'], maxLength: 2 }, ['"a"'], ['1', '"bcd"']],
      [{ type: 'number', const: 3 }, ['3'], ['3.5']],
    ];
    for (const [schema, good, bad] of cases) {
      const root = compileJsonSchema(schema);
      const validate = validatorOf(schema);
      for (const text of [...good, ...bad]) expect([JSON.stringify(schema), text, accepts(root, text)]).toEqual([JSON.stringify(schema), text, validate(JSON.parse(text))]);
      walksValidate(schema, 10, 15);
    }
  });

  it("a whole Zod object as the AI SDK sends it ($schema, additionalProperties false, optional, nullable, enum, literal, arrays)", () => {
    const shape = z.object({
      city: z.string().min(1).max(40).describe('the city'),
      days: z.number().int().min(1).max(14),
      units: z.enum(['metric', 'imperial']).optional(),
      when: z.iso.date().nullable(),
      tags: z.array(z.string().max(10)).min(1).max(3),
      version: z.literal(2),
      ratio: z.number().positive().max(1).optional(),
    });
    const schema = z.toJSONSchema(shape) as JsonSchema;
    walksValidate(schema, 40, 16, (v) => shape.safeParse(v).success);
    const value = { city: 'Paris', days: 3, when: null, tags: ['a'], version: 2, ratio: 0.5 };
    expect(accepts(compileJsonSchema(schema), JSON.stringify(value))).toBe(true);
  });
});

describe('allOf, maps (additionalProperties with a schema), and the keywords refused by name', () => {
  /** Each text accepted exactly when ajv validates it; walks validate. */
  const judged = (schema: JsonSchema, texts: string[], walks: number, seed: number) => {
    const root = compileJsonSchema(schema);
    const validate = validatorOf(schema);
    for (const text of texts) expect([text, accepts(root, text)]).toEqual([text, validate(JSON.parse(text))]);
    walksValidate(schema, walks, seed);
  };

  it('properties in any order the model chooses: every order of every subset that holds the required ones, each property once', () => {
    const schema: JsonSchema = { type: 'object', properties: { a: { type: 'null' }, b: { type: 'null' }, c: { type: 'null' }, d: { type: 'null' } }, required: ['c'], additionalProperties: false };
    const orders = (names: string[]): string[][] => (names.length === 0 ? [[]] : names.flatMap((n) => orders(names.filter((m) => m !== n)).map((rest) => [n, ...rest])));
    const subsets = (names: string[]): string[][] => names.reduce<string[][]>((all, n) => [...all, ...all.map((s) => [...s, n])], [[]]);
    const texts = subsets(['a', 'b', 'c', 'd']).flatMap(orders).map((keys) => `{${keys.map((k) => `"${k}":null`).join(',')}}`);
    expect(texts).toHaveLength(65);
    judged(schema, [...texts, '{"c":null,"e":null}'], 30, 30);
    // A key twice (JSON.parse would hide it from ajv): never.
    for (const twice of ['{"c":null,"c":null}', '{"a":null,"c":null,"a":null}']) expect(accepts(compileJsonSchema(schema), twice)).toBe(false);
    expect(texts.filter((t) => accepts(compileJsonSchema(schema), t))).toHaveLength(texts.filter((t) => t.includes('"c"')).length);
  });

  it('unions whose alternatives start alike run side by side: objects sharing keys, a discriminated union, strings of different lengths', () => {
    const shape: JsonSchema = {
      anyOf: [
        { type: 'object', properties: { kind: { const: 'circle' }, r: { type: 'integer', minimum: 1, maximum: 9 } }, required: ['kind', 'r'], additionalProperties: false },
        { type: 'object', properties: { kind: { const: 'square' }, side: { type: 'integer', minimum: 1, maximum: 9 }, r: { type: 'boolean' } }, required: ['kind', 'side'], additionalProperties: false },
      ],
    };
    judged(shape, ['{"kind":"circle","r":3}', '{"r":3,"kind":"circle"}', '{"kind":"square","side":2}', '{"kind":"square","side":2,"r":true}', '{"kind":"circle","side":2}', '{"kind":"square","r":3}', '{"kind":"circle","r":true}', '{}'], 40, 40);
    const sharing: JsonSchema = {
      oneOf: [
        { type: 'object', properties: { a: { type: 'string', maxLength: 3 } }, required: ['a'], additionalProperties: false },
        { type: 'object', properties: { a: { type: 'string', pattern: '^x+$' }, b: { type: 'integer' } }, required: ['a', 'b'], additionalProperties: false },
      ],
    };
    judged(sharing, ['{"a":"abc"}', '{"a":"abcd"}', '{"a":"xxxxx","b":1}', '{"a":"abcd","b":1}', '{"a":"x","b":1}', '{"b":1}'], 40, 41);
    judged({ anyOf: [{ type: 'string', maxLength: 2 }, { type: 'string', pattern: '^a+$' }] }, ['""', '"zz"', '"zzz"', '"aaaa"', '"aab"'], 20, 42);
    // Zod's discriminated union, judged by Zod too.
    const event = z.discriminatedUnion('type', [z.object({ type: z.literal('click'), x: z.number().int(), y: z.number().int() }), z.object({ type: z.literal('key'), key: z.string().max(4) })]);
    walksValidate(z.toJSONSchema(event) as JsonSchema, 40, 43, (v) => event.safeParse(v).success);
  });

  it('allOf of objects merges: properties and required joined, a shared property the allOf of both, bounds tightened', () => {
    const schema: JsonSchema = {
      allOf: [
        { type: 'object', properties: { a: { type: 'integer', minimum: 0 } }, required: ['a'] },
        { type: 'object', properties: { b: { enum: ['x', 'y', 1] }, a: { maximum: 5 } }, required: ['b'] },
        { properties: { b: { type: 'string' } } },
      ],
    };
    judged(schema, ['{"a":3,"b":"x"}', '{"a":0,"b":"y"}', '{"a":6,"b":"x"}', '{"a":-1,"b":"x"}', '{"b":"x"}', '{"a":1}', '{"a":1,"b":1}'], 40, 31);
  });

  it('allOf through $ref, of numbers and enums, and a part closed by additionalProperties false', () => {
    const numbers: JsonSchema = { $defs: { positive: { type: 'integer', minimum: 1 } }, allOf: [{ $ref: '#/$defs/positive' }, { type: 'number', exclusiveMaximum: 4 }] };
    judged(numbers, Array.from({ length: 12 }, (_, i) => String(i - 4)), 20, 32);
    judged({ allOf: [{ enum: ['a', 'b', 'c', 1] }, { type: 'string' }, { enum: ['b', 'c', 'd'] }] }, ['"a"', '"b"', '"c"', '"d"', '1'], 10, 33);
    const closed: JsonSchema = { allOf: [{ type: 'object', properties: { a: { type: 'boolean' }, b: { type: 'boolean' } }, additionalProperties: false }, { properties: { c: { type: 'null' } } }] };
    judged(closed, ['{}', '{"a":true}', '{"a":true,"b":false}', '{"c":null}'], 20, 34);
    expect(() => compileJsonSchema({ allOf: [{ type: 'string' }, { type: 'integer' }] })).toThrow(/admits no value/);
  });

  it('allOf parts that do not merge exactly are refused naming the keyword', () => {
    expect(() => compileJsonSchema({ allOf: [{ type: 'string', pattern: '^a' }, { type: 'string', pattern: 'b$' }] })).toThrow(/allOf: pattern/);
    expect(() => compileJsonSchema({ allOf: [{ anyOf: [{ type: 'string' }, { type: 'null' }] }, { type: 'string' }] })).toThrow(UnsupportedError);
  });

  it('a map: any keys, each value of additionalProperties\' schema, at most maxProperties members', () => {
    const map: JsonSchema = { type: 'object', additionalProperties: { type: 'integer', minimum: 0, maximum: 9 }, maxProperties: 3 };
    judged(map, ['{}', '{"k":1}', '{"x":1,"y":2,"z":3}', '{"x":1,"y":2,"z":3,"w":4}', '{"k":10}', '{"k":"1"}'], 40, 35);
    // What zod's z.record sends.
    const record = z.record(z.string(), z.object({ n: z.number().int() }));
    walksValidate(z.toJSONSchema(record) as JsonSchema, 20, 36, (v) => record.safeParse(v).success);
    // Keys under propertyNames: a pattern, or an enum.
    judged({ type: 'object', propertyNames: { pattern: '^[a-c]{1,2}$' }, additionalProperties: { type: 'boolean' } }, ['{"ab":true}', '{"abc":true}', '{"d":false}', '{}'], 30, 37);
    judged({ type: 'object', propertyNames: { enum: ['x', 'y'] }, additionalProperties: { type: 'null' } }, ['{"x":null,"y":null}', '{"z":null}'], 20, 38);
  });

  it.each([
    ['a schema for extra keys beside properties', { type: 'object', properties: { a: {} }, additionalProperties: { type: 'string' } }, /additionalProperties: a schema for undeclared properties beside/],
    ['not', { not: { type: 'string' } }, /\.not: the keyword not is not supported/],
    ['if', { if: { type: 'string' }, then: { maxLength: 2 } }, /\.if: the keyword if is not supported/],
    ['dependentSchemas', { type: 'object', dependentSchemas: { a: {} } }, /\.dependentSchemas: the keyword dependentSchemas/],
  ])('%s: UnsupportedError naming the keyword', (_label, schema, message) => {
    expect(() => compileJsonSchema(schema as JsonSchema)).toThrow(UnsupportedError);
    expect(() => compileJsonSchema(schema as JsonSchema)).toThrow(message);
  });
});

describe('pattern budgets', () => {
  const bound = (schema: JsonSchema) => {
    try {
      compileJsonSchema(schema);
    } catch (error) {
      if (error instanceof ConstraintError) return `${error.code} ${error.bound}`;
      throw error;
    }
    return undefined;
  };
  it('a state explosion, a huge counted repetition or length table is SCHEMA_TOO_LARGE naming maxPatternStates', () => {
    expect(bound({ type: 'string', pattern: '^(a|b)*a(a|b){40}$' })).toBe('SCHEMA_TOO_LARGE maxPatternStates');
    expect(bound({ type: 'string', pattern: '^(a{1000}){1000}$' })).toBe('SCHEMA_TOO_LARGE maxPatternStates');
    expect(bound({ type: 'string', pattern: '^[a-z]{0,2000}$', maxLength: 100_000 })).toBe('SCHEMA_TOO_LARGE maxPatternStates');
    expect(bound({ type: 'object', properties: Object.fromEntries(Array.from({ length: 200 }, (_, i) => [`p${i}`, { type: 'string', format: 'email' }])) })).toBe('SCHEMA_TOO_LARGE maxPatternStates');
    // What fits: a length alone needs no table; a long bounded pattern.
    expect(bound({ type: 'string', minLength: 1_000_000, maxLength: 10_000_000 })).toBeUndefined();
    expect(bound({ type: 'string', pattern: '^(a|b)*a(a|b){8}$' })).toBeUndefined();
  });
});
