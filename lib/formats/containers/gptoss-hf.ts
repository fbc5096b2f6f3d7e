/**
 * gpt-oss's Hugging Face checkpoint layout (transformers' GptOssExperts; llama.cpp's
 * conversion/gpt_oss.py reads the same) to the canonical tensors. Per layer:
 *
 *   mlp.router.{weight,bias}              the router: canonical mlp.gate.{weight,bias}, renamed views;
 *   mlp.experts.down_proj_bias [E, d]     the down biases: a renamed view;
 *   mlp.experts.gate_up_proj_bias [E, 2f] gate and up biases interleaved (gate [..., ::2], up [..., 1::2]);
 *   mlp.experts.gate_up_proj [E, d, 2f]   the float form: x @ gate_up, gate and up interleaved on the last axis;
 *   mlp.experts.down_proj [E, f, d]       act @ down;
 *   mlp.experts.gate_up_proj_blocks / _scales [E, 2f, d/32, 16] / [E, 2f, d/32] and down_proj_blocks /
 *   _scales [E, d, f/32, 16] / [E, d, f/32]: the MXFP4 form, rows [out, in] (gate and up rows
 *   interleaved), 32 e2m1 values a block, byte j holding element 2j (low nibble) and 2j + 1, and one
 *   e8m0 exponent a block.
 *
 * No row of the fused, interleaved or transposed tensors is a row of the engine's [out, in] expert
 * matrices, and ggml's MXFP4 block ({e8m0; qs[16]}: qs[j] low nibble element j, high j + 16) orders
 * the nibbles otherwise: the experts and their gate/up biases are converted (converted-file.ts
 * caches them; the tokenizer worker writes its file), each expert's gate, up and down as a matrix of the source's dtype (MXFP4: ggml's
 * blocks, the same values). Shapes and dtypes are checked before anything is converted. The
 * writer's side (../writing/gptoss-hf-output.ts) puts canonical tensors back into this layout.
 */
import { fail } from './bytes';
import { DECODER_NAMES, type DecoderConfig } from '../../architectures/decoder';
import { DTYPE_BYTES, GGML_BLOCK_LAYOUT, type PlainDType, type TensorView } from '../../addon/weights';
import type { ConvertedTensor } from './converted-file';

/** Names the converter and its output: bumped whenever what it writes changes. */
export const GPTOSS_HF_CONVERSION = 'gpt-oss-hf-experts-1';

const MX = GGML_BLOCK_LAYOUT.ggml_mxfp4;
const FLOATS: readonly string[] = ['f32', 'f16', 'bf16'];

/** What the reader keeps of the checkpoint's views and what it converts. */
export interface GptossHfPlan {
  views: TensorView[];
  converted: ConvertedTensor[];
}

const KEY = /^model\.layers\.(0|[1-9][0-9]*)\.mlp\.(router\.weight|router\.bias|experts\.[a-z_]+)$/;

/**
 * The plan for `views` (named `rename(view.name)` as the checkpoint's other tensors are) of a
 * gpt-oss config: views of other tensors pass through; the layers' expert tensors are checked and
 * planned for conversion.
 */
export function gptossHfPlan(c: DecoderConfig, views: readonly TensorView[], rename: (name: string) => string | null): GptossHfPlan {
  const E = c.numExperts!, f = c.expertIntermediateSize!, d = c.hiddenSize;
  const kept: TensorView[] = [];
  const layers = new Map<number, Map<string, TensorView>>();
  for (const v of views) {
    const name = rename(v.name);
    const m = name === null ? null : KEY.exec(name);
    if (!m) {
      kept.push(v);
      continue;
    }
    const l = Number(m[1]);
    if (m[2] === 'router.weight') kept.push({ ...v, name: DECODER_NAMES.router(l) });
    else if (m[2] === 'router.bias') kept.push({ ...v, name: DECODER_NAMES.routerBias(l) });
    else if (m[2] === 'experts.down_proj_bias') kept.push({ ...v, name: DECODER_NAMES.expertDownBiases(l) });
    else {
      if (l >= c.numLayers) fail('BAD_NAME', `'${v.name}' is not a tensor of a ${c.numLayers}-layer model`, { path: v.source.path, offset: v.byteOffset, found: v.name });
      if (!layers.has(l)) layers.set(l, new Map());
      layers.get(l)!.set(m[2].slice('experts.'.length), v);
    }
  }
  const converted: ConvertedTensor[] = [];
  for (let l = 0; l < c.numLayers; l++) {
    const t = layers.get(l) ?? new Map<string, TensorView>();
    const known = new Set(['gate_up_proj', 'gate_up_proj_blocks', 'gate_up_proj_scales', 'gate_up_proj_bias', 'down_proj', 'down_proj_blocks', 'down_proj_scales']);
    for (const [key, v] of t) if (!known.has(key)) fail('BAD_NAME', `'${v.name}' is not a tensor of a gpt-oss model`, { path: v.source.path, offset: v.byteOffset, found: v.name });
    const where = `model.layers.${l}.mlp.experts`;
    const bias = need(t, `${where}.`, 'gate_up_proj_bias', [E, 2 * f], FLOATS);
    converted.push(everyOther(bias, DECODER_NAMES.expertGateBiases(l), E, f, 0), everyOther(bias, DECODER_NAMES.expertUpBiases(l), E, f, 1));
    converted.push(...gateUp(t, `${where}.`, l, E, f, d), ...down(t, `${where}.`, l, E, f, d));
  }
  return { views: kept, converted };
}

