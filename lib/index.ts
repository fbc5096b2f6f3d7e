/**
 * weightmap: memory-mapped LLM weights and fast CPU inference.
 *
 *   import { readWeights, convert, loadModel, loadEmbedder } from 'weightmap';
 */
export { AbortError, DisposedError, UnsupportedError, WeightFormatError } from './errors';
export type { WeightFormatErrorCode } from './errors';
export { MappedSource, mapFile } from './mapping';
export { detectFormat, formatModule, readWeights, writeWeights, FORMATS } from './formats';
export type { FormatModule, ReadOptions, WriteOptions, WriteProgress } from './formats';
export { convert } from './convert';
export type { ConvertOptions, ConvertResult } from './convert';
export { closeWeights, findTensor, numel, DTYPE_BYTES } from './weights';
export { dequantize } from './dequantize';
export type { DType, GgmlBlockDType, FormatName, ModelWeights, TensorView, TokenizerData } from './weights';
export type { Architecture, ModelConfig } from './architectures/model-config';
export type { DecoderConfig } from './architectures/decoder';
export type { TllmConfig } from './architectures/tllm';
export type { BertConfig } from './architectures/bert';
export type { MoondreamConfig } from './architectures/moondream';
export { loadTokenizer, loadTokenizerSync } from './tokenizer-loading';
export { tokenizerFromData, tokenizerFromDataAsync } from './tokenizers';
export type { DecodeOptions, EncodeOptions, SpecialTokenIds, StreamDecoder, Tokenizer, TokenizerKind } from './tokenizers';
export { Embedder, loadEmbedder, similarity } from './embedder';
export type { EmbedOptions, EmbedderInfo, EmbedderQuant, LoadEmbedderOptions, Pooling } from './embedder';
export { Model, loadModel } from './model';
export type { ChatOptions, LoadModelOptions, ModelInfo } from './model';
export { MoondreamModel, loadMoondream } from './moondream';
export type { AnswerOptions, EncodeImageOptions, ImageInput, RawImage } from './moondream';
export { ChatSession } from './chat-session';
export type { ChatSessionOptions, PromptOptions } from './chat-session';
export { startGeneration, StopStringFilter } from './generate';
export type { GenerateOptions, GeneratedPiece, Generation, GenerationHost, LanguageSession, SessionLease, StopReason } from './generate';
export { resolveSampling, SAMPLING_DEFAULTS } from './sampling';
export type { ResolvedSampling, SamplingOptions } from './sampling';
export { ajc1ChatTemplate, jinjaChatTemplate, qwen3ChatTemplate, splitThinking } from './chat';
export type { ChatMessage, ChatRenderOptions, ChatRole, ChatTemplate } from './chat';
export { compileJsonSchema } from './constrain';
export type { JsonSchema } from './constrain';
export { createHandler, createServer, ModelScheduler } from './server';
export type { GenerationRequest, ScheduledGeneration, SchedulerLimits, ServeHandler, ServeOptions, WeightmapServer } from './server';
export { PipelineError } from './errors';
export type { PipelineErrorCode } from './errors';
export { StageServer } from './pipeline/stage-server';
export type { StageOptions } from './pipeline/stage-server';
export type { PipelineOptions, PipelineSpec, PipelineStageSpec } from './pipeline/coordinator';
