/**
 * Any tensor read as float32, whatever its dtype:
 *
 *   const weights = await readWeights('model.Q4_K_M.gguf');
 *   const embed = await dequantize(weights, 'model.embed_tokens.weight');  // Float32Array, storage order
 *
 * f32/f16/bf16 widen exactly and every GGUF block type (ggml_q8_0, ggml_q4_k, ...) dequantizes
 * bit-equal to llama.cpp's own dequantize_row_*, on libuv's thread pool; q8_0 (separate scales)
 * is q·scale in float32 and f64 rounds to nearest, both chunked in JS with a yield between chunks.
 */
import { rangeError, UnsupportedError } from '../../base/errors';
import { readF32 } from './tensor-data';
import { native } from '../../addon/native';
import { findTensor, isGgmlBlockDType, numel, type ModelWeights, type TensorView } from '../../addon/weights';

/** Elements per JS chunk (q8_0, f64): ~1 ms of work between yields. */
const JS_CHUNK = 1 << 18;

/** The tensor `name` of `weights` (or a view) as float32, in storage order (the last dimension fastest). */
export async function dequantize(weights: ModelWeights, name: string): Promise<Float32Array>;
export async function dequantize(view: TensorView): Promise<Float32Array>;
export async function dequantize(source: ModelWeights | TensorView, name?: string): Promise<Float32Array> {
  const view = 'tensors' in source ? findTensor(source, name ?? '') : source;
  if (!view) throw rangeError(`the weights have no tensor '${name}'`);
  const n = numel(view.shape);
  const out = new Float32Array(n);
  const dtype = view.dtype;
  if (dtype === 'f32' || dtype === 'f16' || dtype === 'bf16' || dtype === 'ggml_q8_0' || isGgmlBlockDType(dtype)) {
    await native().dequantizeWeights(view.source.file, view.byteOffset, dtype, n, out);
    return out;
  }
  if (dtype !== 'q8_0' && dtype !== 'f64') throw new UnsupportedError(`tensor '${view.name}' has dtype ${dtype}, which is not a float type`);
  for (let start = 0; start < n; start += JS_CHUNK) {
    const count = Math.min(JS_CHUNK, n - start);
    readF32(view, start, count, out.subarray(start, start + count));
    if (start + count < n) await new Promise<void>((resolve) => setImmediate(resolve));
  }
  return out;
}