/** The view `key` of a layer, of `shape` and one of `dtypes`; a typed error otherwise. */
function need(t: Map<string, TensorView>, prefix: string, key: string, shape: number[], dtypes: readonly string[]): TensorView {
  const v = t.get(key);
  if (!v) return fail('MISSING_TENSOR', `the checkpoint has no '${prefix}${key}'`, { expected: `${prefix}${key}`, found: 'absent' });
  if (v.shape.length !== shape.length || v.shape.some((n, i) => n !== shape[i])) {
    fail('SHAPE_MISMATCH', `'${v.name}' disagrees with config.json`, { path: v.source.path, offset: v.byteOffset, expected: shape, found: v.shape });
  }
  if (!dtypes.includes(v.dtype)) fail('BAD_DTYPE', `'${v.name}' is ${v.dtype}`, { path: v.source.path, offset: v.byteOffset, expected: dtypes.join(' | '), found: v.dtype });
  return v;
}

/** The layer's two forms of one projection: which one it has (exactly one). */
function form(t: Map<string, TensorView>, prefix: string, key: string): 'float' | 'mxfp4' {
  const float = t.has(key), mx = t.has(`${key}_blocks`) || t.has(`${key}_scales`);
  if (float && mx) fail('BAD_NAME', `the checkpoint has both '${prefix}${key}' and its MXFP4 '_blocks'/'_scales'`, { found: `${prefix}${key}` });
  return mx ? 'mxfp4' : 'float';
}

function mxfp4Divisible(cols: number, prefix: string, key: string): void {
  if (cols % MX.values !== 0) fail('SHAPE_MISMATCH', `'${prefix}${key}_blocks' needs a width that is a multiple of ${MX.values}`, { expected: `a multiple of ${MX.values}`, found: cols });
}

/** Gate and up of every expert of layer l. */
function gateUp(t: Map<string, TensorView>, prefix: string, l: number, E: number, f: number, d: number): ConvertedTensor[] {
  const out: ConvertedTensor[] = [];
  if (form(t, prefix, 'gate_up_proj') === 'float') {
    const v = need(t, prefix, 'gate_up_proj', [E, d, 2 * f], FLOATS);
    for (let e = 0; e < E; e++) {
      out.push(columns(v, DECODER_NAMES.expertGate(l, e), e, d, 2 * f, 0, 2), columns(v, DECODER_NAMES.expertUp(l, e), e, d, 2 * f, 1, 2));
    }
    return out;
  }
  mxfp4Divisible(d, prefix, 'gate_up_proj');
  const blocks = need(t, prefix, 'gate_up_proj_blocks', [E, 2 * f, d / MX.values, 16], ['u8']);
  const scales = need(t, prefix, 'gate_up_proj_scales', [E, 2 * f, d / MX.values], ['u8']);
  for (let e = 0; e < E; e++) {
    out.push(mxfp4Rows(blocks, scales, DECODER_NAMES.expertGate(l, e), e, 2 * f, d, 0, 2), mxfp4Rows(blocks, scales, DECODER_NAMES.expertUp(l, e), e, 2 * f, d, 1, 2));
  }
  return out;
}

/** Down of every expert of layer l. */
function down(t: Map<string, TensorView>, prefix: string, l: number, E: number, f: number, d: number): ConvertedTensor[] {
  const out: ConvertedTensor[] = [];
  if (form(t, prefix, 'down_proj') === 'float') {
    const v = need(t, prefix, 'down_proj', [E, f, d], FLOATS);
    for (let e = 0; e < E; e++) out.push(columns(v, DECODER_NAMES.expertDown(l, e), e, f, d, 0, 1));
    return out;
  }
  mxfp4Divisible(f, prefix, 'down_proj');
  const blocks = need(t, prefix, 'down_proj_blocks', [E, d, f / MX.values, 16], ['u8']);
  const scales = need(t, prefix, 'down_proj_scales', [E, d, f / MX.values], ['u8']);
  for (let e = 0; e < E; e++) out.push(mxfp4Rows(blocks, scales, DECODER_NAMES.expertDown(l, e), e, d, f, 0, 1));
  return out;
}

