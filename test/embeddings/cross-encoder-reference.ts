/**
 * A float64 BertForSequenceClassification forward pass in plain JS, written from Hugging Face's
 * modeling_bert.py: embeddings (word + token type + position, LayerNorm), post-LN blocks with
 * bidirectional attention and erf GELU, the pooler (dense + tanh on the first token) and the
 * classifier. One pair at a time, no padding. The oracle of the reranker tests.
 */
import type { TinyCrossEncoder } from '../helpers/tiny-cross-encoder';
import { erf } from './reference';

export function crossEncoderLogit(model: TinyCrossEncoder, ids: readonly number[], types: readonly number[], options: { pooler?: boolean } = {}): number {
  const { hidden: H, intermediate: I, heads, layers, eps } = model.config;
  const T = ids.length;
  const hd = H / heads;
  const w = (name: string) => {
    const t = model.tensors.get(name);
    if (!t) throw new Error(`reference: no tensor ${name}`);
    return t.data;
  };
  const linear = (x: Float64Array, rows: number, name: string, nIn: number, nOut: number) => {
    const W = w(`${name}.weight`);
    const b = w(`${name}.bias`);
    const y = new Float64Array(rows * nOut);
    for (let t = 0; t < rows; t++)
      for (let o = 0; o < nOut; o++) {
        let s = b[o];
        for (let i = 0; i < nIn; i++) s += x[t * nIn + i] * W[o * nIn + i];
        y[t * nOut + o] = s;
      }
    return y;
  };
  const layerNorm = (x: Float64Array, name: string) => {
    const g = w(`${name}.weight`);
    const b = w(`${name}.bias`);
    const y = new Float64Array(T * H);
    for (let t = 0; t < T; t++) {
      let mean = 0;
      for (let j = 0; j < H; j++) mean += x[t * H + j];
      mean /= H;
      let v = 0;
      for (let j = 0; j < H; j++) v += (x[t * H + j] - mean) ** 2;
      const inv = 1 / Math.sqrt(v / H + eps);
      for (let j = 0; j < H; j++) y[t * H + j] = (x[t * H + j] - mean) * inv * g[j] + b[j];
    }
    return y;
  };

  const word = w('embeddings.word_embeddings.weight');
  const pos = w('embeddings.position_embeddings.weight');
  const type = w('embeddings.token_type_embeddings.weight');
  let x = new Float64Array(T * H);
  for (let t = 0; t < T; t++)
    for (let j = 0; j < H; j++) x[t * H + j] = word[ids[t] * H + j] + type[types[t] * H + j] + pos[t * H + j];
  x = layerNorm(x, 'embeddings.LayerNorm');
  for (let l = 0; l < layers; l++) {
    const p = `encoder.layer.${l}.`;
    const q = linear(x, T, `${p}attention.self.query`, H, H);
    const k = linear(x, T, `${p}attention.self.key`, H, H);
    const v = linear(x, T, `${p}attention.self.value`, H, H);
    const ctx = new Float64Array(T * H);
    for (let h = 0; h < heads; h++)
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
    const attn = linear(ctx, T, `${p}attention.output.dense`, H, H);
    for (let i = 0; i < attn.length; i++) attn[i] += x[i];
    x = layerNorm(attn, `${p}attention.output.LayerNorm`);
    const ff = linear(x, T, `${p}intermediate.dense`, H, I);
    for (let i = 0; i < ff.length; i++) ff[i] = 0.5 * ff[i] * (1 + erf(ff[i] / Math.SQRT2));
    const out = linear(ff, T, `${p}output.dense`, I, H);
    for (let i = 0; i < out.length; i++) out[i] += x[i];
    x = layerNorm(out, `${p}output.LayerNorm`);
  }
  let head = x.slice(0, H);
  if (options.pooler !== false) head = linear(head, 1, 'pooler.dense', H, H).map(Math.tanh);
  return linear(head, 1, 'classifier', H, 1)[0];
}
