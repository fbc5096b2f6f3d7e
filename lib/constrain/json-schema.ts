/**
 * JSON Schema → a grammar (lib/constrain/json-nodes.ts) whose every complete text validates
 * against the schema, and that writes every valid value within the bounds. Supported (the table in
 * docs/server.md): type (one or several), enum / const (of any JSON values, filtered by the
 * keywords beside them), properties + required (in any order up to MAX_ANY_ORDER_PROPERTIES,
 * each once; undeclared properties never appear beside them), items, minItems / maxItems, minLength / maxLength, pattern (the subset of
 * lib/constrain/regex-parse.ts), format (lib/constrain/formats.ts), minimum / maximum /
 * exclusiveMinimum / exclusiveMaximum (lib/constrain/numeric-range-node.ts), anyOf / oneOf (oneOf
 * as anyOf: alternatives whose first bytes differ, or that merge: literals into one set, strings
 * a plain string subsumes, patterns into one alternation, numbers into number; any other overlap
 * runs side by side: overlap-union-node.ts), nullable, local
 * $ref (recursive ones unrolled until values would nest past maxDepth), allOf (merged: all-of.ts),
 * maps (additionalProperties' schema without properties, propertyNames, maxProperties), and the
 * empty schema (any JSON). Keywords that constrain what this grammar cannot enforce (multipleOf,
 * not, if, uniqueItems, a schema for additionalProperties beside properties, ...) raise
 * UnsupportedError instead of being ignored. A schema
 * past the bounds of lib/constrain/limits.ts (nodes, literal bytes, depth, automaton states)
 * raises ConstraintError naming the bound. The compiler is a generator that yields between small
 * steps (lib/constrain/slices.ts): compileJsonSchemaSteps runs in slices.
 */
import { ConstraintError, UnsupportedError } from '../base/errors';
import { advanceBytes, isComplete, startState, type GrammarNode } from './automaton';
import { mergeAllOf } from './all-of';
import { ByteTrie } from './byte-trie';
import { intersectDfa, PatternBudget, regexDfa, type CharDfa } from './char-dfa';
import { CharConstraint, CharStringNode } from './char-string-node';
import { FORMAT_PATTERNS } from './formats';
import { ArrayNode, firstBytes, FreeObjectNode, LiteralNode, NodeIds, NumberNode, ObjectNode, StringNode, UnionNode } from './json-nodes';
import { OverlapUnionNode } from './overlap-union-node';
import { SCHEMA_LIMITS, type SchemaLimits } from './limits';
import { NumericRangeNode } from './numeric-range-node';
import { literalRegex, parseRegex, type Regex } from './regex-parse';
import { resolvePointer } from './schema-pointer';
import { toEnd } from './slices';

/** A JSON schema for `jsonSchema` / `response_format`; the supported subset is listed in docs/server.md, other keywords are an UnsupportedError. */
export type JsonSchema = boolean | { [keyword: string]: unknown };

/** Keywords that describe without constraining ($defs / definitions hold what $ref points to). */
const ANNOTATIONS = new Set(['title', 'description', 'default', 'examples', '$schema', '$id', '$comment', 'deprecated', 'readOnly', 'writeOnly', '$defs', 'definitions', 'markdownDescription']);
const STRING_KEYWORDS = ['minLength', 'maxLength', 'pattern', 'format'] as const;
const NUMBER_KEYWORDS = ['minimum', 'maximum', 'exclusiveMinimum', 'exclusiveMaximum'] as const;
const HANDLED = new Set([
  'type', 'enum', 'const', 'properties', 'required', 'additionalProperties', 'items', 'minItems', 'maxItems', 'anyOf', 'oneOf', '$ref', 'nullable', 'allOf', 'maxProperties', 'propertyNames',
  ...STRING_KEYWORDS,
  ...NUMBER_KEYWORDS,
]);
const TYPES = ['string', 'number', 'integer', 'boolean', 'null', 'object', 'array'];
/** Bounds the grammar's size (a count past it is a schema this grammar was not made for). */
const MAX_ITEMS_BOUND = 4096;
/** Bounds string lengths (a count past it is refused). */
const MAX_LENGTH_BOUND = 1 << 24;
/** Enum values turned into text between two yields. */
const VALUES_PER_STEP = 1024;

type Steps<T> = Generator<void, T>;
/** A compiled value, or null when the schema admits no value within the bounds (a recursion cut at maxDepth, an empty range). */
type Compiled = GrammarNode | null;

