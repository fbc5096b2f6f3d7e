/**
 * Fuzzing the JSON-schema compiler: random schemas (supported and unsupported keywords, garbage,
 * random widths, depths and literal sizes) and structured families (depth, width, literal size
 * swept across the bounds). Each case ends in one of: compiled (then random walks through the
 * automaton, some diving as deep as they can, must never reach a dead end and must end in text
 * that JSON.parse reads and ajv validates), a typed error (UnsupportedError, ConstraintError), a
 * crash (any other exception, a dead end, an invalid text) or a hang (more compile steps than the
 * bounds allow). No crash and no hang is allowed. WEIGHTMAP_FUZZ_TABLE=1 prints the table.
 */
import Ajv from 'ajv';
import addFormats from 'ajv-formats';
import { advance, isComplete, MAX_DEPTH, startState, type GrammarNode } from '../../lib/constrain/automaton';
import { compileJsonSchemaSteps, type JsonSchema } from '../../lib/constrain/json-schema';
import { SCHEMA_LIMITS } from '../../lib/constrain/limits';
import { ConstraintError, UnsupportedError } from '../../lib/base/errors';
import { mulberry32 } from '../helpers/rng';

const ajv = addFormats(new Ajv({ strict: false, allowUnionTypes: true }));
/** Compile steps past which a compile counts as a hang (the bounds keep every compile far below). */
const MAX_STEPS = 2_000_000;
const WALK_BYTES = 3000;

type Outcome = 'compiled' | 'typed' | 'crash' | 'hang';

interface Row {
  family: string;
  cases: number;
  compiled: number;
  typed: Map<string, number>;
  crashes: string[];
  hangs: string[];
  walks: number;
}

/** Compiles by hand, counting steps. */
function compile(schema: JsonSchema): { root?: GrammarNode; error?: unknown; hang?: boolean } {
  const steps = compileJsonSchemaSteps(schema);
  try {
    for (let n = 0; n < MAX_STEPS; n++) {
      const step = steps.next();
      if (step.done) return { root: step.value.root };
    }
    return { hang: true };
  } catch (error) {
    return { error };
  }
}

/** A random walk of allowed bytes; `dive`: prefer opening values first. Returns the text, or a problem. */
function walk(root: GrammarNode, rand: () => number, dive: boolean): { text?: string; deadEnd?: string } {
  let state = startState(root);
  const bytes: number[] = [];
  for (;;) {
    const options: number[] = [];
    for (let b = 0; b < 256; b++) if (advance(state, b) !== null) options.push(b);
    const complete = isComplete(state);
    if (options.length === 0) {
      if (complete) break;
      return { deadEnd: Buffer.from(bytes).toString('latin1').slice(-120) };
    }
    if (complete && (rand() < 0.3 || bytes.length > WALK_BYTES)) break;
    if (bytes.length > 2 * WALK_BYTES) return {}; // a long literal: no verdict
    const opening = options.filter((b) => b === 0x5b || b === 0x7b || b === 0x22 || b === 0x3a || b === 0x2c);
    const closing = options.filter((b) => b === 0x22 || b === 0x7d || b === 0x5d);
    const diving = dive && bytes.length < 400;
    const pool = diving && opening.length ? opening : !diving && closing.length && rand() < 0.6 ? closing : options;
    const b = pool[Math.floor(rand() * pool.length)];
    state = advance(state, b)!;
    bytes.push(b);
  }
  return { text: Buffer.from(bytes).toString('utf8') };
}

function run(row: Row, name: string, schema: JsonSchema, rand: () => number, walks = 3): Outcome {
  row.cases++;
  const { root, error, hang } = compile(schema);
  if (hang) {
    row.hangs.push(name);
    return 'hang';
  }
  if (error !== undefined) {
    if (error instanceof ConstraintError) {
      const key = `${error.code} ${error.bound}`;
      row.typed.set(key, (row.typed.get(key) ?? 0) + 1);
      return 'typed';
    }
    if (error instanceof UnsupportedError) {
      row.typed.set('UnsupportedError', (row.typed.get('UnsupportedError') ?? 0) + 1);
      return 'typed';
    }
    row.crashes.push(`${name}: ${String(error).slice(0, 200)}`);
    return 'crash';
  }
  row.compiled++;
  let validate: ((v: unknown) => boolean) | undefined;
  try {
    validate = ajv.compile(schema as object);
  } catch {
    validate = undefined; // a schema ajv itself cannot take: JSON.parse still judges
  }
  for (let w = 0; w < walks; w++) {
    const { text, deadEnd } = walk(root!, rand, w % 2 === 1);
    if (deadEnd !== undefined) {
      row.crashes.push(`${name}: dead end after ${JSON.stringify(deadEnd)}`);
      return 'crash';
    }
    if (text === undefined) continue;
    row.walks++;
    let value: unknown;
    try {
      value = JSON.parse(text);
    } catch {
      row.crashes.push(`${name}: not JSON: ${text.slice(0, 120)}`);
      return 'crash';
    }
    if (validate && !validate(value)) {
      row.crashes.push(`${name}: does not validate: ${text.slice(0, 120)}`);
      return 'crash';
    }
  }
  return 'compiled';
}

