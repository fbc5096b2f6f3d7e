/**
 * The tiny random-weight gpt-oss GGUF files (scripts/interop/gptoss-gguf.py, written by llama.cpp's
 * own gguf-py; f32 and MXFP4 experts), generated into a test's folder. Needs the benchmarks' peer
 * cache (scripts/bench/peers/cache.js: WEIGHTMAP_PEERS_CACHE, default ~/.cache/weightmap-peers) with
 * llama.cpp's gguf-py, and python3 with numpy: `gptossUsable` says whether they are there.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';
import { DECODER_NAMES, isSlidingLayer, type DecoderConfig } from '../../lib/architectures/decoder';

export const PEERS = process.env.WEIGHTMAP_PEERS_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-peers');
export const LLAMA_CPP = path.join(PEERS, 'llama.cpp');
/** The tests' prompt (22 tokens: longer than the model's sliding window of 8). */
export const GPTOSS_PROMPT = [3, 14, 15, 9, 26, 5, 35, 8, 9, 7, 9, 3, 23, 8, 4, 6, 2, 6, 43, 3, 38, 32];
export const gptossUsable = fs.existsSync(path.join(LLAMA_CPP, 'gguf-py', 'gguf', 'quants.py')) && spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;

/** The generator's files: the GGUF forms and the HF folders of the same weights (see scripts/interop/gptoss-gguf.py). */
export interface GptossFiles {
  f32: string;
  mxfp4: string;
  bf16: string;
  hfF32: string;
  hfBf16: string;
  hfMxfp4: string;
}

/** Writes the generator's files into `dir` (created); their paths. */
export function gptossFiles(dir: string): GptossFiles {
  fs.mkdirSync(dir, { recursive: true });
  const run = spawnSync('python3', [path.join(__dirname, '..', '..', 'scripts', 'interop', 'gptoss-gguf.py'), LLAMA_CPP, dir], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`gptoss-gguf.py failed: ${run.stderr}`);
  const at = (name: string) => path.join(dir, name);
  return {
    f32: at('gptoss-f32.gguf'), mxfp4: at('gptoss-mxfp4.gguf'), bf16: at('gptoss-bf16.gguf'),
    hfF32: at('gptoss-hf-f32'), hfBf16: at('gptoss-hf-bf16'), hfMxfp4: at('gptoss-hf-mxfp4'),
  };
}

/** What the float64 reference chose in one layer at one position: the k experts (ascending) and the gap between the k-th and (k+1)-th router logits. */
export interface GptossRoute {
  experts: number[];
  margin: number;
}

/**
 * A float64 forward pass of a gpt-oss config and f32 weights (`w(name)`: canonical names, the
 * experts per expert), written from the published semantics (transformers' GptOssForCausalLM with
 * llama.cpp's YaRN: correction dims floored/ceiled unless ropeYarnUnroundedDims, cos/sin × (1 + 0.1 ln factor)), independent of
 * the engine: RMSNorm; q/k/v/o with biases; NeoX RoPE; scores/√headDim, a sliding layer's query at
 * p seeing keys (p − window, p], the head's sink logit joined to each softmax's denominator; the
 * router (+ bias), its top k, a softmax over those k; each expert's g = min(gate, limit),
 * u = clamp(up, ±limit), g·σ(1.702 g)·(u + 1), then down (+ bias).
 */
