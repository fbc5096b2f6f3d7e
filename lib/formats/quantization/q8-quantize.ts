/**
 * Q8_0 quantization of stored weights for the writers (FORMATS.md §5.2, qwen3.c export.py in
 * torch float32): per group of `groupSize` consecutive elements of the flattened tensor,
 * scale = max|w| / 127 and q = round-half-to-even(w / scale), int8 in [-127, 127]; a group whose
 * scale is 0 gets q = 0, NaN elements count for nothing and become 0.
 *
 * `quantizeQ8` is the JavaScript reference (and the test oracle). `q8Chunks` quantizes a whole
 * tensor: f32/f16/bf16 views stored in canonical orientation go to the native quantizer
 * (native/convert/quantize_q8.cc) on libuv's thread pool, the next chunk while the caller writes
 * the current one, and each chunk's source pages are released once the caller is done with it;
 * anything else (f64, Q8_0 of another group size, stored transposed) is decoded to float32 here.
 */
import { native } from '../../addon/native';
import { numel, type TensorView } from '../../addon/weights';
import { roundHalfEven } from './dtype-convert';
import { orientedF32Chunks, releasePages } from './tensor-data';
import { rangeError } from '../../base/errors';
import { pipelined } from '../writing/pipelined';

/** Elements per chunk of q8Chunks (4 Mi: 4 MiB of int8 out). */
const Q8_CHUNK_ELEMENTS = 4 << 20;
/** Chunks quantized at once (libuv's pool has 4 threads; file writes need one). */
const IN_FLIGHT = 2;

/**
 * Q8_0 of `values` (a whole number of groups) into `q` and `scales`, in float32 arithmetic as
 * torch does it: the quotient w / scale is rounded to float32 before rounding to an integer.
 */
export function quantizeQ8(values: Float32Array, groupSize: number, q: Int8Array, scales: Float32Array): void {
  const groups = values.length / groupSize;
  const quotient = new Float32Array(1);
  for (let g = 0; g < groups; g++) {
    const base = g * groupSize;
    let max = 0;
    for (let i = 0; i < groupSize; i++) {
      const v = values[base + i];
      const a = v < 0 ? -v : v;
      if (a > max) max = a;
    }
    scales[g] = max / 127;
    const scale = scales[g];
    for (let i = 0; i < groupSize; i++) {
      if (scale === 0) {
        q[base + i] = 0;
        continue;
      }
      quotient[0] = values[base + i] / scale;
      const r = roundHalfEven(quotient[0]);
      // NaN stores as 0 in an Int8Array.
      q[base + i] = r > 127 ? 127 : r < -127 ? -127 : r;
    }
  }
}

export interface Q8Chunk {
  /** int8 values of consecutive elements. */
  q: Int8Array;
  /** One scale per group of those elements. */
  scales: Float32Array;
}

type NativeQuantize = NonNullable<ReturnType<typeof native>['quantizeQ8Weights']>;

function nativeQuantizer(view: TensorView): NativeQuantize | undefined {
  if (view.transposed && view.shape.length >= 2) return undefined;
  if (view.dtype !== 'f32' && view.dtype !== 'f16' && view.dtype !== 'bf16') return undefined;
  const fn = native().quantizeQ8Weights;
  return typeof fn === 'function' ? fn : undefined;
}

/**
 * The tensor `view` (canonical orientation: [out,in] for linear weights) quantized in chunks of
 * whole groups, in order. The caller must be done with a chunk before asking for the next.
 */
export async function* q8Chunks(view: TensorView, groupSize: number, chunkElements = Q8_CHUNK_ELEMENTS): AsyncGenerator<Q8Chunk> {
  const n = numel(view.shape);
  if (!Number.isInteger(groupSize) || groupSize <= 0 || n % groupSize !== 0) {
    throw rangeError(`tensor '${view.name}' (${n} elements) is not a whole number of Q8_0 groups of ${groupSize}`);
  }
  const chunk = Math.max(groupSize, Math.floor(chunkElements / groupSize) * groupSize);
  const quantize = nativeQuantizer(view);
  if (!quantize) {
    for (const values of orientedF32Chunks(view, false, chunk)) {
      const out = { q: new Int8Array(values.length), scales: new Float32Array(values.length / groupSize) };
      quantizeQ8(values, groupSize, out.q, out.scales);
      yield out;
    }
    releasePages(view);
    return;
  }
  const elementBytes = view.dtype === 'f32' ? 4 : 2;
  const dtype = view.dtype as 'f32' | 'f16' | 'bf16';
  const start = async (at: number, count: number) => {
    const out: Q8Chunk = { q: new Int8Array(count), scales: new Float32Array(count / groupSize) };
    await quantize(view.source.file, view.byteOffset + at * elementBytes, dtype, count, groupSize, out.q, out.scales);
    return out;
  };
  for await (const [at, current] of pipelined(n, chunk, IN_FLIGHT, start)) {
    yield current;
    releasePages(view, view.byteOffset + at * elementBytes, current.q.length * elementBytes);
  }
}
