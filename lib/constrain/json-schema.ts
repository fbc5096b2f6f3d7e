/**
 * JSON Schema → a grammar (lib/constrain/json-nodes.ts) whose every complete text validates
 * against the schema. Supported: type (one or several), enum, const, properties + required
 * (written in declared order; undeclared properties never appear), items, minItems, maxItems,
 * anyOf / oneOf whose alternatives start with different bytes, and the empty schema (any JSON).
 * Keywords that constrain what this grammar cannot enforce (pattern, minLength, minimum, $ref, ...)
 * raise UnsupportedError instead of being ignored. A schema past the bounds of lib/constrain/limits.ts
 * (nodes, literal bytes, depth) raises ConstraintError naming the bound. The compiler is a generator
 * that yields between small steps (lib/constrain/slices.ts): compileJsonSchemaSteps runs in slices.
 */
import { ConstraintError, UnsupportedError } from '../base/errors';
import type { GrammarNode } from './automaton';
import { ByteTrie } from './byte-trie';
import { ArrayNode, FreeObjectNode, LiteralNode, NodeIds, NumberNode, ObjectNode, StringNode, UnionNode } from './json-nodes';
import { SCHEMA_LIMITS, type SchemaLimits } from './limits';
import { toEnd } from './slices';

/** A JSON schema for `jsonSchema` / `response_format`; the supported subset is listed in docs/server.md, other keywords are an UnsupportedError. */
export type JsonSchema = boolean | { [keyword: string]: unknown };

/** Keywords that describe without constraining. */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$schema', '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly']);
const HANDLED = new Set(['type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems', 'anyOf', 'oneOf']);
const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'];
/** Bounds the grammar's size (a count past it is a schema this grammar was not made for). */
const MAX_ITEMS_BOUND = 4096;
/** Enum values turned into text between two yields. */
const VALUES_PER_STEP = 1024;

type Steps<T> = Generator<void, T>;

const utf8 = (text: string) => Buffer.from(text, 'utf8');

class SchemaCompiler {
  readonly ids: NodeIds;
  private any: UnionNode | undefined;
  private literalBytes = 0;

  constructor(private readonly limits: SchemaLimits) {
    this.ids = new NodeIds(limits.maxNodes);
  }

  fail(path: string, message: string): never {
    throw new UnsupportedError(`jsonSchema${path}: ${message}`);
  }

  /** `depth`: the level the value sits at (the root's is 1); values deeper than maxDepth could never be written. */
  private checkDepth(depth: number, path: string): void {
    if (depth > this.limits.maxDepth) {
      throw new ConstraintError('SCHEMA_TOO_DEEP', `jsonSchema${path}: values nest deeper than ${this.limits.maxDepth} levels (maxDepth)`, 'maxDepth');
    }
  }

  private countLiteralBytes(bytes: number, path: string): void {
    this.literalBytes += bytes;
    if (this.literalBytes > this.limits.maxLiteralBytes) {
      throw new ConstraintError(
        'SCHEMA_TOO_LARGE',
        `jsonSchema${path}: enum, const and property names come to more than ${this.limits.maxLiteralBytes} bytes (maxLiteralBytes)`,
        'maxLiteralBytes',
      );
    }
  }