/** The bytes of [at, at + n) of a view's source, in place when aligned to `align` (typed-array access), else copied. */
function bytesOf(v: TensorView, at: number, n: number, align = 1): Uint8Array {
  const bytes = v.source.range(v.byteOffset + at, n);
  return bytes.byteOffset % align === 0 ? bytes : Uint8Array.prototype.slice.call(bytes);
}

/** Element-wise copies of 1, 2 or 4 bytes, as unsigned integers (no float rounding). */
function elements(bytes: Uint8Array, size: number): Uint8Array | Uint16Array | Uint32Array {
  if (size === 4) return new Uint32Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 4);
  if (size === 2) return new Uint16Array(bytes.buffer, bytes.byteOffset, bytes.byteLength / 2);
  return bytes;
}

/** Output rows per chunk: the file's writer awaits each chunk's write. */
const ROWS_PER_CHUNK = 64;

/**
 * Expert e's matrix [cols / step, rows] out of a float view [E, rows, cols]: the transpose of its
 * columns c0, c0 + step, ... (gate: c0 0, step 2; up: 1, 2; down: 0, 1).
 */
function columns(v: TensorView, name: string, e: number, rows: number, cols: number, c0: number, step: number): ConvertedTensor {
  const size = DTYPE_BYTES[v.dtype as PlainDType];
  const outRows = cols / step;
  return {
    name, dtype: v.dtype, shape: [outRows, rows], byteLength: outRows * rows * size,
    *chunks() {
      const src = elements(bytesOf(v, e * rows * cols * size, rows * cols * size, size), size);
      for (let r0 = 0; r0 < outRows; r0 += ROWS_PER_CHUNK) {
        const r1 = Math.min(outRows, r0 + ROWS_PER_CHUNK);
        const bytes = new Uint8Array((r1 - r0) * rows * size);
        const dst = elements(bytes, size);
        for (let r = r0; r < r1; r++) {
          const c = c0 + r * step, at = (r - r0) * rows;
          for (let i = 0; i < rows; i++) dst[at + i] = src[i * cols + c];
        }
        yield bytes;
      }
    },
  };
}

/** Rows e·E + i·step + r0 of a stacked [E, 2f] float vector as [E, f] (the gate or up biases). */
function everyOther(v: TensorView, name: string, E: number, f: number, r0: number): ConvertedTensor {
  const size = DTYPE_BYTES[v.dtype as PlainDType];
  return {
    name, dtype: v.dtype, shape: [E, f], byteLength: E * f * size,
    *chunks() {
      const src = elements(bytesOf(v, 0, v.byteLength, size), size);
      const bytes = new Uint8Array(E * f * size);
      const dst = elements(bytes, size);
      for (let i = 0; i < E * f; i++) dst[i] = src[2 * i + r0];
      yield bytes;
    },
  };
}

/**
 * Expert e's MXFP4 matrix [rows / step, cols] in ggml's blocks, from HF's blocks [E, rows, cols/32, 16]
 * and scales [E, rows, cols/32]: its rows r0, r0 + step, ...; each block's exponent byte kept, its
 * nibbles reordered: ggml qs[j] = element j | element j + 16 << 4, HF byte j = element 2j | 2j + 1 << 4,
 * so qs[2i] = (b[i] & 15) | (b[8 + i] & 15) << 4 and qs[2i + 1] = b[i] >> 4 | (b[8 + i] & 0xf0).
 */
function mxfp4Rows(blocks: TensorView, scales: TensorView, name: string, e: number, rows: number, cols: number, r0: number, step: number): ConvertedTensor {
  const nb = cols / MX.values;
  const outRows = rows / step;
  return {
    name, dtype: 'ggml_mxfp4', shape: [outRows, cols], byteLength: outRows * nb * MX.bytes,
    *chunks() {
      const b = bytesOf(blocks, e * rows * nb * 16, rows * nb * 16);
      const s = bytesOf(scales, e * rows * nb, rows * nb);
      for (let first = 0; first < outRows; first += ROWS_PER_CHUNK) {
        const last = Math.min(outRows, first + ROWS_PER_CHUNK);
        const out = new Uint8Array((last - first) * nb * MX.bytes);
        for (let r = first; r < last; r++) {
          const row = r0 + r * step;
          for (let k = 0; k < nb; k++) {
            const src = (row * nb + k) * 16, dst = ((r - first) * nb + k) * MX.bytes;
            out[dst] = s[row * nb + k];
            for (let i = 0; i < 8; i++) {
              const lo = b[src + i], hi = b[src + 8 + i];
              out[dst + 1 + 2 * i] = (lo & 0x0f) | ((hi & 0x0f) << 4);
              out[dst + 2 + 2 * i] = (lo >> 4) | (hi & 0xf0);
            }
          }
        }
        yield out;
      }
    },
  };
}
