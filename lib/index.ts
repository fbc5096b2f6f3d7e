/**
 * weightmap: memory-mapped LLM weights and fast CPU inference.
 *
 *   import { readWeights, convert, loadModel, loadEmbedder } from 'weightmap';
 *
 * The exports a first token does not need (conversion, tokenizers built from data, embeddings,
 * Moondream, chat sessions, JSON schemas, the server, pipeline stages) load their modules when
 * first read (defineLazyExports): require('weightmap') loads 57 of lib's modules, not 135
 * (scripts/bench/ttft.js).
 */
import { defineLazyExports } from './lazy';
import type * as ChatSessionModule from './chat-session';
import type * as FromDataModule from './tokenizers/from-data';
import type * as ConstrainModule from './constrain';
import type * as ToolsModule from './tools';
import type * as ConvertModule from './convert';
import type * as DequantizeModule from './dequantize';
import type * as EmbedderModule from './embedder';
import type * as MoondreamModule from './moondream';
import type * as ServerModule from './server';
import type * as StageServerModule from './pipeline/stage-server';

export { AbortError, ConstraintError, DisposedError, UnsupportedError, WeightFormatError } from './errors';
export type { ConstraintErrorCode, WeightFormatErrorCode, WeightFormatErrorDetails } from './errors';
export { MappedSource, mapFile } from './mapping';
export { detectFormat, formatModule, readWeights, writeWeights, FORMATS } from './formats';
export type { FormatModule, ReadOptions, WriteOptions, WriteProgress } from './formats';
export type { Probe } from './formats/types';
export type { ConvertOptions, ConvertResult } from './convert';
export { closeWeights, findTensor, numel, DTYPE_BYTES } from './weights';
export type { DType, GgmlBlockDType, FormatName, ModelWeights, PlainDType, TensorView, TokenizerData } from './weights';
export type { Architecture, ModelConfig, UnknownConfig } from './architectures/model-config';
export type { DecoderConfig } from './architectures/decoder';
export type { TllmConfig } from './architectures/tllm';
export type { BertConfig } from './architectures/bert';
export type { MoondreamConfig } from './architectures/moondream';
export { loadTokenizer, loadTokenizerSync } from './tokenizer-loading';
export type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer, TokenizerKind } from './tokenizers';
export type { EmbedOptions, EmbedderInfo, EmbedderQuant, LoadEmbedderOptions, Pooling } from './embedder';
export { Model, loadModel } from './model';
export type { ChatOptions, ChatPrompt, KvCacheUsage, LoadModelOptions, ModelInfo } from './model';
export type { AnswerOptions, EncodeImageOptions, ImageInput, RawImage } from './moondream';
export type { ChatModel, ChatSessionOptions, PromptOptions } from './chat-session';
export { startGeneration, StopStringFilter } from './generate';
export type { TokenLogprob, ToolCallConstraint } from './generate';
export type { GenerateOptions, GeneratedPiece, Generation, GenerationHost, LanguageSession, SessionLease, StepOptions, StopReason } from './generate';
export type { ContextShiftOptions } from './context-shift';
export { resolveSampling, SAMPLING_DEFAULTS } from './sampling';
export type { ResolvedParams, ResolvedSampling, SamplingOptions } from './sampling';
export { ajc1ChatTemplate, jinjaChatTemplate, qwen3ChatTemplate, splitThinking } from './chat';
export type { Ajc1TemplateTexts, ChatMessage, ChatRenderOptions, ChatRole, ChatTemplate, JinjaTemplateTokens } from './chat';
export type { JsonSchema } from './constrain';
export type { ParsedReply, ToolCall, ToolCallFormat, ToolChatOptions, ToolChoice, ToolDefinition, ToolFamily } from './tools';
export type { ToolChatLoopOptions, ToolChatResult, ToolHandlerContext, ToolWithHandler } from './tool-agent';
export type { GenerationRequest, ScheduledGeneration, SchedulerLimits, AccessLogEntry, BrowserPolicy, ConnectionLimits, DrainOptions, ServeHandler, ServeOptions, ServerOptions, ServerMetrics, ModelMetrics, MetricsSource, WeightmapServer, ModelPool, ServedModelSpec, ServedKind, PoolListing, Lease, UnloadReason, Served, ServedTextModel, ServedEmbedder, AdmissionQueue } from './server';
export type { StageMetrics, StageObserver, StageRefusal } from './pipeline/stage-metrics';
export { PipelineError } from './errors';
export type { PipelineErrorCode } from './errors';
export type { StageOptions } from './pipeline/stage-server';
export type { LayerRange } from './pipeline/layers';
export type { StageInfo } from './pipeline/schema';
export type { TlsFiles } from './pipeline/auth';
export type { PipelineOptions, PipelineSpec, PipelineStageSpec } from './pipeline/coordinator';