  *compile(schema: unknown, path: string, depth: number): Steps<GrammarNode> {
    yield;
    this.checkDepth(depth, path);
    if (schema === true) return this.anyValue(depth, path);
    if (schema === false) this.fail(path, 'the schema false admits no value');
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) this.fail(path, 'a schema must be an object or a boolean');
    const s = schema as Record<string, unknown>;
    for (const keyword of Object.keys(s)) {
      if (!HANDLED.has(keyword) && !ANNOTATIONS.has(keyword)) this.fail(`${path}.${keyword}`, `the keyword ${keyword} is not supported in constrained output`);
    }
    if ('const' in s) return yield* this.literals([s.const], path);
    if (s.enum !== undefined) {
      if (!Array.isArray(s.enum) || s.enum.length === 0) this.fail(`${path}.enum`, 'enum must be a non-empty array');
      return yield* this.literals(s.enum, `${path}.enum`);
    }
    for (const keyword of ['anyOf', 'oneOf'] as const) {
      if (s[keyword] === undefined) continue;
      const alternatives = s[keyword];
      if (!Array.isArray(alternatives) || alternatives.length === 0) this.fail(`${path}.${keyword}`, `${keyword} must be a non-empty array`);
      if (s.type !== undefined) this.fail(path, `type beside ${keyword} is not supported`);
      const nodes: GrammarNode[] = [];
      for (let i = 0; i < alternatives.length; i++) nodes.push(yield* this.compile(alternatives[i], `${path}.${keyword}[${i}]`, depth + 1));
      return this.union(nodes, `${path}.${keyword}`);
    }
    const type = s.type;
    if (type === undefined) {
      if (s.properties !== undefined || s.required !== undefined) return yield* this.object(s, path, depth);
      if (s.items !== undefined) return yield* this.array(s, path, depth);
      return this.anyValue(depth, path);
    }
    if (Array.isArray(type)) {
      if (type.length === 0) this.fail(`${path}.type`, 'type must not be an empty array');
      const nodes: GrammarNode[] = [];
      for (let i = 0; i < type.length; i++) nodes.push(yield* this.typed(type[i], s, `${path}.type[${i}]`, path, depth + 1));
      return this.union(nodes, `${path}.type`);
    }
    return yield* this.typed(type, s, `${path}.type`, path, depth);
  }

  private *typed(type: unknown, s: Record<string, unknown>, typePath: string, path: string, depth: number): Steps<GrammarNode> {
    this.checkDepth(depth, path);
    if (typeof type !== 'string' || !TYPES.includes(type)) this.fail(typePath, `type must be one of ${TYPES.join(', ')}`);
    switch (type) {
      case 'string':
        return new StringNode(this.ids);
      case 'number':
      case 'integer':
        return new NumberNode(this.ids, type === 'integer');
      case 'boolean':
        return new LiteralNode(this.ids, yield* ByteTrie.build([utf8('true'), utf8('false')]));
      case 'null':
        return new LiteralNode(this.ids, yield* ByteTrie.build([utf8('null')]));
      case 'object':
        return yield* this.object(s, path, depth);
      default:
        return yield* this.array(s, path, depth);
    }
  }

  private *literals(values: unknown[], path: string): Steps<GrammarNode> {
    const texts: Uint8Array[] = [];
    for (let i = 0; i < values.length; i++) {
      if (i % VALUES_PER_STEP === VALUES_PER_STEP - 1) yield;
      const text = JSON.stringify(values[i]);
      if (text === undefined) this.fail(`${path}[${i}]`, 'not a JSON value');
      this.countLiteralBytes(text.length, path); // a lower bound of the UTF-8 length: no buffer for a text past the bound
      const bytes = utf8(text);
      this.countLiteralBytes(bytes.length - text.length, path);
      texts.push(bytes);
    }
    return new LiteralNode(this.ids, yield* ByteTrie.build(texts));
  }

  private union(alternatives: GrammarNode[], path: string): GrammarNode {
    if (alternatives.length === 1) return alternatives[0];
    const union = new UnionNode(this.ids);
    const clash = union.setAlternatives(alternatives);
    if (clash !== undefined) {
      this.fail(path, `two alternatives can start with ${JSON.stringify(String.fromCharCode(clash))}; only alternatives that start differently (e.g. a string and null) are supported`);
    }
    return union;
  }

  private *object(s: Record<string, unknown>, path: string, depth: number): Steps<GrammarNode> {
    const { properties, required = [], additionalProperties } = s;
    if (properties !== undefined && (typeof properties !== 'object' || properties === null || Array.isArray(properties))) {
      this.fail(`${path}.properties`, 'properties must be an object');
    }
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) this.fail(`${path}.required`, 'required must be an array of strings');
    const declared = Object.entries((properties ?? {}) as Record<string, unknown>);
    const names = new Set(declared.map(([n]) => n));
    const requiredNames = new Set(required as string[]);
    for (const name of requiredNames) {
      if (!names.has(name)) this.fail(`${path}.required`, `the required property ${JSON.stringify(name)} is not declared in properties`);
    }
    if (declared.length === 0 && additionalProperties !== false) {
      if (additionalProperties !== undefined && additionalProperties !== true) {
        this.fail(`${path}.additionalProperties`, 'a schema for undeclared properties is not supported');
      }
      return this.freeObject(depth, path);
    }
    const keys: Uint8Array[] = [];
    const members = [];
    for (const [name, sub] of declared) {
      const key = JSON.stringify(name).slice(1); // the key's JSON text after its opening quote
      this.countLiteralBytes(key.length, `${path}.properties`);
      const bytes = utf8(key);
      this.countLiteralBytes(bytes.length - key.length, `${path}.properties`);
      keys.push(bytes);
      members.push({ name, node: yield* this.compile(sub, `${path}.properties[${JSON.stringify(name)}]`, depth + 1), required: requiredNames.has(name) });
    }
    return new ObjectNode(this.ids, members, yield* ByteTrie.build(keys, true));
  }

  private *array(s: Record<string, unknown>, path: string, depth: number): Steps<GrammarNode> {
    const count = (keyword: 'minItems' | 'maxItems'): number | undefined => {
      const v = s[keyword];
      if (v === undefined) return undefined;
      if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > MAX_ITEMS_BOUND) this.fail(`${path}.${keyword}`, `${keyword} must be an integer in [0, ${MAX_ITEMS_BOUND}]`);
      return v as number;
    };
    const minItems = count('minItems') ?? 0;
    const maxItems = count('maxItems');
    if (maxItems !== undefined && maxItems < minItems) this.fail(`${path}.maxItems`, 'maxItems is below minItems');
    if (Array.isArray(s.items)) this.fail(`${path}.items`, 'tuple items (an array of schemas) are not supported');
    const node = new ArrayNode(this.ids, minItems, maxItems);
    node.items = s.items === undefined ? this.anyValue(depth + 1, `${path}.items`) : yield* this.compile(s.items, `${path}.items`, depth + 1);
    return node;
  }

  /** An object with any members (its keys and values can only be written while they fit: lib/constrain/json-nodes.ts). */
  private freeObject(depth: number, path: string): FreeObjectNode {
    this.checkDepth(depth, path);
    const node = new FreeObjectNode(this.ids, new StringNode(this.ids));
    node.values = this.anyUnion();
    return node;
  }

  /** Any JSON value at `depth`: the union and, a level below, its value must fit. */
  private anyValue(depth: number, path: string): GrammarNode {
    this.checkDepth(depth + 1, path);
    return this.anyUnion();
  }

  /** Any JSON value (made once per grammar; free-form objects and arrays refer back to it). */
  private anyUnion(): UnionNode {
    if (this.any) return this.any;
    const any = new UnionNode(this.ids);
    this.any = any;
    const object = new FreeObjectNode(this.ids, new StringNode(this.ids));
    object.values = any;
    const array = new ArrayNode(this.ids, 0, undefined);
    array.items = any;
    const literals = toEnd(ByteTrie.build([utf8('true'), utf8('false'), utf8('null')]));
    any.setAlternatives([object, array, new StringNode(this.ids), new NumberNode(this.ids, false), new LiteralNode(this.ids, literals)]);
    return any;
  }
}

