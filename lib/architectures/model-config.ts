/**
 * ModelConfig: the config of any architecture, as ModelWeights carries it (lib/weights.ts). Each
 * architecture's module defines its own; a new family adds its config to this union.
 */
import type { BertConfig } from './bert';
import type { DecoderConfig } from './decoder';
import type { MoondreamConfig } from './moondream';
import type { TllmConfig } from './tllm';

/** A tree or file of tensors with no model around it (a lone .npy, an unknown safetensors). */
export interface UnknownConfig {
  architecture: 'unknown';
}

export type ModelConfig = DecoderConfig | TllmConfig | BertConfig | MoondreamConfig | UnknownConfig;

export type Architecture = ModelConfig['architecture'];
