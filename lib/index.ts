/**
 * weightmap: memory-mapped LLM weights and fast CPU inference.
 *
 *   import { readWeights, convert, loadModel, loadEmbedder, loadReranker } from 'weightmap';
 *
 * The exports a first token does not need (conversion, tokenizers built from data, embeddings,
 * rerankers, Moondream, chat sessions, JSON schemas, the server, pipeline stages) load their modules when
 * first read (defineLazyExports): require('weightmap') loads 57 of lib's modules, not 135
 * (scripts/bench/ttft.js).
 */
import { defineLazyExports } from './base/lazy';
import type * as ChatSessionModule from './models/chat-session';
import type * as FromDataModule from './tokenizers/from-data';
import type * as ConstrainModule from './constrain';
import type * as ToolsModule from './tools';
import type * as ConvertModule from './formats/writing/convert';
import type * as DequantizeModule from './formats/quantization/dequantize';
import type * as EmbedderModule from './models/embedder';
import type * as RerankerModule from './models/reranker';
import type * as MoondreamModule from './models/moondream';
import type * as VisionModelModule from './models/vision-model';
import type * as ServerModule from './server';
import type * as StageServerModule from './pipeline/stage-server';

export { AbortError, ConstraintError, DisposedError, UnsupportedError, WeightFormatError } from './base/errors';
export type { ConstraintErrorCode, WeightFormatErrorCode, WeightFormatErrorDetails } from './base/errors';
export { MappedSource, mapFile } from './addon/mapping';
export { detectFormat, formatModule, readWeights, writeWeights, FORMATS } from './formats';
export type { FormatModule, ReadOptions, WriteOptions, WriteProgress } from './formats';
export type { Probe } from './formats/types';
export type { ConvertOptions, ConvertResult } from './formats/writing/convert';
export { closeWeights, findTensor, numel, DTYPE_BYTES } from './addon/weights';
export type { DType, GgmlBlockDType, FormatName, ModelWeights, PlainDType, TensorView, TokenizerData } from './addon/weights';
export type { Architecture, ModelConfig, UnknownConfig } from './architectures/model-config';
export type { DecoderConfig } from './architectures/decoder';
export type { TllmConfig } from './architectures/tllm';
export type { BertClassifierConfig, BertConfig, BertModelType } from './architectures/bert';
export type { MoondreamConfig } from './architectures/moondream';
export type { ClipActivation, ClipConfig, ClipProjectorType, ImageLayout } from './architectures/clip';
export { loadTokenizer, loadTokenizerSync } from './tokenizer-loading';
export type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer, TokenizerKind } from './tokenizers';
export type { EmbedOptions, EmbedderInfo, EmbedderQuant, LoadEmbedderOptions, Pooling } from './models/embedder';
export type { LoadRerankerOptions, PairScores, PairTruncation, RankOptions, RankedDocument, RerankerInfo, RerankerKind, ScoreActivation } from './models/reranker';
export type { PairLayout, PairSpecials } from './tokenizers/pair';
export { Model, loadModel } from './models/model';
export type { ChatOptions, ChatPrompt, KvCacheUsage, LoadModelOptions, ModelInfo } from './models/model';
export type { AnswerOptions, EncodeImageOptions, ImageInput, RawImage } from './models/moondream';
export type { ChatContentPart, VisionChatMessage } from './models/vision-model';
export type { ChatModel, ChatSessionOptions, PromptOptions } from './models/chat-session';
export { startGeneration, StopStringFilter } from './generation/generate';
export type { TokenLogprob, ToolCallConstraint } from './generation/generate';
export type { GenerateOptions, GeneratedPiece, Generation, GenerationHost, LanguageSession, SessionLease, StepOptions, StopReason } from './generation/generate';
export type { ContextShiftOptions } from './generation/context-shift';
export { promptLookupDraft } from './generation/speculative';
export type { DraftModel, DraftSource, DraftTarget, SpeculativeOptions, SpeculativeStats } from './generation/speculative';
export { resolveSampling, SAMPLING_DEFAULTS } from './generation/sampling';
export type { ResolvedParams, ResolvedSampling, SamplingOptions } from './generation/sampling';
export { ajc1ChatTemplate, jinjaChatTemplate, qwen3ChatTemplate, splitThinking } from './generation/chat';
export { HARMONY_MARKERS, HarmonyStreamer, isHarmonyTemplate, parseHarmonyHeader, parseHarmonyReply } from './generation/harmony';
export type { HarmonyHeader, HarmonyPiece, HarmonyReply } from './generation/harmony';
export type { Ajc1TemplateTexts, ChatMessage, ChatRenderOptions, ChatRole, ChatTemplate, JinjaTemplateTokens } from './generation/chat';
export type { JsonSchema } from './constrain';
export type { ParsedReply, ToolCall, ToolCallFormat, ToolChatOptions, ToolChoice, ToolDefinition, ToolFamily } from './tools';
export type { ToolChatLoopOptions, ToolChatResult, ToolHandlerContext, ToolWithHandler } from './models/tool-agent';
export type { GenerationRequest, RequestFields, ScheduledGeneration, SchedulerLimits, AccessLogEntry, BrowserPolicy, ConnectionLimits, DrainOptions, ServeHandler, ServeOptions, ServerOptions, ServerMetrics, ModelMetrics, MetricsSource, WeightmapServer, ModelPool, ServedModelSpec, ServedKind, PoolListing, Lease, UnloadReason, Served, ServedByKind, ServedTextModel, ServedEmbedder, ServedReranker, AdmissionQueue } from './server';
export type { StageMetrics, StageObserver, StageRefusal } from './pipeline/stage-metrics';
export { PipelineError } from './base/errors';
export type { PipelineErrorCode } from './base/errors';
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
export declare const Reranker: typeof RerankerModule.Reranker;
export type Reranker = RerankerModule.Reranker;
export declare const loadReranker: typeof RerankerModule.loadReranker;
export declare const MoondreamModel: typeof MoondreamModule.MoondreamModel;
export type MoondreamModel = MoondreamModule.MoondreamModel;
export declare const loadMoondream: typeof MoondreamModule.loadMoondream;
/** A language model with an mmproj's vision encoder: what loadModel(path, { mmproj }) returns. */
export declare const VisionModel: typeof VisionModelModule.VisionModel;
export type VisionModel = VisionModelModule.VisionModel;
export declare const ChatSession: typeof ChatSessionModule.ChatSession;
export type ChatSession = ChatSessionModule.ChatSession;
export declare const compileJsonSchema: typeof ConstrainModule.compileJsonSchema;
/** Compiles a JSON schema once, in slices that keep the event loop turning; pass the result as `jsonSchema`. */
export declare const prepareJsonSchema: typeof ConstrainModule.prepareJsonSchema;
export type { CompiledJsonSchema, SchemaLimits } from './constrain';
/** Parses a model's reply into text and tool calls, in its template family's format. */
export declare const parseToolCalls: typeof ToolsModule.parseToolCalls;
/** The tool-call format a chat template writes (hermes, Mistral, Llama 3, Harmony, or the generic fallback). */
export declare const detectToolFormat: typeof ToolsModule.detectToolFormat;
export declare const createHandler: typeof ServerModule.createHandler;
export declare const createServer: typeof ServerModule.createServer;
export declare const ModelScheduler: typeof ServerModule.ModelScheduler;
export type ModelScheduler = ServerModule.ModelScheduler;
export declare const StageServer: typeof StageServerModule.StageServer;
export type StageServer = StageServerModule.StageServer;