const utf8 = (text: string) => Buffer.from(text, 'utf8');

/** Thrown when a value inside a recursive $ref would nest past maxDepth: that reference then admits no value. */
class RecursionCut extends Error {}

/** What a constrained string alternative was made of, so that alternatives can merge. */
interface StringSpec {
  readonly regex: Regex | null;
  readonly min: number;
  readonly max: number;
}

class SchemaCompiler {
  readonly ids: NodeIds;
  private any: UnionNode | undefined;
  private literalBytes = 0;
  private readonly patterns: PatternBudget;
  /** The document the current schema's $refs resolve in. */
  private root: unknown;
  /** Compiled $ref targets by depth; in progress: undefined in the map. */
  private readonly refs = new Map<unknown, Map<number, Compiled | undefined>>();
  /** Recursive $refs being compiled (a value too deep below one cuts the recursion there). */
  private recursing = 0;
  /** The texts of each literal node, and the makings of each constrained string (for merging alternatives). */
  private readonly literalTexts = new Map<GrammarNode, Uint8Array[]>();
  private readonly stringSpecs = new Map<GrammarNode, StringSpec>();

  constructor(private readonly limits: SchemaLimits) {
    this.ids = new NodeIds(limits.maxNodes);
    this.patterns = new PatternBudget(limits.maxPatternStates);
  }

  fail(path: string, message: string): never {
    throw new UnsupportedError(`jsonSchema${path}: ${message}`);
  }