// ---- random schemas ----

function randomText(rand: () => number): string {
  const pieces = ['a', 'Z', ' ', '"', '\\', 'é', '日本', '🦙', '\u0001', '\n', 'key', '0'];
  const long = rand() < 0.05;
  const n = long ? Math.floor(rand() * 5000) : Math.floor(rand() * 6);
  let s = '';
  for (let i = 0; i < n; i++) s += pieces[Math.floor(rand() * pieces.length)];
  return s;
}

function randomLiteral(rand: () => number, depth = 0): unknown {
  const r = rand();
  if (r < 0.4) return randomText(rand);
  if (r < 0.6) return Math.floor(rand() * 2000) - 1000;
  if (r < 0.7) return rand() * 10;
  if (r < 0.8) return [null, true, false][Math.floor(rand() * 3)];
  if (depth > 2) return 1;
  if (r < 0.9) return Array.from({ length: Math.floor(rand() * 3) }, () => randomLiteral(rand, depth + 1));
  return Object.fromEntries(Array.from({ length: Math.floor(rand() * 3) }, () => [randomText(rand), randomLiteral(rand, depth + 1)]));
}

/** A random pattern of the regex subset (or, now and then, one past it or one that explodes). */
function randomPattern(rand: () => number, depth = 0): string {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const atom = (): string => {
    const r = rand();
    if (r < 0.35) return pick(['a', 'b', 'Z', '0', '-', 'é', '🦙', '\\.', '\\"', ' ']);
    if (r < 0.6) return pick(['[a-z]', '[0-9_]', '[^a]', '\\d', '\\w', '\\s', '\\W', '.', '[\\-x]']);
    if (r < 0.8 && depth < 2) return `(${randomPattern(rand, depth + 1).replace(/^\^|\$$/g, '')})`;
    if (r < 0.9) return pick(['(?:ab|c)', '(a|)', '(?<g>x)']);
    return pick(['(?=a)', '\\1', '\\b', '\\p{L}', '(a|b)*a(a|b){30}', 'x{5000}']);
  };
  const quant = () => pick(['', '', '', '?', '*', '+', '{2}', '{1,3}', '{0,}', '*?']);
  const items = Array.from({ length: 1 + Math.floor(rand() * 4) }, () => atom() + quant());
  let body = items.join('');
  if (rand() < 0.2) body += `|${atom()}`;
  return depth > 0 ? body : `${rand() < 0.7 ? '^' : ''}${body}${rand() < 0.7 ? '$' : ''}`;
}

