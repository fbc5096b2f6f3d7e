/**
 * JSON Schema → a grammar (lib/constrain/json-nodes.ts) whose every complete text validates
 * against the schema. Supported: type (one or several), enum, const, properties + required
 * (written in declared order; undeclared properties never appear), items, minItems, maxItems,
 * anyOf / oneOf whose alternatives start with different bytes, and the empty schema (any JSON).
 * Keywords that constrain what this grammar cannot enforce (pattern, minLength, minimum, $ref, ...)
 * raise UnsupportedError instead of being ignored.
 */
import { UnsupportedError } from '../errors';
import type { GrammarNode } from './automaton';
import { ArrayNode, FreeObjectNode, LiteralNode, NodeIds, NumberNode, ObjectNode, StringNode, UnionNode } from './json-nodes';

export type JsonSchema = boolean | { [keyword: string]: unknown };

/** Keywords that describe without constraining. */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$schema', '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly']);
const HANDLED = new Set(['type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems', 'anyOf', 'oneOf']);
const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'];
/** Bounds the grammar's size (a count past it is a schema this grammar was not made for). */
const MAX_ITEMS_BOUND = 4096;

class SchemaCompiler {
  readonly ids = new NodeIds();
  private any: UnionNode | undefined;

  fail(path: string, message: string): never {
    throw new UnsupportedError(`jsonSchema${path}: ${message}`);
  }

  compile(schema: unknown, path: string): GrammarNode {
    if (schema === true) return this.anyValue();
    if (schema === false) this.fail(path, 'the schema false admits no value');
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) this.fail(path, 'a schema must be an object or a boolean');
    const s = schema as Record<string, unknown>;
    for (const keyword of Object.keys(s)) {
      if (!HANDLED.has(keyword) && !ANNOTATIONS.has(keyword)) this.fail(`${path}.${keyword}`, `the keyword ${keyword} is not supported in constrained output`);
    }
    if ('const' in s) return this.literals([s.const], path);
    if (s.enum !== undefined) {
      if (!Array.isArray(s.enum) || s.enum.length === 0) this.fail(`${path}.enum`, 'enum must be a non-empty array');
      return this.literals(s.enum, `${path}.enum`);
    }
    for (const keyword of ['anyOf', 'oneOf'] as const) {
      if (s[keyword] === undefined) continue;
      const alternatives = s[keyword];
      if (!Array.isArray(alternatives) || alternatives.length === 0) this.fail(`${path}.${keyword}`, `${keyword} must be a non-empty array`);
      if (s.type !== undefined) this.fail(path, `type beside ${keyword} is not supported`);
      return this.union(alternatives.map((a, i) => this.compile(a, `${path}.${keyword}[${i}]`)), `${path}.${keyword}`);
    }
    const type = s.type;
    if (type === undefined) {
      if (s.properties !== undefined || s.required !== undefined) return this.object(s, path);
      if (s.items !== undefined) return this.array(s, path);
      return this.anyValue();
    }
    if (Array.isArray(type)) {
      if (type.length === 0) this.fail(`${path}.type`, 'type must not be an empty array');
      return this.union(type.map((t, i) => this.typed(t, s, `${path}.type[${i}]`, path)), `${path}.type`);
    }
    return this.typed(type, s, `${path}.type`, path);
  }

  private typed(type: unknown, s: Record<string, unknown>, typePath: string, path: string): GrammarNode {
    if (typeof type !== 'string' || !TYPES.includes(type)) this.fail(typePath, `type must be one of ${TYPES.join(', ')}`);
    switch (type) {
      case 'string':
        return new StringNode(this.ids);
      case 'number':
      case 'integer':
        return new NumberNode(this.ids, type === 'integer');
      case 'boolean':
        return new LiteralNode(this.ids, ['true', 'false']);
      case 'null':
        return new LiteralNode(this.ids, ['null']);
      case 'object':
        return this.object(s, path);
      default:
        return this.array(s, path);
    }
  }

  private literals(values: unknown[], path: string): GrammarNode {
    const texts = values.map((v, i) => {
      const text = JSON.stringify(v);
      if (text === undefined) this.fail(`${path}[${i}]`, 'not a JSON value');
      return text;
    });
    return new LiteralNode(this.ids, texts);
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

  private object(s: Record<string, unknown>, path: string): GrammarNode {
    const { properties, required = [], additionalProperties } = s;
    if (properties !== undefined && (typeof properties !== 'object' || properties === null || Array.isArray(properties))) {
      this.fail(`${path}.properties`, 'properties must be an object');
    }
    if (!Array.isArray(required) || required.some((r) => typeof r !== 'string')) this.fail(`${path}.required`, 'required must be an array of strings');
    const declared = Object.entries((properties ?? {}) as Record<string, unknown>);
    for (const name of required as string[]) {
      if (!declared.some(([n]) => n === name)) this.fail(`${path}.required`, `the required property ${JSON.stringify(name)} is not declared in properties`);
    }
    if (declared.length === 0 && additionalProperties !== false) {
      if (additionalProperties !== undefined && additionalProperties !== true) {
        this.fail(`${path}.additionalProperties`, 'a schema for undeclared properties is not supported');
      }
      return this.freeObject();
    }
    return new ObjectNode(
      this.ids,
      declared.map(([name, sub]) => ({
        name,
        node: this.compile(sub, `${path}.properties[${JSON.stringify(name)}]`),
        required: (required as string[]).includes(name),
      })),
    );
  }

  private array(s: Record<string, unknown>, path: string): GrammarNode {
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
    node.items = s.items === undefined ? this.anyValue() : this.compile(s.items, `${path}.items`);
    return node;
  }

  private freeObject(): FreeObjectNode {
    const node = new FreeObjectNode(this.ids, new StringNode(this.ids));
    node.values = this.anyValue();
    return node;
  }

  /** Any JSON value (made once per grammar; free-form objects and arrays refer back to it). */
  private anyValue(): GrammarNode {
    if (this.any) return this.any;
    const any = new UnionNode(this.ids);
    this.any = any;
    const object = this.freeObject();
    const array = new ArrayNode(this.ids, 0, undefined);
    array.items = any;
    any.setAlternatives([object, array, new StringNode(this.ids), new NumberNode(this.ids, false), new LiteralNode(this.ids, ['true', 'false', 'null'])]);
    return any;
  }
}

/** The grammar of the JSON texts that validate against `schema` (UnsupportedError for what it cannot enforce). */
export function compileJsonSchema(schema: JsonSchema): GrammarNode {
  return new SchemaCompiler().compile(schema, '');
}