/** Throws ConstraintError when the schema document nests deeper than maxNesting (walked without recursion). */
export function checkSchemaNesting(schema: JsonSchema, limits: SchemaLimits = SCHEMA_LIMITS): void {
  const stack: [unknown, number][] = [[schema, 1]];
  // The deepest level each object was met at: one shared by many parents is walked again only when met deeper.
  const deepest = new Map<object, number>();
  while (stack.length > 0) {
    const [value, level] = stack.pop()!;
    if (typeof value !== 'object' || value === null || (deepest.get(value) ?? 0) >= level) continue;
    deepest.set(value, level);
    if (level > limits.maxNesting) {
      throw new ConstraintError('SCHEMA_TOO_DEEP', `jsonSchema: the schema nests deeper than ${limits.maxNesting} levels of objects and arrays (maxNesting)`, 'maxNesting');
    }
    for (const child of Array.isArray(value) ? value : Object.values(value)) if (typeof child === 'object' && child !== null) stack.push([child, level + 1]);
  }
}

/**
 * The grammar of the JSON texts that validate against `schema`, as steps to run (toEnd, inSlices):
 * UnsupportedError for what it cannot enforce, ConstraintError past `limits`. The grammar's
 * memory in bytes comes with it.
 */
export function* compileJsonSchemaSteps(schema: JsonSchema, limits: SchemaLimits = SCHEMA_LIMITS): Steps<{ root: GrammarNode; bytes: number }> {
  checkSchemaNesting(schema, limits);
  yield;
  const compiler = new SchemaCompiler(limits);
  const root = yield* compiler.compile(schema, '', 1);
  return { root, bytes: compiler.ids.bytes };
}

/** The grammar of the JSON texts that validate against `schema`, compiled at once (UnsupportedError for what it cannot enforce, ConstraintError past the bounds). */
export function compileJsonSchema(schema: JsonSchema, limits: SchemaLimits = SCHEMA_LIMITS): GrammarNode {
  return toEnd(compileJsonSchemaSteps(schema, limits)).root;
}

/**
 * Several schemas compiled by one compiler (their nodes numbered apart, so that one grammar can hold
 * them all: lib/tools/call-grammar.ts), each value at `depth`; `ids` numbers any further node.
 */
export function* compileJsonSchemasSteps(
  schemas: readonly { schema: JsonSchema; path: string }[],
  depth: number,
  limits: SchemaLimits = SCHEMA_LIMITS,
): Steps<{ roots: GrammarNode[]; ids: NodeIds }> {
  for (const { schema } of schemas) checkSchemaNesting(schema, limits);
  yield;
  const compiler = new SchemaCompiler(limits);
  const roots: GrammarNode[] = [];
  for (const { schema, path } of schemas) roots.push(yield* compiler.compile(schema, path, depth));
  return { roots, ids: compiler.ids };
}
