/**
 * A JSON schema compiled once: the grammar, the schema's JSON text (what caches key it by) and the
 * grammar's bytes. prepareJsonSchema compiles in slices of a few ms (the event loop keeps turning)
 * and shares one compile between the requests that send the same schema at once or within the
 * cache's budget; compiledJsonSchema compiles at once.
 */
import type { GrammarNode } from './automaton';
import { ByteBudgetCache } from './byte-budget-cache';
import { checkSchemaNesting, compileJsonSchemaSteps, type JsonSchema } from './json-schema';
import { SCHEMA_CACHE_BYTES } from './limits';
import { inSlices, toEnd } from './slices';

/** A schema compiled by prepareJsonSchema, to pass as `jsonSchema` (generation then compiles nothing). */
export class CompiledJsonSchema {
  constructor(
    readonly root: GrammarNode,
    /** The schema's JSON text. */
    readonly key: string,
    /** The grammar's memory (an estimate: tables counted exactly, nodes by a fixed size). */
    readonly bytes: number,
  ) {}
}

const compiled = new ByteBudgetCache<string, CompiledJsonSchema>(SCHEMA_CACHE_BYTES, (c) => c.bytes + 2 * c.key.length);
const compiling = new Map<string, Promise<CompiledJsonSchema>>();

function schemaKey(schema: JsonSchema): string {
  checkSchemaNesting(schema);
  const key = JSON.stringify(schema);
  if (typeof key !== 'string') throw new TypeError('jsonSchema must be a JSON value (an object or a boolean)');
  return key;
}

/** `schema` compiled in slices (UnsupportedError, ConstraintError as compileJsonSchema throws them, as a rejection). */
export function prepareJsonSchema(schema: JsonSchema): Promise<CompiledJsonSchema> {
  let key: string;
  try {
    key = schemaKey(schema);
  } catch (error) {
    return Promise.reject(error);
  }
  const done = compiled.get(key);
  if (done !== undefined) return Promise.resolve(done);
  let pending = compiling.get(key);
  if (pending === undefined) {
    pending = inSlices(compileJsonSchemaSteps(schema)).then(({ root, bytes }) => new CompiledJsonSchema(root, key, bytes));
    compiling.set(key, pending);
    const settled = () => compiling.delete(key);
    pending.then((c) => {
      settled();
      compiled.set(key, c);
    }, settled);
  }
  return pending;
}

/** `schema` compiled at once (or as compiled before), or a compiled one as it is. */
export function compiledJsonSchema(schema: JsonSchema | CompiledJsonSchema): CompiledJsonSchema {
  if (schema instanceof CompiledJsonSchema) return schema;
  const key = schemaKey(schema);
  let done = compiled.get(key);
  if (done === undefined) {
    const { root, bytes } = toEnd(compileJsonSchemaSteps(schema));
    done = new CompiledJsonSchema(root, key, bytes);
    compiled.set(key, done);
  }
  return done;
}
