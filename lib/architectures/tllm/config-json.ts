/**
 * The TLLM GPT model's config checks, and its HF config.json both ways (model_type "tllm", our own:
 * hidden_size, num_hidden_layers, num_attention_heads, intermediate_size, max_position_embeddings,
 * vocab_size, dropout, layer_norm_eps).
 */
import { WeightFormatError } from '../../base/errors';
import { Fields, type HfJson } from '../config-fields';
import type { TllmConfig } from './index';

function fail(code: 'BAD_HEADER' | 'CONFIG_MISMATCH', message: string, details: { path?: string; expected?: unknown; found?: unknown }): never {
  throw new WeightFormatError(code, message, details);
}

/** Throws CONFIG_MISMATCH unless the configuration can be stored and run. */
export function validateTllmConfig(c: TllmConfig, path?: string): void {
  const ints: [string, number][] = [
    ['model_dim', c.hiddenSize],
    ['num_layers', c.numLayers],
    ['num_heads', c.numHeads],
    ['ffn_hidden_dim', c.intermediateSize],
    ['max_sequence_length', c.maxSeqLen],
    ['vocab_size', c.vocabSize],
  ];
  for (const [name, value] of ints) {
    if (!Number.isInteger(value) || value <= 0 || value > 0x7fffffff) {
      fail('CONFIG_MISMATCH', `${name} must be a positive 32-bit integer`, { path, expected: '1..2^31-1', found: value });
    }
  }
  if (c.hiddenSize % c.numHeads !== 0) {
    fail('CONFIG_MISMATCH', 'model_dim is not a multiple of num_heads', { path, expected: `multiple of ${c.numHeads}`, found: c.hiddenSize });
  }
  // Stored only, never used; a value outside [0, 1] still means the header is not what it claims.
  if (!(c.dropout >= 0 && c.dropout <= 1)) {
    fail('CONFIG_MISMATCH', 'dropout_rate must lie in [0, 1]', { path, expected: '[0, 1]', found: c.dropout });
  }
}

/** TllmConfig from our model_type "tllm" config.json. */
export function tllmConfigFromHf(hf: HfJson, path?: string): TllmConfig {
  const f = new Fields(hf, path);
  const dropout = hf.dropout ?? 0;
  if (typeof dropout !== 'number') return fail('BAD_HEADER', "config key 'dropout' has the wrong type", { path, expected: 'a number', found: dropout });
  const config: TllmConfig = {
    architecture: 'tllm',
    hiddenSize: f.int('hidden_size'),
    numLayers: f.int('num_hidden_layers'),
    numHeads: f.int('num_attention_heads'),
    intermediateSize: f.int('intermediate_size'),
    maxSeqLen: f.int('max_position_embeddings'),
    vocabSize: f.int('vocab_size'),
    dropout,
    layerNormEps: f.num('layer_norm_eps', 1e-5),
  };
  validateTllmConfig(config, path);
  return config;
}

export function hfConfigFromTllm(c: TllmConfig): HfJson {
  return {
    architectures: ['TllmForCausalLM'],
    model_type: 'tllm',
    hidden_size: c.hiddenSize,
    num_hidden_layers: c.numLayers,
    num_attention_heads: c.numHeads,
    intermediate_size: c.intermediateSize,
    max_position_embeddings: c.maxSeqLen,
    vocab_size: c.vocabSize,
    dropout: c.dropout,
    layer_norm_eps: c.layerNormEps,
  };
}