function randomSchema(rand: () => number, depth: number): unknown {
  const pick = <T>(xs: T[]): T => xs[Math.floor(rand() * xs.length)];
  const leafy = depth > 6 || rand() < depth / 8;
  const kind = leafy
    ? pick(['string', 'integer', 'number', 'boolean', 'null', 'enum', 'const', 'free', 'pattern', 'format', 'lengths', 'range', 'range', 'nullable'])
    : pick(['object', 'object', 'array', 'anyOf', 'types', 'enum', 'free', 'bad', 'unsupported', 'ref', 'pattern', 'merge']);
  const width = () => (rand() < 0.05 ? Math.floor(rand() * 300) : Math.floor(rand() * 5));
  switch (kind) {
    case 'enum':
      return { enum: Array.from({ length: 1 + width() }, () => randomLiteral(rand)) };
    case 'const':
      return { const: randomLiteral(rand) };
    case 'free':
      return pick([{}, true, { type: 'object' }, { type: 'array' }]);
    case 'object': {
      const names = Array.from({ length: width() }, () => randomText(rand));
      const properties = Object.fromEntries(names.map((n) => [n, randomSchema(rand, depth + 1)]));
      const declared = Object.keys(properties);
      const required = declared.filter(() => rand() < 0.5);
      return { type: 'object', properties, required: rand() < 0.1 ? [...required, 'undeclared'] : required, ...(rand() < 0.3 ? { additionalProperties: false } : {}) };
    }
    case 'array': {
      const min = rand() < 0.5 ? undefined : Math.floor(rand() * 4);
      const max = rand() < 0.5 ? undefined : Math.floor(rand() * 5) - (rand() < 0.1 ? 10 : 0);
      return { type: 'array', items: randomSchema(rand, depth + 1), ...(min !== undefined ? { minItems: min } : {}), ...(max !== undefined ? { maxItems: max } : {}) };
    }
    case 'anyOf':
      return { [pick(['anyOf', 'oneOf'])]: Array.from({ length: 1 + width() }, () => randomSchema(rand, depth + 1)) };
    case 'types':
      return { type: Array.from({ length: 1 + Math.floor(rand() * 3) }, () => pick(['string', 'integer', 'null', 'boolean', 'object', 'array', 'number', 'nope'])) };
    case 'bad':
      return pick([5, 'x', null, [], false, { type: 7 }, { enum: [] }, { properties: 3 }, { required: 'a' }, { $ref: 5 }, { type: 'string', pattern: '(' }, { minLength: -1 }, { type: 'integer', minimum: 'x' }]);
    case 'unsupported':
      return pick([{ type: 'string', pattern: '(?=a)' }, { $ref: 'http://x/y' }, { type: 'integer', multipleOf: 2 }, { allOf: [] }, { type: 'string', format: 'hostname' }, { type: 'object', additionalProperties: { type: 'string' } }]);
    case 'pattern':
      return { type: 'string', pattern: randomPattern(rand), ...(rand() < 0.3 ? { maxLength: Math.floor(rand() * 12) } : {}), ...(rand() < 0.2 ? { minLength: Math.floor(rand() * 4) } : {}) };
    case 'format':
      return { type: 'string', format: pick(['date', 'time', 'date-time', 'uuid', 'email', 'ipv4', 'uri']), ...(rand() < 0.2 ? { maxLength: 20 + Math.floor(rand() * 30) } : {}) };
    case 'lengths': {
      const min = Math.floor(rand() * 6);
      return { type: 'string', minLength: min, ...(rand() < 0.7 ? { maxLength: min + Math.floor(rand() * 6) - (rand() < 0.1 ? 3 : 0) } : {}) };
    }
    case 'range': {
      const edge = () => pick([0, 1, -1, 2.5, -7.25, 100, 1e-3, Math.floor(rand() * 2000) - 1000]);
      const out: Record<string, unknown> = { type: pick(['integer', 'number']) };
      for (const k of ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum']) if (rand() < 0.4) out[k] = edge();
      return out;
    }
    case 'nullable':
      return pick([{ type: ['string', 'null'], maxLength: 3 }, { type: 'integer', nullable: true, minimum: 0 }, { type: ['integer', 'null', 'boolean'] }]);
    case 'ref':
      return pick([
        { $defs: { n: { type: 'object', properties: { v: randomSchema(rand, depth + 1), next: { $ref: '#/$defs/n' } } } }, $ref: '#/$defs/n' },
        { definitions: { t: { anyOf: [{ type: 'null' }, { type: 'array', items: { $ref: '#/definitions/t' }, maxItems: 2 }] } }, $ref: '#/definitions/t' },
        { type: 'object', properties: { a: randomSchema(rand, depth + 1), self: { $ref: '#' } } },
        { type: 'array', items: { $ref: '#' } },
        { $ref: '#/$defs/missing' },
      ]);
    case 'merge':
      return { anyOf: Array.from({ length: 2 + Math.floor(rand() * 3) }, () => pick<unknown>([{ const: randomText(rand) }, { type: 'string', format: pick(['date', 'email', 'uuid']) }, { type: 'string', pattern: randomPattern(rand) }, { type: 'string' }, { const: Math.floor(rand() * 9) }, { type: 'integer', minimum: 0 }, { type: 'number' }, { type: 'null' }])) };
    default:
      return { type: kind };
  }
}

// ---- structured families ----

function nestedObjects(levels: number): JsonSchema {
  let s: JsonSchema = { type: 'integer' };
  for (let i = 0; i < levels; i++) s = { type: 'object', properties: { k: s }, required: ['k'] };
  return s;
}
function nestedArrays(levels: number): JsonSchema {
  let s: JsonSchema = {};
  for (let i = 0; i < levels; i++) s = { type: 'array', items: s, minItems: 1, maxItems: 2 };
  return s;
}
function nestedNullable(levels: number): JsonSchema {
  let s: JsonSchema = { type: 'string' };
  for (let i = 0; i < levels; i++) s = { anyOf: [{ type: 'object', properties: { n: s } }, { type: 'null' }] };
  return s;
}

const structured: [string, string, () => JsonSchema][] = [];
for (const d of [1, 8, 16, MAX_DEPTH - 2, MAX_DEPTH - 1, MAX_DEPTH, MAX_DEPTH + 1, 40, 64]) {
  structured.push(['depth', `objects ${d}`, () => nestedObjects(d)]);
  structured.push(['depth', `arrays ${d}`, () => nestedArrays(d)]);
  structured.push(['depth', `nullable ${d}`, () => nestedNullable(d)]);
}
for (const w of [1, 100, 1000, 5000, SCHEMA_LIMITS.maxNodes - 2, SCHEMA_LIMITS.maxNodes, 20_000]) {
  structured.push(['width', `properties ${w}`, () => ({ type: 'object', properties: Object.fromEntries(Array.from({ length: w }, (_, i) => [`p${i}`, { type: 'boolean' }])) })]);
  structured.push(['width', `enum ${w}`, () => ({ enum: Array.from({ length: w }, (_, i) => i % 3 === 0 ? i : `e${i}`) })]);
  structured.push(['width', `anyOf ${w}`, () => ({ anyOf: Array.from({ length: w }, (_, i) => ({ const: i })) })]);
}
const L = SCHEMA_LIMITS.maxLiteralBytes;
for (const n of [0, 1, 1000, 100_000, L - 8, L - 2, L + 1, 900_000]) {
  structured.push(['literal size', `enum string ${n}`, () => ({ enum: ['y'.repeat(n)] })]);
  structured.push(['literal size', `property name ${n}`, () => ({ type: 'object', properties: { ['q'.repeat(n)]: { type: 'null' } }, required: ['q'.repeat(n)] })]);
  structured.push(['literal size', `shared prefixes ${n}`, () => ({ enum: ['z'.repeat(Math.floor(n / 2)) + 'a', 'z'.repeat(Math.floor(n / 2)) + 'b'] })]);
}

// Patterns and lengths swept across maxPatternStates: counted repetitions, the classic exponential DFA, length tables.
for (const n of [1, 8, 12, 13, 14, 20, 40]) structured.push(['pattern states', `(a|b)*a(a|b){${n}}`, () => ({ type: 'string', pattern: `^(a|b)*a(a|b){${n}}$` })]);
for (const n of [10, 1000, 5000, 20_000, 100_000]) structured.push(['pattern states', `[a-z]{0,${n}}`, () => ({ type: 'string', pattern: `^[a-z]{0,${n}}$` })]);
for (const n of [16, 4096, 65_536, 1 << 22]) structured.push(['pattern states', `email, maxLength ${n}`, () => ({ type: 'string', format: 'email', maxLength: n })]);
for (const n of [1, 50, 150, 400]) structured.push(['pattern states', `${n} date-times`, () => ({ type: 'object', properties: Object.fromEntries(Array.from({ length: n }, (_, i) => [`d${i}`, { type: 'string', format: 'date-time' }])) })]);

function newRow(family: string): Row {
  return { family, cases: 0, compiled: 0, typed: new Map(), crashes: [], hangs: [], walks: 0 };
}

function table(rows: Row[]): string {
  const lines = ['| family | cases | compiled (walks) | typed errors | crashes | hangs |', '|---|---:|---:|---|---:|---:|'];
  for (const r of rows) {
    const typed = [...r.typed].map(([k, v]) => `${k}: ${v}`).join(', ') || '-';
    lines.push(`| ${r.family} | ${r.cases} | ${r.compiled} (${r.walks}) | ${typed} | ${r.crashes.length} | ${r.hangs.length} |`);
  }
  return lines.join('\n');
}

describe('JSON-schema fuzzing', () => {
  const rows: Row[] = [];
  afterAll(() => {
    if (process.env.WEIGHTMAP_FUZZ_TABLE) process.stdout.write(`${table(rows)}\n`);
  });

  it('random schemas: compiled ones write only valid JSON and never dead-end; the rest are typed errors', () => {
    const row = newRow('random');
    rows.push(row);
    const rand = mulberry32(20261201);
    for (let i = 0; i < 300; i++) run(row, `random #${i}`, randomSchema(rand, 1) as JsonSchema, rand);
    expect({ crashes: row.crashes.slice(0, 3), hangs: row.hangs }).toEqual({ crashes: [], hangs: [] });
    expect(row.compiled).toBeGreaterThan(30);
    expect(row.cases - row.compiled).toBeGreaterThan(30);
  });

  it.each(['depth', 'width', 'literal size', 'pattern states'])('structured by %s: below the bounds compiled, past them the bound named', (family) => {
    const row = newRow(family);
    rows.push(row);
    const rand = mulberry32(family.length);
    for (const [f, name, make] of structured) if (f === family) run(row, name, make(), rand, 4);
    expect({ crashes: row.crashes.slice(0, 3), hangs: row.hangs }).toEqual({ crashes: [], hangs: [] });
    // Each family has cases on both sides of its bound.
    expect(row.compiled).toBeGreaterThan(0);
    expect(row.cases - row.compiled).toBeGreaterThan(0);
  });
});
