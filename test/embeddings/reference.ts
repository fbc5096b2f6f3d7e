/**
 * An independent float64 BERT forward pass in plain TypeScript (FORMATS.md §3.7), one sequence
 * at a time with no padding: the oracle for the pooling modes and normalization the fixture does
 * not cover. Small models only (it is O(T·H²) per layer in JS).
 */
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { numel, type ModelWeights } from '../../lib/addon/weights';
import type { BertConfig } from '../../lib/architectures/bert';

type Pooling = 'mean' | 'cls' | 'max';

/** The sizes the forward pass reads. */
export type ReferenceSizes = Pick<BertConfig, 'hiddenSize' | 'intermediateSize' | 'numHeads' | 'numLayers' | 'layerNormEps'>;

export class ReferenceBert {
  private readonly t: Map<string, Float64Array>;

  /** From a model's weights, or (tensors) from float64 values by canonical name. */
  constructor(weights: ModelWeights | Map<string, Float64Array>, readonly config: ReferenceSizes) {
    this.t = weights instanceof Map ? weights : new Map(weights.tensors.map((v) => [v.name, Float64Array.from(readF32(v, 0, numel(v.shape)))]));
  }

  private w(name: string): Float64Array {
    const found = this.t.get(name);
    if (!found) throw new Error(`reference: no tensor ${name}`);
    return found;
  }

  /** y[T, out] = x[T, in]·Wᵀ + b with W [out, in]. */
  linear(x: Float64Array, T: number, name: string, nIn: number, nOut: number): Float64Array {
    const W = this.w(`${name}.weight`);
    const b = this.w(`${name}.bias`);
    const y = new Float64Array(T * nOut);
    for (let t = 0; t < T; t++)
      for (let o = 0; o < nOut; o++) {
        let s = b[o];
        for (let i = 0; i < nIn; i++) s += x[t * nIn + i] * W[o * nIn + i];
        y[t * nOut + o] = s;
      }
    return y;
  }

  private layerNorm(x: Float64Array, T: number, name: string): Float64Array {
    const H = this.config.hiddenSize;
    const g = this.w(`${name}.weight`);
    const b = this.w(`${name}.bias`);
    const y = new Float64Array(T * H);
    for (let t = 0; t < T; t++) {
      let mean = 0;
      for (let j = 0; j < H; j++) mean += x[t * H + j];
      mean /= H;
      let v = 0;
      for (let j = 0; j < H; j++) v += (x[t * H + j] - mean) ** 2;
      const inv = 1 / Math.sqrt(v / H + this.config.layerNormEps);
      for (let j = 0; j < H; j++) y[t * H + j] = (x[t * H + j] - mean) * inv * g[j] + b[j];
    }
    return y;
  }

  /** The last hidden states [T, H] of one sequence; token types 0 unless given. */
  hidden(ids: readonly number[], types?: readonly number[]): Float64Array {
    const c = this.config;
    const H = c.hiddenSize;
    const I = c.intermediateSize;
    const T = ids.length;
    const nh = c.numHeads;
    const hd = H / nh;
    const word = this.w('embeddings.word_embeddings.weight');
    const pos = this.w('embeddings.position_embeddings.weight');
    const type = this.w('embeddings.token_type_embeddings.weight');
    let x: Float64Array = new Float64Array(T * H);
    for (let t = 0; t < T; t++)
      for (let j = 0; j < H; j++) x[t * H + j] = word[ids[t] * H + j] + type[(types?.[t] ?? 0) * H + j] + pos[t * H + j];
    x = this.layerNorm(x, T, 'embeddings.LayerNorm');
    for (let l = 0; l < c.numLayers; l++) {
      const p = `encoder.layer.${l}.`;
      const q = this.linear(x, T, `${p}attention.self.query`, H, H);
      const k = this.linear(x, T, `${p}attention.self.key`, H, H);
      const v = this.linear(x, T, `${p}attention.self.value`, H, H);
      const ctx = new Float64Array(T * H);
      for (let h = 0; h < nh; h++)
        for (let i = 0; i < T; i++) {
          const s = new Float64Array(T);
          let max = -Infinity;
          for (let j = 0; j < T; j++) {
            let d = 0;
            for (let e = 0; e < hd; e++) d += q[i * H + h * hd + e] * k[j * H + h * hd + e];
            s[j] = d / Math.sqrt(hd);
            max = Math.max(max, s[j]);
          }
          let sum = 0;
          for (let j = 0; j < T; j++) sum += (s[j] = Math.exp(s[j] - max));
          for (let j = 0; j < T; j++)
            for (let e = 0; e < hd; e++) ctx[i * H + h * hd + e] += (s[j] / sum) * v[j * H + h * hd + e];
        }
      const attn = this.linear(ctx, T, `${p}attention.output.dense`, H, H);
      for (let i = 0; i < T * H; i++) attn[i] += x[i];
      x = this.layerNorm(attn, T, `${p}attention.output.LayerNorm`);
      const ff = this.linear(x, T, `${p}intermediate.dense`, H, I);
      for (let i = 0; i < ff.length; i++) ff[i] = 0.5 * ff[i] * (1 + erf(ff[i] / Math.SQRT2));
      const out = this.linear(ff, T, `${p}output.dense`, I, H);
      for (let i = 0; i < T * H; i++) out[i] += x[i];
      x = this.layerNorm(out, T, `${p}output.LayerNorm`);
    }
    return x;
  }

  embed(ids: readonly number[], pooling: Pooling, normalize: boolean): Float64Array {
    const H = this.config.hiddenSize;
    const T = ids.length;
    const x = this.hidden(ids);
    const e = new Float64Array(H);
    for (let j = 0; j < H; j++) {
      if (pooling === 'cls') e[j] = x[j];
      else if (pooling === 'max') {
        e[j] = -Infinity;
        for (let t = 0; t < T; t++) e[j] = Math.max(e[j], x[t * H + j]);
      } else {
        for (let t = 0; t < T; t++) e[j] += x[t * H + j];
        e[j] /= T;
      }
    }
    if (normalize) {
      const norm = Math.max(Math.hypot(...e), 1e-12);
      for (let j = 0; j < H; j++) e[j] /= norm;
    }
    return e;
  }
}

/** erf to ~1e-15 (Abramowitz–Stegun 7.1.26 is too coarse for a float64 oracle): series / continued fraction. */
export function erf(x: number): number {
  const ax = Math.abs(x);
  if (ax < 2.5) {
    // Maclaurin series: erf(x) = 2/√π Σ (-1)^n x^(2n+1) / (n! (2n+1))
    let term = ax;
    let sum = ax;
    for (let n = 1; n < 60; n++) {
      term *= (-ax * ax) / n;
      const add = term / (2 * n + 1);
      sum += add;
      if (Math.abs(add) < 1e-17 * Math.abs(sum)) break;
    }
    return Math.sign(x) * (2 / Math.sqrt(Math.PI)) * sum;
  }
  // erfc(x) continued fraction (Lentz), accurate for x ≥ 2.5.
  let f = ax;
  let C = ax;
  let D = 0;
  for (let n = 1; n < 200; n++) {
    const a = n / 2;
    D = ax + a * D;
    D = D === 0 ? 1e-300 : 1 / D;
    C = ax + a / C;
    const delta = C * D;
    f *= delta;
    if (Math.abs(delta - 1) < 1e-16) break;
  }
  const erfc = Math.exp(-ax * ax) / Math.sqrt(Math.PI) / f;
  return Math.sign(x) * (1 - erfc);
}
