/**
 * gpt-oss's Hugging Face checkpoint layout written from canonical tensors (the way back of
 * ../containers/gptoss-hf.ts, which describes the layout): the safetensors writer writes these in
 * place of the per-expert matrices and the gate/up biases.
 */
import { fail } from '../containers/bytes';
import { DECODER_NAMES, type DecoderConfig } from '../../architectures/decoder';
import { GGML_BLOCK_LAYOUT, type PlainDType, type TensorView } from '../../addon/weights';
import { f32Chunks } from '../quantization/tensor-data';
import { encodeFloats, type FloatDType } from '../quantization/dtype-convert';

const MX = GGML_BLOCK_LAYOUT.ggml_mxfp4;

/** A tensor of the checkpoint written from canonical views: its HF name, dtype, shape and bytes in order. */
export interface HfOutputTensor {
  name: string;
  dtype: PlainDType;
  shape: number[];
  byteLength: number;
  chunks(): Iterable<Uint8Array>;
}

/** What a writer of gpt-oss's checkpoint layout writes in place of the canonical expert tensors. */
export interface GptossHfOutput {
  /** The canonical names these replace (the writer writes none of them itself). */
  replaced: Set<string>;
  tensors: HfOutputTensor[];
  /** Canonical name -> checkpoint name of the views written as they are (the router). */
  renamed: Map<string, string>;
  /** config.json's quantization_config when the experts are written in the MXFP4 form. */
  quantizationConfig?: Record<string, unknown>;
}

/** transformers' modules of a gpt-oss MXFP4 checkpoint left unquantized (the released config's). */
const MXFP4_NOT_CONVERTED = ['model.layers.*.self_attn', 'model.layers.*.mlp.router', 'model.embed_tokens', 'lm_head'];

/**
 * The checkpoint layout of a gpt-oss model's experts, from canonical views (`byName`): the MXFP4
 * form (`_blocks` / `_scales`, ggml's blocks with their nibbles reordered: the same values) when
 * every expert matrix is MXFP4, else the float form in `dtype` (gate_up_proj [E, d, 2f], gate and
 * up interleaved on the last axis; down_proj [E, f, d]); the gate/up biases interleaved, the down
 * biases and the router (`mlp.router`) as they are.
 */
export function gptossHfOutput(c: DecoderConfig, byName: ReadonlyMap<string, TensorView>, dtype: FloatDType): GptossHfOutput {
  const E = c.numExperts!, f = c.expertIntermediateSize!, d = c.hiddenSize;
  const replaced = new Set<string>();
  const renamed = new Map<string, string>();
  const tensors: HfOutputTensor[] = [];
  const view = (name: string): TensorView => byName.get(name) ?? fail('MISSING_TENSOR', `the model has no '${name}'`, { expected: name, found: 'absent' });
  const experts: TensorView[] = [];
  for (let l = 0; l < c.numLayers; l++) for (let e = 0; e < E; e++) experts.push(view(DECODER_NAMES.expertGate(l, e)), view(DECODER_NAMES.expertUp(l, e)), view(DECODER_NAMES.expertDown(l, e)));
  const mxfp4 = experts.every((v) => v.dtype === 'ggml_mxfp4');
  for (let l = 0; l < c.numLayers; l++) {
    const p = `model.layers.${l}.mlp.`;
    renamed.set(DECODER_NAMES.router(l), `${p}router.weight`);
    renamed.set(DECODER_NAMES.routerBias(l), `${p}router.bias`);
    renamed.set(DECODER_NAMES.expertDownBiases(l), `${p}experts.down_proj_bias`);
    const gate = Array.from({ length: E }, (_, e) => view(DECODER_NAMES.expertGate(l, e)));
    const up = Array.from({ length: E }, (_, e) => view(DECODER_NAMES.expertUp(l, e)));
    const down = Array.from({ length: E }, (_, e) => view(DECODER_NAMES.expertDown(l, e)));
    for (const v of [...gate, ...up, ...down]) replaced.add(v.name);
    const gateBias = view(DECODER_NAMES.expertGateBiases(l)), upBias = view(DECODER_NAMES.expertUpBiases(l));
    replaced.add(gateBias.name).add(upBias.name);
    tensors.push(interleavedFloats(`${p}experts.gate_up_proj_bias`, [E, 2 * f], dtype, () => [[f32Of(gateBias), f32Of(upBias)]], 1, E * f));
    if (mxfp4) {
      tensors.push(...hfMxfp4(`${p}experts.gate_up_proj`, gate, up, f, d), ...hfMxfp4(`${p}experts.down_proj`, down, undefined, d, f));
    } else {
      // [E, d, 2f]: expert e's gate_up[h, 2i] = gate[i, h], gate_up[h, 2i + 1] = up[i, h].
      tensors.push(interleavedFloats(`${p}experts.gate_up_proj`, [E, d, 2 * f], dtype, () => gate.map((g, e) => [transposed(f32Of(g), f, d), transposed(f32Of(up[e]), f, d)]), 1, d * f));
      tensors.push(interleavedFloats(`${p}experts.down_proj`, [E, f, d], dtype, () => down.map((v) => [transposed(f32Of(v), d, f)]), 0, f * d));
    }
  }
  return { replaced, tensors, renamed, ...(mxfp4 ? { quantizationConfig: { quant_method: 'mxfp4', modules_to_not_convert: MXFP4_NOT_CONVERTED } } : {}) };
}

