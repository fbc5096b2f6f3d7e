/**
 * Tiny random-weight Mistral, Gemma 3 and Qwen3 checkpoints written as Hugging Face folders (config.json
 * plus model.safetensors, f32), and a float64 forward pass of them written from the published
 * architectures (transformers' MistralForCausalLM and Gemma3ForCausalLM), independent of the
 * engine: the expectation the engine tests compare against.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { DecoderEngine } from '../../lib/engines/decoder';
import { mulberry32 } from '../helpers/rng';

export interface TinyDecoder {
  /** config.json as written. */
  hf: Record<string, unknown>;
  /** HF tensor name -> f32 values, row-major [out, in]. */
  weights: Map<string, Float32Array>;
  shapes: Map<string, number[]>;
}

export interface TinySizes {
  hidden: number;
  intermediate: number;
  layers: number;
  heads: number;
  kvHeads: number;
  headDim: number;
  vocab: number;
}

/** Random weights for `hf` (a config.json object): matrices scaled by 1/√in, norms near their neutral value. */
export function tinyDecoder(hf: Record<string, unknown>, seed: number): TinyDecoder {
  const s = sizesOf(hf);
  const gemma = hf.model_type === 'gemma3_text';
  const rand = mulberry32(seed);
  const uniform = (n: number, scale: number, center = 0) => Float32Array.from({ length: n }, () => center + scale * (2 * rand() - 1));
  const weights = new Map<string, Float32Array>();
  const shapes = new Map<string, number[]>();
  const add = (name: string, shape: number[], values: Float32Array) => {
    weights.set(name, values);
    shapes.set(name, shape);
  };
  const matrix = (name: string, rows: number, cols: number) => add(name, [rows, cols], uniform(rows * cols, Math.sqrt(3 / cols)));
  // Gemma scales by (1 + w): w near 0; the others by w: near 1.
  const norm = (name: string, n: number) => add(name, [n], uniform(n, 0.3, gemma ? 0 : 1));
  const q = s.heads * s.headDim, kv = s.kvHeads * s.headDim;
  add('model.embed_tokens.weight', [s.vocab, s.hidden], uniform(s.vocab * s.hidden, 1));
  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}.`;
    norm(`${p}input_layernorm.weight`, s.hidden);
    matrix(`${p}self_attn.q_proj.weight`, q, s.hidden);
    matrix(`${p}self_attn.k_proj.weight`, kv, s.hidden);
    matrix(`${p}self_attn.v_proj.weight`, kv, s.hidden);
    matrix(`${p}self_attn.o_proj.weight`, s.hidden, q);
    norm(`${p}post_attention_layernorm.weight`, s.hidden);
    if (gemma || hf.model_type === 'qwen3') {
      norm(`${p}self_attn.q_norm.weight`, s.headDim);
      norm(`${p}self_attn.k_norm.weight`, s.headDim);
    }
    if (gemma) {
      norm(`${p}pre_feedforward_layernorm.weight`, s.hidden);
      norm(`${p}post_feedforward_layernorm.weight`, s.hidden);
    }
    matrix(`${p}mlp.gate_proj.weight`, s.intermediate, s.hidden);
    matrix(`${p}mlp.up_proj.weight`, s.intermediate, s.hidden);
    matrix(`${p}mlp.down_proj.weight`, s.hidden, s.intermediate);
  }
  norm('model.norm.weight', s.hidden);
  if (hf.tie_word_embeddings === false) add('lm_head.weight', [s.vocab, s.hidden], uniform(s.vocab * s.hidden, 1));
  return { hf, weights, shapes };
}

export function sizesOf(hf: Record<string, unknown>): TinySizes {
  const n = (k: string) => hf[k] as number;
  return { hidden: n('hidden_size'), intermediate: n('intermediate_size'), layers: n('num_hidden_layers'), heads: n('num_attention_heads'), kvHeads: n('num_key_value_heads'), headDim: n('head_dim'), vocab: n('vocab_size') };
}

/** Writes config.json and model.safetensors (F32) into a new folder `dir`. */
export function writeHfFolder(model: TinyDecoder, dir: string, extraFiles: Record<string, string> = {}): string {
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(model.hf, null, 2));
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  const parts: Buffer[] = [];
  let offset = 0;
  for (const [name, values] of model.weights) {
    header[name] = { dtype: 'F32', shape: model.shapes.get(name), data_offsets: [offset, offset + values.byteLength] };
    parts.push(Buffer.from(values.buffer, values.byteOffset, values.byteLength));
    offset += values.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(json.length));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([size, Buffer.from(json), ...parts]));
  for (const [file, text] of Object.entries(extraFiles)) fs.writeFileSync(path.join(dir, file), text);
  return dir;
}

// ---------------------------------------------------------------------------------------------
// The float64 reference

/** Layer l of Gemma 3 slides unless (l + 1) % sliding_window_pattern == 0; every Mistral layer slides. */
function windowOf(hf: Record<string, unknown>, l: number): number {
  const w = hf.sliding_window as number | null | undefined;
  if (!w) return 0;
  if (hf.model_type !== 'gemma3_text') return w;
  const pattern = hf.sliding_window_pattern as number;
  return (l + 1) % pattern === 0 ? 0 : w;
}

/**
 * `bidirectional`: every position attends to every position, a sliding layer's to those within
 * window / 2 on either side (EmbeddingGemma, as transformers' use_bidirectional_attention halves the
 * window); `hidden`: the final hidden states (after the final norm) instead of the logits.
 */
export interface ReferenceMode {
  bidirectional?: boolean;
  hidden?: boolean;
}

/**
 * The logits [tokens.length][vocab] (the last position's only with `lastOnly`) of a causal
 * forward pass over `tokens` from position 0:
 * HF's Mistral (RMSNorm·w, SwiGLU) or Gemma 3 (embeddings ×√hidden, RMSNorm·(1 + w), QK-norm,
 * post-attention / pre- and post-FFN norms, GeGLU with tanh GELU, scores / √query_pre_attn_scalar,
 * local layers with rope_local_base_freq). RoPE rotates pairs (i, i + headDim/2) (HF's order).
 * A sliding layer's query at p attends to keys (p - window, p]. Per-head QK-norm wherever the
 * weights have it (Gemma 3, Qwen3). `ffn` replaces the dense FFN of layer l on its normed input
 * (Qwen3-MoE's sparse block: qwen3-moe-models.ts).
 */
export function referenceLogits(model: TinyDecoder, tokens: number[], lastOnly = false, ffn?: (layer: number, h: Float64Array) => Float64Array, mode: ReferenceMode = {}): Float64Array[] {
  const { hf, weights } = model;
  const s = sizesOf(hf);
  const gemma = hf.model_type === 'gemma3_text';
  const qkNorm = weights.has('model.layers.0.self_attn.q_norm.weight');
  const eps = hf.rms_norm_eps as number;
  const w = (name: string) => {
    const v = weights.get(name);
    if (!v) throw new Error(`reference: no tensor ${name}`);
    return v;
  };
  const rmsnorm = (x: Float64Array, weight: Float32Array): Float64Array => {
    let ss = 0;
    for (const v of x) ss += v * v;
    const inv = 1 / Math.sqrt(ss / x.length + eps);
    return x.map((v, i) => v * inv * (gemma ? 1 + weight[i] : weight[i]));
  };
  const matvec = (m: Float32Array, x: Float64Array, rows: number): Float64Array => {
    const cols = x.length;
    const out = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let acc = 0;
      for (let c = 0; c < cols; c++) acc += m[r * cols + c] * x[c];
      out[r] = acc;
    }
    return out;
  };
  const rope = (h: Float64Array, pos: number, theta: number): Float64Array => {
    const hd = h.length, half = hd / 2;
    const out = new Float64Array(hd);
    for (let i = 0; i < half; i++) {
      const angle = pos * theta ** (-2 * i / hd);
      const c = Math.cos(angle), sn = Math.sin(angle);
      out[i] = h[i] * c - h[i + half] * sn;
      out[i + half] = h[i] * sn + h[i + half] * c;
    }
    return out;
  };
  const gelu = (x: number) => 0.5 * x * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (x + 0.044715 * x ** 3)));
  const silu = (x: number) => x / (1 + Math.exp(-x));
  const scale = 1 / Math.sqrt(gemma ? (hf.query_pre_attn_scalar as number) : s.headDim);

  const embed = w('model.embed_tokens.weight');
  let xs = tokens.map((t) => Float64Array.from(embed.subarray(t * s.hidden, (t + 1) * s.hidden), (v) => (gemma ? v * Math.sqrt(s.hidden) : v)));
  for (let l = 0; l < s.layers; l++) {
    const p = `model.layers.${l}.`;
    const window = windowOf(hf, l);
    const theta = gemma && window > 0 ? (hf.rope_local_base_freq as number) : (hf.rope_theta as number);
    const keys: Float64Array[][] = [], values: Float64Array[][] = [];
    const queries: Float64Array[][] = [];
    for (let t = 0; t < xs.length; t++) {
      const h = rmsnorm(xs[t], w(`${p}input_layernorm.weight`));
      const q = matvec(w(`${p}self_attn.q_proj.weight`), h, s.heads * s.headDim);
      const k = matvec(w(`${p}self_attn.k_proj.weight`), h, s.kvHeads * s.headDim);
      const v = matvec(w(`${p}self_attn.v_proj.weight`), h, s.kvHeads * s.headDim);
      const head = (a: Float64Array, i: number, norm: string) => {
        const part = a.slice(i * s.headDim, (i + 1) * s.headDim);
        return rope(qkNorm ? rmsnorm(part, w(`${p}self_attn.${norm}.weight`)) : part, t, theta);
      };
      queries.push(Array.from({ length: s.heads }, (_, i) => head(q, i, 'q_norm')));
      keys.push(Array.from({ length: s.kvHeads }, (_, i) => head(k, i, 'k_norm')));
      values.push(Array.from({ length: s.kvHeads }, (_, i) => v.slice(i * s.headDim, (i + 1) * s.headDim)));
    }
    xs = xs.map((x, t) => {
      const att = new Float64Array(s.heads * s.headDim);
      const half = Math.floor(window / 2);
      const first = window > 0 ? Math.max(0, mode.bidirectional ? t - half : t - window + 1) : 0;
      const last = !mode.bidirectional ? t : window > 0 ? Math.min(xs.length - 1, t + half) : xs.length - 1;
      for (let h = 0; h < s.heads; h++) {
        const g = Math.floor(h / (s.heads / s.kvHeads));
        const scores: number[] = [];
        for (let j = first; j <= last; j++) {
          let dot = 0;
          for (let d = 0; d < s.headDim; d++) dot += queries[t][h][d] * keys[j][g][d];
          scores.push(dot * scale);
        }
        const max = Math.max(...scores);
        const e = scores.map((v) => Math.exp(v - max));
        const sum = e.reduce((a, b) => a + b, 0);
        for (let j = first; j <= last; j++) for (let d = 0; d < s.headDim; d++) att[h * s.headDim + d] += (e[j - first] / sum) * values[j][g][d];
      }
      let o = matvec(w(`${p}self_attn.o_proj.weight`), att, s.hidden);
      if (gemma) o = rmsnorm(o, w(`${p}post_attention_layernorm.weight`));
      const x1 = x.map((v, i) => v + o[i]);
      const h2 = rmsnorm(x1, w(gemma ? `${p}pre_feedforward_layernorm.weight` : `${p}post_attention_layernorm.weight`));
      if (ffn) {
        const out = ffn(l, h2);
        return x1.map((v, i) => v + out[i]);
      }
      const gate = matvec(w(`${p}mlp.gate_proj.weight`), h2, s.intermediate);
      const up = matvec(w(`${p}mlp.up_proj.weight`), h2, s.intermediate);
      const act = gate.map((g, i) => (gemma ? gelu(g) : silu(g)) * up[i]);
      let down = matvec(w(`${p}mlp.down_proj.weight`), act, s.hidden);
      if (gemma) down = rmsnorm(down, w(`${p}post_feedforward_layernorm.weight`));
      return x1.map((v, i) => v + down[i]);
    });
  }
  const head = weights.get('lm_head.weight') ?? embed;
  const final = (lastOnly ? xs.slice(-1) : xs).map((x) => rmsnorm(x, w('model.norm.weight')));
  return mode.hidden ? final : final.map((x) => matvec(head, x, s.vocab));
}

/** Greedy continuation of `prompt` by the reference, with the smallest top-1 / top-2 logit gap seen. */
export function referenceGreedy(model: TinyDecoder, prompt: number[], steps: number): { tokens: number[]; minMargin: number } {
  const seq = [...prompt];
  const tokens: number[] = [];
  let minMargin = Infinity;
  for (let i = 0; i < steps; i++) {
    const logits = referenceLogits(model, seq, true)[0];
    const order = [...logits.keys()].sort((a, b) => logits[b] - logits[a]);
    minMargin = Math.min(minMargin, logits[order[0]] - logits[order[1]]);
    tokens.push(order[0]);
    seq.push(order[0]);
  }
  return { tokens, minMargin };
}

/** The bound the engine's f32 logits keep from the f64 reference's `want`: 2e-4·(1 + max |logit|). */
export function referenceTolerance(want: ArrayLike<number>): number {
  let max = 0;
  for (let i = 0; i < want.length; i++) max = Math.max(max, Math.abs(want[i]));
  return 2e-4 * (1 + max);
}

/** The engine's logits [tokens.length, vocab] of `tokens` from position 0, in a fresh session (64 positions). */
export async function engineLogits(engine: DecoderEngine, tokens: number[], kvCache: 'f32' | 'f16' = 'f32'): Promise<Float32Array> {
  const session = engine.createSession({ contextLength: 64, kvCache });
  try {
    return await session.eval(tokens, { allLogits: true });
  } finally {
    session.dispose();
  }
}