export declare const convert: typeof ConvertModule.convert;
export declare const tokenizerFromData: typeof FromDataModule.tokenizerFromData;
export declare const tokenizerFromDataAsync: typeof FromDataModule.tokenizerFromDataAsync;
export declare const dequantize: typeof DequantizeModule.dequantize;
export declare const Embedder: typeof EmbedderModule.Embedder;
export type Embedder = EmbedderModule.Embedder;
export declare const loadEmbedder: typeof EmbedderModule.loadEmbedder;
export declare const similarity: typeof EmbedderModule.similarity;
export declare const MoondreamModel: typeof MoondreamModule.MoondreamModel;
export type MoondreamModel = MoondreamModule.MoondreamModel;
export declare const loadMoondream: typeof MoondreamModule.loadMoondream;
export declare const ChatSession: typeof ChatSessionModule.ChatSession;
export type ChatSession = ChatSessionModule.ChatSession;
export declare const compileJsonSchema: typeof ConstrainModule.compileJsonSchema;
/** Compiles a JSON schema once, in slices that keep the event loop turning; pass the result as `jsonSchema`. */
export declare const prepareJsonSchema: typeof ConstrainModule.prepareJsonSchema;
export type { CompiledJsonSchema, SchemaLimits } from './constrain';
/** Parses a model's reply into text and tool calls, in its template family's format. */
export declare const parseToolCalls: typeof ToolsModule.parseToolCalls;
/** The tool-call format a chat template writes (hermes, Mistral, Llama 3, or the generic fallback). */
export declare const detectToolFormat: typeof ToolsModule.detectToolFormat;
export declare const createHandler: typeof ServerModule.createHandler;
export declare const createServer: typeof ServerModule.createServer;
export declare const ModelScheduler: typeof ServerModule.ModelScheduler;
export type ModelScheduler = ServerModule.ModelScheduler;
export declare const StageServer: typeof StageServerModule.StageServer;
export type StageServer = StageServerModule.StageServer;

defineLazyExports(exports, {
  convert: () => require('./convert') as typeof ConvertModule,
  tokenizerFromData: () => require('./tokenizers/from-data') as typeof FromDataModule,
  tokenizerFromDataAsync: () => require('./tokenizers/from-data') as typeof FromDataModule,
  dequantize: () => require('./dequantize') as typeof DequantizeModule,
  Embedder: () => require('./embedder') as typeof EmbedderModule,
  loadEmbedder: () => require('./embedder') as typeof EmbedderModule,
  similarity: () => require('./embedder') as typeof EmbedderModule,
  MoondreamModel: () => require('./moondream') as typeof MoondreamModule,
  loadMoondream: () => require('./moondream') as typeof MoondreamModule,
  ChatSession: () => require('./chat-session') as typeof ChatSessionModule,
  compileJsonSchema: () => require('./constrain') as typeof ConstrainModule,
  prepareJsonSchema: () => require('./constrain') as typeof ConstrainModule,
  parseToolCalls: () => require('./tools') as typeof ToolsModule,
  detectToolFormat: () => require('./tools') as typeof ToolsModule,
  createHandler: () => require('./server') as typeof ServerModule,
  createServer: () => require('./server') as typeof ServerModule,
  ModelScheduler: () => require('./server') as typeof ServerModule,
  StageServer: () => require('./pipeline/stage-server') as typeof StageServerModule,
});
