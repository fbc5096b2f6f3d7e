/**
 * ggml's Q8_0 (GGUF type 8) for the GGUF writer: blocks of 32 consecutive elements of a row, each
 * 34 bytes: d as f16, then 32 int8 q. As llama.cpp's quantize_row_q8_0_ref (and gguf-py's
 * quants.py): d = max|x| / 127 and q = round-half-away-from-zero(x · (1/d)), all in float32 with
 * the float32 d (q = 0 when d is 0), d stored rounded to f16. NaN elements do not count toward
 * max|x| and become 0. This differs from q8-quantize.ts (ajc1/llama.c: separate float32 scales,
 * exact division, ties to even).
 *
 * `quantizeGgmlQ8_0` is the JavaScript reference (and the test oracle); `ggmlQ8Chunks` quantizes a
 * whole tensor natively (native/convert/quantize_q8.cc) on libuv's thread pool: f32/f16/bf16 and
 * ajc1/llama2.c q8_0 views in canonical orientation straight from the mapping, anything else
 * (permuted rows, a stored transpose, f64) decoded to float32 chunks first.
 */
import { native } from '../../addon/native';
import { numel, type TensorView } from '../../addon/weights';
import { rangeError } from '../../base/errors';
import { f32ToF16 } from './dtype-convert';
import { GGML_TYPES } from '../containers/gguf';
import { pipelined } from '../writing/pipelined';
import { permutedRowChunks } from '../writing/rope-order';
import { orientedF32Chunks, releasePages } from './tensor-data';

export const GGML_Q8_0_TYPE = 8;
/** Elements per block (32) and bytes per block (34), from the reader's table of ggml types. */
export const { blockSize: GGML_Q8_BLOCK, typeSize: GGML_Q8_BLOCK_BYTES } = GGML_TYPES[GGML_Q8_0_TYPE];

/** Elements per chunk quantized from the mapping (4 Mi: 4.25 MiB of blocks out). */
const CHUNK_ELEMENTS = 4 << 20;
/** Chunks quantized at once while the caller writes (libuv's pool has 4 threads; file writes need one). */
const IN_FLIGHT = 2;

/** Q8_0 blocks of `values` (a whole number of blocks): values.length / 32 · 34 bytes. */
export function quantizeGgmlQ8_0(values: Float32Array): Uint8Array {
  if (values.length % GGML_Q8_BLOCK !== 0) throw rangeError(`${values.length} values are not a whole number of Q8_0 blocks`);
  const out = new Uint8Array((values.length / GGML_Q8_BLOCK) * GGML_Q8_BLOCK_BYTES);
  const f = Math.fround;
  for (let b = 0; b * GGML_Q8_BLOCK < values.length; b++) {
    const x = values.subarray(b * GGML_Q8_BLOCK, (b + 1) * GGML_Q8_BLOCK);
    let amax = 0;
    for (const v of x) if (Math.abs(v) > amax) amax = Math.abs(v);
    const d = f(amax / 127);
    const id = d !== 0 ? f(1 / d) : 0;
    const h = f32ToF16(d);
    const o = b * GGML_Q8_BLOCK_BYTES;
    out[o] = h & 0xff;
    out[o + 1] = h >>> 8;
    for (let i = 0; i < GGML_Q8_BLOCK; i++) {
      const v = f(x[i] * id);
      // Half away from zero; |v| + 0.5 is exact in float64 for a float32 |v| <= 2^24.
      const r = Number.isNaN(v) ? 0 : Math.sign(v) * Math.floor(Math.abs(v) + 0.5);
      out[o + 2 + i] = Math.max(-127, Math.min(127, r)) & 0xff;
    }
  }
  return out;
}

/**
 * The tensor `view` as Q8_0 blocks, in order, in chunks of whole blocks (its canonical orientation;
 * `rows`, when given, output row r being source row rows[r]). The caller must be done with a chunk
 * before asking for the next. The row length must be a multiple of 32.
 */
export async function* ggmlQ8Chunks(view: TensorView, rows?: Int32Array): AsyncGenerator<Uint8Array> {
  const n = numel(view.shape);
  if (n % GGML_Q8_BLOCK !== 0) throw rangeError(`tensor '${view.name}' (${n} elements) is not a whole number of Q8_0 blocks`);
  const quantize = native().quantizeGgmlQ8_0;
  const fromMapping = view.dtype === 'f32' || view.dtype === 'f16' || view.dtype === 'bf16' || (view.dtype === 'q8_0' && view.scales);
  if (!fromMapping || rows || (view.transposed && view.shape.length >= 2)) {
    // Each float chunk (whole rows, or a multiple of 32 elements) is valid until the next is requested.
    const floats = rows ? permutedRowChunks(view, rows) : orientedF32Chunks(view, false);
    for (const values of floats) {
      const out = new Uint8Array((values.length / GGML_Q8_BLOCK) * GGML_Q8_BLOCK_BYTES);
      await quantize(values, out);
      yield out;
    }
    releasePages(view);
    return;
  }
  const elementBytes = view.dtype === 'f32' ? 4 : view.dtype === 'q8_0' ? 1 : 2;
  const start = async (at: number, count: number) => {
    const out = new Uint8Array((count / GGML_Q8_BLOCK) * GGML_Q8_BLOCK_BYTES);
    const from = view.byteOffset + at * elementBytes;
    if (view.dtype === 'q8_0') await quantize(view.source.file, from, 'q8_0', count, out, view.scales!.byteOffset, view.scales!.groupSize, at);
    else await quantize(view.source.file, from, view.dtype as 'f32' | 'f16' | 'bf16', count, out);
    return out;
  };
  for await (const [at, blocks] of pipelined(n, CHUNK_ELEMENTS, IN_FLIGHT, start)) {
    yield blocks;
    releasePages(view, view.byteOffset + at * elementBytes, (blocks.length / GGML_Q8_BLOCK_BYTES) * GGML_Q8_BLOCK * elementBytes);
  }
}

/**
 * Whether llama-quantize turns the tensor `name` of rank `rank` into the file type's quantized type
 * (src/llama-quant.cpp, tensor_allows_quantization): matrices whose name ends in "weight", except
 * norms and the few tables it keeps as they are (MoE routers, position and token-type embeddings,
 * convolutions, relative-position biases).
 */
export function llamaCppQuantizes(name: string, rank: number): boolean {
  if (rank < 2 || !name.endsWith('weight') || name.includes('_norm.weight')) return false;
  return !KEPT_AS_STORED.some((part) => name.includes(part));
}

const KEPT_AS_STORED = [
  'ffn_gate_inp.weight', 'ffn_gate_tid2eid.weight', 'altup', 'laurel', 'per_layer_model_proj', 'position_embd', 'token_types.weight',
  'ssm_conv1d', 'shortconv.conv.weight', 'indexer.k_proj.weight', 'indexer.q_proj.weight', 'attn_rel_b.weight', '.rel_pos',
  '.patch_embd', '.patch_merger', 'sam.pos_embd', 'sam.neck.', 'sam.net_', 'a.rvq.codebook', 'mm.a.code_embd',
  ...['first', 'w0', 'w1', 'w2', 'v0', 'v1', 'v2', 'a0', 'a1', 'a2', 'g1', 'g2', 'decay_w1', 'decay_w2', 'lerp_fused'].map((s) => `time_mix_${s}.weight`),
];
