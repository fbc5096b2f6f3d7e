/**
 * The API reference's entry point (typedoc.json; `npm run docs:api`): every export of lib/index.ts,
 * with the ones index.ts loads lazily (declared there as `typeof` their module's export) named by
 * their own declarations, so that the reference shows their signatures and doc comments.
 * test/docs/api-reference.test.ts checks that these are the same objects as lib/index.ts exports.
 *
 * @packageDocumentation
 */
export * from '../lib/index';
export { convert } from '../lib/formats/writing/convert';
export { tokenizerFromData, tokenizerFromDataAsync } from '../lib/tokenizers/from-data';
export { dequantize } from '../lib/formats/quantization/dequantize';
export { Embedder, loadEmbedder, similarity } from '../lib/models/embedder';
export { Reranker, loadReranker } from '../lib/models/reranker';
export { MoondreamModel, loadMoondream } from '../lib/models/moondream';
export { VisionModel } from '../lib/models/vision-model';
export { ChatSession } from '../lib/models/chat-session';
export { compileJsonSchema, prepareJsonSchema } from '../lib/constrain';
export { detectToolFormat, parseToolCalls } from '../lib/tools';
export { createHandler, createServer, ModelScheduler } from '../lib/server';
export { StageServer } from '../lib/pipeline/stage-server';
