/** JSON-schema constrained decoding: a schema compiled to a per-token constraint over a model's vocabulary. */
export { compileJsonSchema } from './json-schema';
export type { JsonSchema } from './json-schema';
export { CompiledJsonSchema, compiledJsonSchema, prepareJsonSchema } from './compiled-schema';
export { SCHEMA_LIMITS } from './limits';
export type { SchemaLimits } from './limits';
export { JsonGrammar, TokenConstraint, jsonSchemaConstraint } from './token-constraint';
export { vocabularyIndex } from './vocabulary-index';
export type { VocabularyIndex } from './vocabulary-index';
