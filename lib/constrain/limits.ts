/**
 * The bounds of a compiled JSON-schema grammar: the one source of each (a schema past one is a
 * ConstraintError naming it; the server answers 400). Together they bound the compile's work and
 * memory: every schema keyword visited makes a node or nests a level, literal bytes are walked
 * a fixed number of times, and each pattern's automaton is built state by state within its bound.
 */
import { MAX_DEPTH } from './automaton';

/** The bounds of a compiled JSON-schema grammar (SCHEMA_LIMITS holds the defaults). */
export interface SchemaLimits {
  readonly maxNodes: number;
  readonly maxLiteralBytes: number;
  readonly maxDepth: number;
  readonly maxNesting: number;
  readonly maxPatternStates: number;
}

export const SCHEMA_LIMITS: SchemaLimits = Object.freeze({
  /** Grammar nodes (one per typed value, property value, item schema, union, literal set). */
  maxNodes: 10_000,
  /** Bytes of all literal texts together: enum and const values (as JSON) and property names. */
  maxLiteralBytes: 256 * 1024,
  /** Levels values nest (each object, array, union and value is one): the automaton's stack. */
  maxDepth: MAX_DEPTH,
  /** Levels the schema document itself nests (objects and arrays, enum values included): it is walked and written out as JSON. */
  maxNesting: 256,
  /**
   * Automaton states of all patterns, formats, string lengths and number ranges together (a length
   * table of a pattern counts a state per 256 cells): a pattern whose automaton explodes is refused.
   */
  maxPatternStates: 16_384,
});

/** Grammars over one vocabulary kept for reuse (with their token masks), by their bytes: the masks they may hold count in full. */
export const GRAMMAR_CACHE_BYTES = 64 * 1024 * 1024;

/** Compiled schemas kept for reuse (by their JSON text), by the bytes of their grammars. */
export const SCHEMA_CACHE_BYTES = 16 * 1024 * 1024;