export function gptossReference(c: DecoderConfig, w: (name: string) => Float32Array, tokens: number[]): { logits: Float64Array[]; routing: GptossRoute[][] } {
  const d = c.hiddenSize, hd = c.headDim, E = c.numExperts!, k = c.numExpertsPerToken!, ff = c.expertIntermediateSize!, limit = c.swigluLimit!;
  const rmsnorm = (x: Float64Array, weight: Float32Array) => {
    let ss = 0;
    for (const v of x) ss += v * v;
    const inv = 1 / Math.sqrt(ss / x.length + c.rmsNormEps);
    return x.map((v, i) => v * inv * weight[i]);
  };
  const linear = (m: Float32Array, x: Float64Array, rows: number, bias?: Float32Array, bias0 = 0) => {
    const out = new Float64Array(rows);
    for (let r = 0; r < rows; r++) {
      let acc = bias ? bias[bias0 + r] : 0;
      for (let i = 0; i < x.length; i++) acc += m[r * x.length + i] * x[i];
      out[r] = acc;
    }
    return out;
  };
  // YaRN's per-pair angles and magnitude (llama.cpp's ggml_rope_yarn_corr_dims and rope_yarn).
  const factor = c.ropeYarnFactor ?? 1;
  const corr = (beta: number) => (hd * Math.log(c.ropeYarnOriginalContext! / (beta * 2 * Math.PI))) / (2 * Math.log(c.ropeTheta));
  // ropeYarnUnroundedDims: transformers' truncate: false, the dims as computed.
  const round = c.ropeYarnUnroundedDims ? (x: number) => x : undefined;
  const low = Math.max(0, (round ?? Math.floor)(corr(c.ropeYarnBetaFast ?? 32))), high = Math.min(hd - 1, (round ?? Math.ceil)(corr(c.ropeYarnBetaSlow ?? 1)));
  const mscale = c.ropeYarnFactor ? 1 + 0.1 * Math.log(factor) : 1;
  const rope = (h: Float64Array, pos: number) => {
    const half = hd / 2, out = new Float64Array(hd);
    for (let i = 0; i < half; i++) {
      const extrap = pos * c.ropeTheta ** (-2 * i / hd);
      const ramp = c.ropeYarnFactor ? 1 - Math.min(1, Math.max(0, (i - low) / Math.max(0.001, high - low))) : 1;
      const angle = (extrap / factor) * (1 - ramp) + extrap * ramp;
      const cs = Math.cos(angle) * mscale, sn = Math.sin(angle) * mscale;
      out[i] = h[i] * cs - h[i + half] * sn;
      out[i + half] = h[i] * sn + h[i + half] * cs;
    }
    return out;
  };
  const N = DECODER_NAMES;
  const embed = w(N.embed);
  let xs = tokens.map((t) => Float64Array.from(embed.subarray(t * d, (t + 1) * d)));
  const routing: GptossRoute[][] = [];
  for (let l = 0; l < c.numLayers; l++) {
    const window = isSlidingLayer(c, l) ? c.slidingWindow! : 0;
    const sinks = w(N.sinks(l));
    const qs: Float64Array[][] = [], ks: Float64Array[][] = [], vs: Float64Array[][] = [];
    for (let t = 0; t < xs.length; t++) {
      const h = rmsnorm(xs[t], w(N.attnNorm(l)));
      const q = linear(w(N.q(l)), h, c.numHeads * hd, w(N.qBias(l)));
      const kk = linear(w(N.k(l)), h, c.numKvHeads * hd, w(N.kBias(l)));
      const v = linear(w(N.v(l)), h, c.numKvHeads * hd, w(N.vBias(l)));
      qs.push(Array.from({ length: c.numHeads }, (_, i) => rope(q.slice(i * hd, (i + 1) * hd), t)));
      ks.push(Array.from({ length: c.numKvHeads }, (_, i) => rope(kk.slice(i * hd, (i + 1) * hd), t)));
      vs.push(Array.from({ length: c.numKvHeads }, (_, i) => v.slice(i * hd, (i + 1) * hd)));
    }
    const layerRoutes: GptossRoute[] = [];
    xs = xs.map((x, t) => {
      const att = new Float64Array(c.numHeads * hd);
      const first = window > 0 ? Math.max(0, t - window + 1) : 0;
      for (let h = 0; h < c.numHeads; h++) {
        const g = Math.floor(h / (c.numHeads / c.numKvHeads));
        const scores: number[] = [];
        for (let j = first; j <= t; j++) {
          let dot = 0;
          for (let i = 0; i < hd; i++) dot += qs[t][h][i] * ks[j][g][i];
          scores.push(dot / Math.sqrt(hd));
        }
        const max = Math.max(sinks[h], ...scores);
        const e = scores.map((s) => Math.exp(s - max));
        const sum = e.reduce((a, b) => a + b, 0) + Math.exp(sinks[h] - max);
        for (let j = first; j <= t; j++) for (let i = 0; i < hd; i++) att[h * hd + i] += (e[j - first] / sum) * vs[j][g][i];
      }
      const o = linear(w(N.o(l)), att, d, w(N.oBias(l)));
      const x1 = x.map((v, i) => v + o[i]);
      const h2 = rmsnorm(x1, w(N.ffnNorm(l)));
      const logits = linear(w(N.router(l)), h2, E, w(N.routerBias(l)));
      const order = Array.from({ length: E }, (_, e) => e).sort((a, b) => logits[b] - logits[a]);
      const chosen = order.slice(0, k).sort((a, b) => a - b);
      layerRoutes.push({ experts: chosen, margin: logits[order[k - 1]] - logits[order[k]] });
      const top = Math.max(...chosen.map((e) => logits[e]));
      const ex = chosen.map((e) => Math.exp(logits[e] - top));
      const total = ex.reduce((a, b) => a + b, 0);
      const y = new Float64Array(d);
      chosen.forEach((e, j) => {
        const gate = linear(w(N.expertGate(l, e)), h2, ff, w(N.expertGateBiases(l)), e * ff);
        const up = linear(w(N.expertUp(l, e)), h2, ff, w(N.expertUpBiases(l)), e * ff);
        const a = gate.map((gv, i) => {
          const g = Math.min(gv, limit), u = Math.min(limit, Math.max(-limit, up[i]));
          return (g / (1 + Math.exp(-1.702 * g))) * (u + 1);
        });
        const down = linear(w(N.expertDown(l, e)), a, d, w(N.expertDownBiases(l)), e * d);
        for (let i = 0; i < d; i++) y[i] += (ex[j] / total) * down[i];
      });
      return x1.map((v, i) => v + y[i]);
    });
    routing.push(layerRoutes);
  }
  const head = w(N.lmHead);
  const logits = xs.map((x) => linear(head, rmsnorm(x, w(N.norm)), c.vocabSize));
  return { logits, routing };
}
