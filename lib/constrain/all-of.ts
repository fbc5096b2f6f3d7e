/**
 * `allOf` merged into one schema where the merge is exact: types intersected, properties joined
 * (a property in several parts is the allOf of its schemas), required joined, bounds tightened
 * (the larger minimum, the smaller maximum), enum/const intersected, `additionalProperties: false`
 * of a part keeping only the properties it declares; other keywords only when the parts agree on
 * them. What does not merge exactly (two different patterns, anyOf inside a part, ...) is an
 * UnsupportedError naming the keyword, never a looser schema.
 */
import { UnsupportedError } from '../base/errors';
import { resolvePointer } from './schema-pointer';

type Schema = Record<string, unknown>;

/** Thrown when a part is `false` or the types share none: the whole admits no value. */
const NO_VALUE = new Error('no value');

const ANNOTATION = new Set(['title', 'description', 'default', 'examples', '$comment', 'deprecated', 'readOnly', 'writeOnly', 'markdownDescription']);
const LOWER = ['minimum', 'exclusiveMinimum', 'minLength', 'minItems'];
const UPPER = ['maximum', 'exclusiveMaximum', 'maxLength', 'maxItems'];
const same = (a: unknown, b: unknown) => JSON.stringify(a) === JSON.stringify(b);
const typesOf = (t: unknown): string[] => (Array.isArray(t) ? (t as string[]) : [t as string]).flatMap((x) => (x === 'number' ? ['number', 'integer'] : [x]));

/** One part as a plain schema: a $ref followed, booleans as schemas, nested allOf flattened. */
function parts(schema: Schema, root: unknown, path: string, out: Schema[] = []): Schema[] {
  const { allOf, ...rest } = schema;
  if (!Array.isArray(allOf) || allOf.length === 0) throw new UnsupportedError(`jsonSchema${path}.allOf: allOf must be a non-empty array`);
  out.push(rest);
  allOf.forEach((part, i) => {
    const at = `${path}.allOf[${i}]`;
    let s: unknown = part;
    for (let hops = 0; typeof s === 'object' && s !== null && '$ref' in s && Object.keys(s).length === 1; hops++) {
      if (hops > 32) throw new UnsupportedError(`jsonSchema${at}.$ref: references that do not end`);
      s = resolvePointer(root, (s as Schema).$ref, `jsonSchema${at}.$ref`);
    }
    if (s === true) return;
    if (s === false) throw NO_VALUE;
    if (typeof s !== 'object' || s === null || Array.isArray(s)) throw new UnsupportedError(`jsonSchema${at}: a schema must be an object or a boolean`);
    if ((s as Schema).allOf !== undefined) parts(s as Schema, root, at, out);
    else out.push(s as Schema);
  });
  return out;
}

/** The allOf at `path` of `schema` as one schema (`root`: the document its $refs resolve in); false when it admits no value. */
export function mergeAllOf(schema: Schema, root: unknown, path: string): Schema | false {
  let all: Schema[];
  try {
    all = parts(schema, root, path);
  } catch (error) {
    if (error === NO_VALUE) return false;
    throw error;
  }
  const merged: Schema = {};
  let closedTo: Set<string> | undefined;
  for (const part of all) {
    for (const [key, value] of Object.entries(part)) {
      if (ANNOTATION.has(key)) continue;
      const at = `${path}.allOf: ${key}`;
      const had = merged[key];
      if (had === undefined) {
        merged[key] = value;
      } else if (key === 'type') {
        const both = typesOf(had).filter((t) => typesOf(value).includes(t));
        if (both.length === 0) return false;
        merged.type = both.includes('number') ? both.filter((t) => t !== 'integer') : both;
      } else if (key === 'properties') {
        const joined: Schema = { ...(had as Schema) };
        for (const [name, sub] of Object.entries(value as Schema)) joined[name] = name in joined ? { allOf: [joined[name], sub] } : sub;
        merged.properties = joined;
      } else if (key === 'required') {
        merged.required = [...new Set([...(had as string[]), ...(value as string[])])];
      } else if (LOWER.includes(key)) {
        merged[key] = Math.max(had as number, value as number);
      } else if (UPPER.includes(key)) {
        merged[key] = Math.min(had as number, value as number);
      } else if (key === 'enum' || key === 'const') {
        const list = (k: string, v: unknown) => (k === 'const' ? [v] : (v as unknown[]));
        merged.enum = list(key, had).filter((a) => list(key, value).some((b) => same(a, b)));
      } else if (key === 'items') {
        merged.items = { allOf: [had, value] };
      } else if (key === 'additionalProperties') {
        merged.additionalProperties = had === false || value === false ? false : same(had, value) ? had : unsupported(at);
      } else if (!same(had, value)) {
        unsupported(at);
      }
    }
    // A part closed to its own properties: only those may appear in the whole.
    if (part.additionalProperties === false) {
      const own = new Set(Object.keys((part.properties as Schema) ?? {}));
      closedTo = closedTo === undefined ? own : new Set([...closedTo].filter((n) => own.has(n)));
    }
  }
  if ('const' in merged && 'enum' in merged) delete merged.const;
  if (Array.isArray(merged.enum) && merged.enum.length === 0) return false;
  if (Array.isArray(merged.type) && merged.type.length === 1) merged.type = merged.type[0];
  if (closedTo !== undefined) {
    const props = (merged.properties ?? {}) as Schema;
    merged.properties = Object.fromEntries(Object.entries(props).map(([n, s]) => [n, closedTo!.has(n) ? s : false]));
    merged.additionalProperties = false;
  }
  return merged;
}

function unsupported(at: string): never {
  throw new UnsupportedError(`jsonSchema${at}: the parts of allOf disagree on it in a way that does not merge into one schema`);
}
