/**
 * ModelConfig: the config of any architecture, as ModelWeights carries it (lib/addon/weights.ts). Each
 * architecture's module defines its own; a new family adds its config to this union.
 */
import type { BertClassifierConfig, BertConfig } from './bert';
import type { ClipConfig } from './clip';
import type { DecoderConfig } from './decoder';
import type { MoondreamConfig } from './moondream';
import type { TllmConfig } from './tllm';

/** A tree or file of tensors with no model around it (a lone .npy, an unknown safetensors). */
export interface UnknownConfig {
  architecture: 'unknown';
}

/** A model's configuration in weightmap's own vocabulary, one shape per architecture (`config.architecture` tells which). */
export type ModelConfig = DecoderConfig | TllmConfig | BertConfig | BertClassifierConfig | MoondreamConfig | ClipConfig | UnknownConfig;

/** The architecture name of a config: "llama", "qwen2", "qwen3", "mistral", "gemma3", "bert", "bert-classifier", "tllm", "moondream", "clip" (an mmproj GGUF), or another for a config no engine runs. */
export type Architecture = ModelConfig['architecture'];