function f32Of(v: TensorView): Float32Array {
  const out = new Float32Array(v.shape.reduce((a, b) => a * b, 1));
  let at = 0;
  for (const chunk of f32Chunks(v)) {
    out.set(chunk, at);
    at += chunk.length;
  }
  return out;
}

/** [cols, rows] of a row-major [rows, cols]. */
function transposed(m: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(m.length);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = m[r * cols + c];
  return out;
}

/**
 * A float tensor of `shape` in `dtype`, one chunk per group `groups()` gives: a group of one array is
 * written as it is; of two (`pairs` 1), their elements alternate (a[0], b[0], a[1], ...), each of `n`.
 */
function interleavedFloats(name: string, shape: number[], dtype: FloatDType, groups: () => Float32Array[][], pairs: 0 | 1, n: number): HfOutputTensor {
  const size = dtype === 'f32' ? 4 : 2;
  return {
    name, dtype, shape, byteLength: shape.reduce((a, b) => a * b, 1) * size,
    *chunks() {
      for (const group of groups()) {
        if (!pairs) {
          yield encodeFloats(group[0], dtype);
          continue;
        }
        const out = new Float32Array(2 * n);
        for (let i = 0; i < n; i++) {
          out[2 * i] = group[0][i];
          out[2 * i + 1] = group[1][i];
        }
        yield encodeFloats(out, dtype);
      }
    },
  };
}

/**
 * HF's `<base>_blocks` [E, rows, cols/32, 16] and `<base>_scales` [E, rows, cols/32] of ggml MXFP4
 * matrices [rows, cols] per expert (with `odd`: `even`'s and `odd`'s rows interleaved, 2·rows).
 */
function hfMxfp4(base: string, even: TensorView[], odd: TensorView[] | undefined, rows: number, cols: number): HfOutputTensor[] {
  const nb = cols / MX.values, E = even.length, k = odd ? 2 : 1;
  const rowOf = (e: number, r: number): [TensorView, number] => (odd ? [r % 2 === 0 ? even[e] : odd[e], r >> 1] : [even[e], r]);
  const perExpert = function* (part: 'blocks' | 'scales') {
    for (let e = 0; e < E; e++) {
      const mats = odd ? [even[e], odd[e]] : [even[e]];
      const bytes = mats.map((v) => Uint8Array.prototype.slice.call(v.source.range(v.byteOffset, v.byteLength)) as Uint8Array);
      const out = new Uint8Array(k * rows * nb * (part === 'blocks' ? 16 : 1));
      for (let r = 0; r < k * rows; r++) {
        const [v, row] = rowOf(e, r);
        const src = bytes[mats.indexOf(v)];
        for (let b = 0; b < nb; b++) {
          const at = (row * nb + b) * MX.bytes;
          if (part === 'scales') {
            out[r * nb + b] = src[at];
            continue;
          }
          // The inverse of mxfp4Rows's reordering: HF byte i = qs[2i] & 15 | qs[2i + 1] << 4, byte 8 + i their high nibbles.
          const dst = (r * nb + b) * 16, q = at + 1;
          for (let i = 0; i < 8; i++) {
            const even = src[q + 2 * i], odd = src[q + 2 * i + 1];
            out[dst + i] = (even & 0x0f) | ((odd & 0x0f) << 4);
            out[dst + 8 + i] = (even >> 4) | (odd & 0xf0);
          }
        }
      }
      yield out;
    }
  };
  return [
    { name: `${base}_blocks`, dtype: 'u8', shape: [E, k * rows, nb, 16], byteLength: E * k * rows * nb * 16, chunks: () => perExpert('blocks') },
    { name: `${base}_scales`, dtype: 'u8', shape: [E, k * rows, nb], byteLength: E * k * rows * nb, chunks: () => perExpert('scales') },
  ];
}