defineLazyExports(exports, {
  convert: () => require('./formats/writing/convert') as typeof ConvertModule,
  tokenizerFromData: () => require('./tokenizers/from-data') as typeof FromDataModule,
  tokenizerFromDataAsync: () => require('./tokenizers/from-data') as typeof FromDataModule,
  dequantize: () => require('./formats/quantization/dequantize') as typeof DequantizeModule,
  Embedder: () => require('./models/embedder') as typeof EmbedderModule,
  loadEmbedder: () => require('./models/embedder') as typeof EmbedderModule,
  similarity: () => require('./models/embedder') as typeof EmbedderModule,
  Reranker: () => require('./models/reranker') as typeof RerankerModule,
  loadReranker: () => require('./models/reranker') as typeof RerankerModule,
  MoondreamModel: () => require('./models/moondream') as typeof MoondreamModule,
  loadMoondream: () => require('./models/moondream') as typeof MoondreamModule,
  VisionModel: () => require('./models/vision-model') as typeof VisionModelModule,
  ChatSession: () => require('./models/chat-session') as typeof ChatSessionModule,
  compileJsonSchema: () => require('./constrain') as typeof ConstrainModule,
  prepareJsonSchema: () => require('./constrain') as typeof ConstrainModule,
  parseToolCalls: () => require('./tools') as typeof ToolsModule,
  detectToolFormat: () => require('./tools') as typeof ToolsModule,
  createHandler: () => require('./server') as typeof ServerModule,
  createServer: () => require('./server') as typeof ServerModule,
  ModelScheduler: () => require('./server') as typeof ServerModule,
  StageServer: () => require('./pipeline/stage-server') as typeof StageServerModule,
});