  /** `depth`: the level the value sits at (the root's is 1); values deeper than maxDepth could never be written. */
  private checkDepth(depth: number, path: string): void {
    if (depth > this.limits.maxDepth) {
      if (this.recursing > 0) throw new RecursionCut();
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

  /** A whole schema document: its grammar, an UnsupportedError when it admits no value. */
  *compileRoot(schema: unknown, path: string, depth: number): Steps<GrammarNode> {
    this.root = schema;
    const node = yield* this.compile(schema, path, depth);
    if (node === null) this.fail(path, schema === false ? 'the schema false admits no value' : `the schema admits no value (within ${this.limits.maxDepth} levels of nesting)`);
    return node;
  }

  *compile(schema: unknown, path: string, depth: number): Steps<Compiled> {
    yield;
    // A reference nests nothing itself: its target is checked at the same depth (and a recursive one cut there: ref).
    const isRef = typeof schema === 'object' && schema !== null && !Array.isArray(schema) && (schema as Record<string, unknown>).$ref !== undefined;
    if (!isRef) this.checkDepth(depth, path);
    if (schema === true) return this.anyValue(depth, path);
    if (schema === false) return null;
    if (typeof schema !== 'object' || schema === null || Array.isArray(schema)) this.fail(path, 'a schema must be an object or a boolean');
    const s = schema as Record<string, unknown>;
    for (const keyword of Object.keys(s)) {
      if (!HANDLED.has(keyword) && !ANNOTATIONS.has(keyword)) this.fail(`${path}.${keyword}`, `the keyword ${keyword} is not supported in constrained output`);
    }
    if (s.$ref !== undefined) return yield* this.ref(s, path, depth);
    // allOf: merged into one schema where that is exact (lib/constrain/all-of.ts), refused by keyword otherwise.
    if (s.allOf !== undefined) return yield* this.compile(mergeAllOf(s, this.root, path), path, depth);
    if (s.nullable === true) {
      if (s.type === undefined || s.enum !== undefined || s.const !== undefined) this.fail(`${path}.nullable`, 'nullable is supported beside type only');
      const { nullable: _, ...rest } = s;
      const types = Array.isArray(s.type) ? s.type : [s.type];
      return yield* this.compile({ ...rest, type: types.includes('null') ? types : [...types, 'null'] }, path, depth);
    }
    if (s.nullable !== undefined && typeof s.nullable !== 'boolean') this.fail(`${path}.nullable`, 'nullable must be a boolean');
    if ('const' in s || s.enum !== undefined) return yield* this.literalsOf(s, path, depth);
    for (const keyword of ['anyOf', 'oneOf'] as const) {
      if (s[keyword] === undefined) continue;
      if (s.anyOf !== undefined && s.oneOf !== undefined) this.fail(path, 'anyOf beside oneOf is not supported');
      const alternatives = s[keyword];
      if (!Array.isArray(alternatives) || alternatives.length === 0) this.fail(`${path}.${keyword}`, `${keyword} must be a non-empty array`);
      const others = Object.keys(s).filter((k) => k !== keyword && !ANNOTATIONS.has(k));
      if (others.length > 0) this.fail(path, `${others[0]} beside ${keyword} is not supported`);
      const nodes: Compiled[] = [];
      for (let i = 0; i < alternatives.length; i++) nodes.push(yield* this.compile(alternatives[i], `${path}.${keyword}[${i}]`, depth + 1));
      return yield* this.union(nodes, `${path}.${keyword}`, depth);
    }
    const type = s.type ?? this.inferredType(s, path);
    if (type === undefined) return this.anyValue(depth, path);
    if (Array.isArray(type)) {
      if (type.length === 0) this.fail(`${path}.type`, 'type must not be an empty array');
      const nodes: Compiled[] = [];
      for (let i = 0; i < type.length; i++) nodes.push(yield* this.typed(type[i], s, `${path}.type[${i}]`, path, depth + 1));
      return yield* this.union(nodes, `${path}.type`, depth);
    }
    return yield* this.typed(type, s, `${path}.type`, path, depth);
  }

  /** The type that keywords without `type` imply (JSON Schema lets other types pass: this grammar writes the one they constrain). */
  private inferredType(s: Record<string, unknown>, path: string): string | undefined {
    const kinds = new Set<string>();
    if (s.properties !== undefined || s.required !== undefined || s.additionalProperties !== undefined || s.maxProperties !== undefined || s.propertyNames !== undefined) kinds.add('object');
    if (s.items !== undefined || s.minItems !== undefined || s.maxItems !== undefined) kinds.add('array');
    if (STRING_KEYWORDS.some((k) => s[k] !== undefined)) kinds.add('string');
    if (NUMBER_KEYWORDS.some((k) => s[k] !== undefined)) kinds.add('number');
    if (kinds.size > 1) this.fail(path, `keywords of several types (${[...kinds].join(', ')}) without a type are not supported`);
    return kinds.values().next().value;
  }

  private *ref(s: Record<string, unknown>, path: string, depth: number): Steps<Compiled> {
    const others = Object.keys(s).filter((k) => k !== '$ref' && !ANNOTATIONS.has(k));
    if (others.length > 0) this.fail(path, `${others[0]} beside $ref is not supported`);
    const target = resolvePointer(this.root, s.$ref, `jsonSchema${path}.$ref`);
    let byDepth = this.refs.get(target);
    if (byDepth === undefined) {
      byDepth = new Map();
      this.refs.set(target, byDepth);
    }
    if (byDepth.has(depth)) {
      const done = byDepth.get(depth);
      if (done === undefined) this.fail(`${path}.$ref`, `the reference ${JSON.stringify(s.$ref)} refers back to itself without nesting a value`);
      return done;
    }
    // A reference met again below itself is recursive: past maxDepth it admits no value instead of failing.
    const recursive = byDepth.size > 0;
    byDepth.set(depth, undefined);
    let node: Compiled;
    if (recursive) this.recursing++;
    try {
      node = yield* this.compile(target, `${path}.$ref`, depth);
    } catch (error) {
      if (!(recursive && error instanceof RecursionCut)) throw error;
      node = null;
    } finally {
      if (recursive) this.recursing--;
    }
    byDepth.set(depth, node);
    return node;
  }

  private *typed(type: unknown, s: Record<string, unknown>, typePath: string, path: string, depth: number): Steps<Compiled> {
    this.checkDepth(depth, path);
    if (typeof type !== 'string' || !TYPES.includes(type)) this.fail(typePath, `type must be one of ${TYPES.join(', ')}`);
    switch (type) {
      case 'string':
        return yield* this.string(s, path);
      case 'number':
      case 'integer':
        return yield* this.number(s, path, type === 'integer');
      case 'boolean':
        return yield* this.literalNode([utf8('true'), utf8('false')]);
      case 'null':
        return yield* this.literalNode([utf8('null')]);
      case 'object':
        return yield* this.object(s, path, depth);
      default:
        return yield* this.array(s, path, depth);
    }
  }

  private *literalNode(texts: Uint8Array[]): Steps<GrammarNode> {
    const node = new LiteralNode(this.ids, yield* ByteTrie.build(texts));
    this.literalTexts.set(node, texts);
    return node;
  }

  /** enum / const, each value kept when the keywords beside it accept it (judged by their own grammar). */
  private *literalsOf(s: Record<string, unknown>, path: string, depth: number): Steps<Compiled> {
    let values: unknown[];
    let at: string;
    if ('const' in s) {
      if (s.enum !== undefined) this.fail(path, 'enum beside const is not supported');
      values = [s.const];
      at = `${path}.const`;
    } else {
      if (!Array.isArray(s.enum) || s.enum.length === 0) this.fail(`${path}.enum`, 'enum must be a non-empty array');
      values = s.enum;
      at = `${path}.enum`;
    }
    const texts: Uint8Array[] = [];
    for (let i = 0; i < values.length; i++) {
      if (i % VALUES_PER_STEP === VALUES_PER_STEP - 1) yield;
      const text = JSON.stringify(values[i]);
      if (text === undefined) this.fail(`${at}[${i}]`, 'not a JSON value');
      this.countLiteralBytes(text.length, at); // a lower bound of the UTF-8 length: no buffer for a text past the bound
      const bytes = utf8(text);
      this.countLiteralBytes(bytes.length - text.length, at);
      texts.push(bytes);
    }
    const { const: _c, enum: _e, ...rest } = s;
    if (Object.keys(rest).some((k) => !ANNOTATIONS.has(k))) {
      // The keywords beside: a value stays when their grammar takes its text.
      const beside = yield* this.compile(rest, path, depth);
      const kept = beside === null ? [] : texts.filter((t) => {
        const end = advanceBytes(startState(beside), t);
        return end !== null && isComplete(end);
      });
      return kept.length === 0 ? null : yield* this.literalNode(kept);
    }
    return yield* this.literalNode(texts);
  }

  private count(s: Record<string, unknown>, keyword: string, path: string, bound: number): number | undefined {
    const v = s[keyword];
    if (v === undefined) return undefined;
    if (!Number.isInteger(v) || (v as number) < 0 || (v as number) > bound) this.fail(`${path}.${keyword}`, `${keyword} must be an integer in [0, ${bound}]`);
    return v as number;
  }

  private *string(s: Record<string, unknown>, path: string): Steps<Compiled> {
    const min = this.count(s, 'minLength', path, MAX_LENGTH_BOUND) ?? 0;
    const max = this.count(s, 'maxLength', path, MAX_LENGTH_BOUND) ?? Infinity;
    let regex: Regex | null = null;
    let dfa: CharDfa | null = null;
    if (s.pattern !== undefined) {
      if (typeof s.pattern !== 'string') this.fail(`${path}.pattern`, 'pattern must be a string');
      regex = parseRegex(s.pattern, `jsonSchema${path}.pattern`);
      dfa = yield* regexDfa(regex, this.patterns, `jsonSchema${path}.pattern`);
    }
    if (s.format !== undefined) {
      const source = typeof s.format === 'string' ? FORMAT_PATTERNS[s.format] : undefined;
      if (source === undefined) this.fail(`${path}.format`, `the format ${JSON.stringify(s.format)} is not supported in constrained output (supported: ${Object.keys(FORMAT_PATTERNS).join(', ')})`);
      const formatRegex = parseRegex(source, `jsonSchema${path}.format`);
      const formatDfa = yield* regexDfa(formatRegex, this.patterns, `jsonSchema${path}.format`);
      if (dfa === null) {
        regex = formatRegex;
        dfa = formatDfa;
      } else {
        regex = null; // an intersection: no regex to merge with
        dfa = yield* intersectDfa(dfa, formatDfa, this.patterns, `jsonSchema${path}.format`);
      }
    }
    if (max < min) return null;
    if (dfa === null && min === 0 && max === Infinity) return new StringNode(this.ids);
    const chars = yield* CharConstraint.build(dfa, min, max, this.patterns, `jsonSchema${path}`);
    const node = new CharStringNode(this.ids, chars);
    if (!node.admitsSome) return null;
    // A pattern or format alone can merge with other alternatives (an intersection or a length cannot).
    if (regex !== null && min === 0 && max === Infinity) this.stringSpecs.set(node, { regex, min, max });
    return node;
  }

  private bound(s: Record<string, unknown>, keyword: string, path: string): number | undefined {
    const v = s[keyword];
    if (v === undefined) return undefined;
    if (typeof v !== 'number' || !Number.isFinite(v)) this.fail(`${path}.${keyword}`, `${keyword} must be a finite number (draft 4's boolean exclusive bounds are not supported)`);
    return v;
  }

  private *number(s: Record<string, unknown>, path: string, integer: boolean): Steps<Compiled> {
    const minimum = this.bound(s, 'minimum', path);
    const maximum = this.bound(s, 'maximum', path);
    const exMin = this.bound(s, 'exclusiveMinimum', path);
    const exMax = this.bound(s, 'exclusiveMaximum', path);
    if (minimum === undefined && maximum === undefined && exMin === undefined && exMax === undefined) return new NumberNode(this.ids, integer);
    // The tighter of each pair (an exclusive bound equal to an inclusive one is the tighter).
    let min = -Infinity;
    let exclusiveMin = false;
    if (minimum !== undefined) min = minimum;
    if (exMin !== undefined && exMin >= min) [min, exclusiveMin] = [exMin, true];
    let max = Infinity;
    let exclusiveMax = false;
    if (maximum !== undefined) max = maximum;
    if (exMax !== undefined && exMax <= max) [max, exclusiveMax] = [exMax, true];
    return yield* NumericRangeNode.build(this.ids, integer, { min, max, exclusiveMin, exclusiveMax }, this.patterns, `jsonSchema${path}`);
  }

  /**
   * One of `alternatives` (those that admit no value left out). Alternatives that start alike merge
   * where the union of their values is one node: literals into one set, strings and numbers into
   * the plain string or number that subsumes them, patterns into one alternation; any other
   * overlap (objects sharing keys, ...) is an OverlapUnionNode, which runs them side by side.
   */
  private *union(alternatives: readonly Compiled[], path: string, depth: number): Steps<Compiled> {
    let nodes = alternatives.filter((n): n is GrammarNode => n !== null);
    if (nodes.length <= 1) return nodes[0] ?? null;
    const isText = (n: GrammarNode) => this.literalTexts.get(n)?.every((t) => t[0] === 0x22) ?? false;
    const isNumeric = (n: GrammarNode) => n instanceof NumericRangeNode || n instanceof NumberNode || (this.literalTexts.get(n)?.every((t) => t[0] === 0x2d || (t[0] >= 0x30 && t[0] <= 0x39)) ?? false);
    // A plain string takes every string; a plain number every number.
    if (nodes.some((n) => n instanceof StringNode)) {
      const plain = nodes.find((n) => n instanceof StringNode)!;
      nodes = nodes.filter((n) => !(n instanceof StringNode || n instanceof CharStringNode || isText(n)) || n === plain);
    }
    const number = nodes.find((n) => n instanceof NumberNode && !(n as NumberNode).integer);
    if (number !== undefined) nodes = nodes.filter((n) => n === number || !isNumeric(n));
    // Patterns without lengths and string literals: one alternation.
    const mergeable = nodes.filter((n) => (this.stringSpecs.get(n)?.regex != null && this.stringSpecs.get(n)!.min === 0 && this.stringSpecs.get(n)!.max === Infinity) || isText(n));
    if (mergeable.some((n) => n instanceof CharStringNode) && mergeable.length > 1) {
      const regexes: Regex[] = [];
      for (const n of mergeable) {
        const spec = this.stringSpecs.get(n);
        if (spec !== undefined) regexes.push(spec.regex!);
        else for (const t of this.literalTexts.get(n)!) regexes.push(literalRegex(JSON.parse(Buffer.from(t).toString('utf8')) as string));
      }
      const regex: Regex = { kind: 'alt', items: regexes };
      const dfa = yield* regexDfa(regex, this.patterns, `jsonSchema${path}`);
      const merged = new CharStringNode(this.ids, yield* CharConstraint.build(dfa, 0, Infinity, this.patterns, `jsonSchema${path}`));
      this.stringSpecs.set(merged, { regex, min: 0, max: Infinity });
      nodes = [...nodes.filter((n) => !mergeable.includes(n)), merged];
    }
    // Literals: one set.
    const literals = nodes.filter((n) => this.literalTexts.has(n));
    if (literals.length > 1) {
      const merged = yield* this.literalNode(literals.flatMap((n) => this.literalTexts.get(n)!));
      nodes = [...nodes.filter((n) => !literals.includes(n)), merged];
    }
    if (nodes.length === 1) return nodes[0];
    // Alternatives told apart by their first byte: a UnionNode; others (objects sharing keys, ...) run side by side.
    if (!this.firstBytesClash(nodes)) {
      const union = new UnionNode(this.ids);
      union.setAlternatives(nodes);
      return union;
    }
    return new OverlapUnionNode(this.ids, nodes, depth);
  }

  private firstBytesClash(nodes: readonly GrammarNode[]): boolean {
    const seen = new Set<number>();
    for (const node of nodes) {
      for (const b of firstBytes(node)) {
        if (seen.has(b)) return true;
        seen.add(b);
      }
    }
    return false;
  }

  private *object(s: Record<string, unknown>, path: string, depth: number): Steps<Compiled> {
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
    const maxProperties = this.count(s, 'maxProperties', path, MAX_ITEMS_BOUND);
    const extra = additionalProperties !== undefined && typeof additionalProperties !== 'boolean';
    const anyExtra = additionalProperties === undefined || additionalProperties === true || (extra && Object.keys(additionalProperties as object).every((k) => ANNOTATIONS.has(k)));
    if (declared.length === 0 && additionalProperties !== false) {
      // A map (z.record): any keys, each value of additionalProperties' schema; at most maxProperties members.
      if (anyExtra && maxProperties === undefined && s.propertyNames === undefined) return this.freeObject(depth, path);
      this.checkDepth(depth, path);
      const keys = s.propertyNames === undefined ? new StringNode(this.ids) : yield* this.compile(s.propertyNames, `${path}.propertyNames`, depth + 1);
      if (keys !== null && !(keys instanceof StringNode || keys instanceof CharStringNode || (this.literalTexts.get(keys)?.every((t) => t[0] === 0x22) ?? false))) {
        this.fail(`${path}.propertyNames`, 'propertyNames must be a schema of strings');
      }
      const values = anyExtra ? this.anyValue(depth + 1, `${path}.additionalProperties`) : yield* this.compile(additionalProperties, `${path}.additionalProperties`, depth + 1);
      const node = new FreeObjectNode(this.ids, keys ?? new StringNode(this.ids), values === null || keys === null ? 0 : (maxProperties ?? Infinity));
      node.values = values ?? node;
      return node;
    }
    if (extra && !anyExtra) {
      this.fail(`${path}.additionalProperties`, 'a schema for undeclared properties beside declared properties is not supported (without properties it is: a map whose values follow it)');
    }
    if (s.propertyNames !== undefined) this.fail(`${path}.propertyNames`, 'propertyNames beside declared properties is not supported (without properties it is: the keys of a map)');
    if (maxProperties !== undefined && maxProperties < declared.length) {
      this.fail(`${path}.maxProperties`, `maxProperties below the count of declared properties (${declared.length}) is not supported`);
    }
    const keys: Uint8Array[] = [];
    const members = [];
    for (const [name, sub] of declared) {
      const node = yield* this.compile(sub, `${path}.properties[${JSON.stringify(name)}]`, depth + 1);
      if (node === null) {
        if (requiredNames.has(name)) return null; // a required property no value fits
        continue; // an optional one that can never appear
      }
      const key = JSON.stringify(name).slice(1); // the key's JSON text after its opening quote
      this.countLiteralBytes(key.length, `${path}.properties`);
      const bytes = utf8(key);
      this.countLiteralBytes(bytes.length - key.length, `${path}.properties`);
      keys.push(bytes);
      members.push({ name, node, required: requiredNames.has(name) });
    }
    return new ObjectNode(this.ids, members, yield* ByteTrie.build(keys, true));
  }

  private *array(s: Record<string, unknown>, path: string, depth: number): Steps<Compiled> {
    const minItems = this.count(s, 'minItems', path, MAX_ITEMS_BOUND) ?? 0;
    let maxItems = this.count(s, 'maxItems', path, MAX_ITEMS_BOUND);
    if (maxItems !== undefined && maxItems < minItems) return null;
    if (Array.isArray(s.items)) this.fail(`${path}.items`, 'tuple items (an array of schemas) are not supported');
    const items = s.items === undefined ? this.anyValue(depth + 1, `${path}.items`) : yield* this.compile(s.items, `${path}.items`, depth + 1);
    if (items === null) {
      if (minItems > 0) return null;
      maxItems = 0; // only the empty array
    }
    const node = new ArrayNode(this.ids, minItems, maxItems);
    node.items = items ?? node;
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
  const root = yield* compiler.compileRoot(schema, '', 1);
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
  for (const { schema, path } of schemas) roots.push(yield* compiler.compileRoot(schema, path, depth));
  return { roots, ids: compiler.ids };
}
