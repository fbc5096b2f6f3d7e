/**
 * Reading the elements of any TensorView as float32, in bounded chunks, for writers that convert
 * dtypes or orientation on the fly. Nothing here holds more than one chunk of a tensor.
 */
import { rangeError, UnsupportedError } from '../../base/errors';
import { native } from '../../addon/native';
import { GGML_BLOCK_LAYOUT, isGgmlBlockDType, numel, type GgmlBlockDType, type TensorView } from '../../addon/weights';
import { decodeFloats, f16ToF32, halfTable } from './dtype-convert';

/** Default chunk: 1 Mi elements (4 MiB of float32). */
export const CHUNK_ELEMENTS = 1 << 20;

/** Bytes of `view` inside its mapping, zero-copy; RangeError if the view points outside it. */
export function viewBytes(view: TensorView, byteOffset = view.byteOffset, byteLength = view.byteLength): Buffer {
  const src = view.source;
  if (byteOffset < 0 || byteLength < 0 || byteOffset + byteLength > src.byteLength) {
    throw rangeError(`tensor '${view.name}' lies outside its mapping (${byteOffset}+${byteLength} > ${src.byteLength})`);
  }
  return src.range(byteOffset, byteLength);
}

/** The dtypes readF32 decodes: the float types, Q8_0 and every GGUF block type. */
export const FLOAT_READABLE_DTYPES: readonly string[] = ['f32', 'f16', 'bf16', 'f64', 'q8_0', 'ggml_q8_0', ...Object.keys(GGML_BLOCK_LAYOUT)];

/** Whether readF32 can decode this view. */
export function isFloatReadable(view: TensorView): boolean {
  return FLOAT_READABLE_DTYPES.includes(view.dtype);
}

/**
 * Elements [start, start+count) of the flattened tensor (storage order) as float32 into `out`.
 * Float dtypes convert exactly (f64 rounds); q8_0 / ggml_q8_0 dequantize as q·scale in float32;
 * the other ggml block types exactly as llama.cpp does (native, on the calling thread: callers
 * read bounded chunks).
 */
export function readF32(view: TensorView, start: number, count: number, out = new Float32Array(count)): Float32Array {
  const n = numel(view.shape);
  if (start < 0 || count < 0 || start + count > n) throw rangeError(`readF32: [${start}, ${start + count}) outside '${view.name}' (${n} elements)`);
  switch (view.dtype) {
    case 'f32':
      return decodeFloats(viewBytes(view, view.byteOffset + start * 4, count * 4), 'f32', count, out);
    case 'f64':
      return decodeFloats(viewBytes(view, view.byteOffset + start * 8, count * 8), 'f64', count, out);
    case 'f16':
    case 'bf16':
      return decodeFloats(viewBytes(view, view.byteOffset + start * 2, count * 2), view.dtype, count, out);
    case 'q8_0':
      return dequantQ8(view, start, count, out);
    case 'ggml_q8_0':
      return dequantGgmlQ8(view, start, count, out);
    default:
      if (isGgmlBlockDType(view.dtype)) return dequantBlocks(view, view.dtype, start, count, out);
      throw new UnsupportedError(`tensor '${view.name}' has dtype ${view.dtype}, which is not a float type`);
  }
}

// The hot loops below walk group by group and let the Float32Array store do the float32 rounding:
// no Math.* call per element (those are not inlined under jest's VM contexts, and cost nothing to avoid).

function dequantQ8(view: TensorView, start: number, count: number, out: Float32Array): Float32Array {
  if (!view.scales) throw rangeError(`q8_0 tensor '${view.name}' has no scales`);
  if (count === 0) return out;
  const gs = view.scales.groupSize;
  const qBytes = viewBytes(view, view.byteOffset + start, count);
  const q = new Int8Array(qBytes.buffer, qBytes.byteOffset, count);
  const g0 = Math.floor(start / gs);
  const g1 = Math.floor((start + count - 1) / gs) + 1;
  const scales = decodeFloats(viewBytes(view, view.scales.byteOffset + g0 * 4, (g1 - g0) * 4), 'f32', g1 - g0, new Float32Array(g1 - g0));
  let i = 0;
  for (let g = 0; g < g1 - g0; g++) {
    const s = scales[g];
    const end = Math.min(count, (g0 + g + 1) * gs - start);
    for (; i < end; i++) out[i] = q[i] * s;
  }
  return out;
}

/** ggml Q8_0: blocks of 34 bytes, an f16 scale then 32 int8. */
function dequantGgmlQ8(view: TensorView, start: number, count: number, out: Float32Array): Float32Array {
  const bytes = viewBytes(view);
  const q = new Int8Array(bytes.buffer, bytes.byteOffset, bytes.length);
  let i = 0;
  while (i < count) {
    const e = start + i;
    const block = Math.floor(e / 32);
    const base = block * 34;
    const scale = f16ToF32(bytes[base] | (bytes[base + 1] << 8));
    const inBlock = e - block * 32;
    const n = Math.min(32 - inBlock, count - i);
    for (let k = 0; k < n; k++) out[i + k] = q[base + 2 + inBlock + k] * scale;
    i += n;
  }
  return out;
}

/** The whole blocks covering [start, start + count) dequantized natively, then the range copied out. */
function dequantBlocks(view: TensorView, dtype: GgmlBlockDType, start: number, count: number, out: Float32Array): Float32Array {
  if (count === 0) return out;
  const { values, bytes } = GGML_BLOCK_LAYOUT[dtype];
  const b0 = Math.floor(start / values);
  const b1 = Math.ceil((start + count) / values);
  const src = viewBytes(view, view.byteOffset + b0 * bytes, (b1 - b0) * bytes);
  const all = new Float32Array((b1 - b0) * values);
  native().kernels.dequantizeBlocks(dtype.slice(5), new Uint8Array(src.buffer, src.byteOffset, src.length), all);
  out.set(all.subarray(start - b0 * values, start - b0 * values + count));
  return out;
}

/**
 * The whole flattened tensor as float32, in chunks of at most `chunk` elements (storage order).
 * The chunks share one buffer: each is valid until the next one is requested.
 */
export function* f32Chunks(view: TensorView, chunk = CHUNK_ELEMENTS): Generator<Float32Array> {
  const n = numel(view.shape);
  const buf = new Float32Array(Math.min(chunk, n));
  for (let start = 0; start < n; start += chunk) {
    const count = Math.min(chunk, n - start);
    yield readF32(view, start, count, buf.subarray(0, count));
  }
}

/**
 * A 2-D tensor [rows, cols] read as its transpose [cols, rows], in chunks of whole output rows
 * (each chunk is row-major [k, rows]). Source rows are decoded in blocks, so each source byte is
 * read once per output block. The chunks share one buffer: each is valid until the next one.
 */
export function* transposedF32Chunks(view: TensorView, chunk = CHUNK_ELEMENTS): Generator<Float32Array> {
  if (view.shape.length !== 2) throw rangeError(`cannot transpose '${view.name}' of rank ${view.shape.length}`);
  const [rows, cols] = view.shape;
  // Output rows per chunk (= source columns per block), and source rows decoded at a time.
  const k = Math.max(1, Math.min(cols, Math.floor(chunk / Math.max(1, rows))));
  const rowBlock = Math.max(1, Math.floor(chunk / Math.max(1, k)));
  const out = new Float32Array(k * rows);
  const whole = wholeTypedView(view);
  if (whole) {
    const table = view.dtype === 'f16' ? halfTable() : undefined;
    for (let c0 = 0; c0 < cols; c0 += k) {
      const kk = Math.min(k, cols - c0);
      for (let r = 0; r < rows; r++) {
        const base = r * cols + c0;
        if (table) for (let c = 0; c < kk; c++) out[c * rows + r] = table[whole[base + c]];
        else for (let c = 0; c < kk; c++) out[c * rows + r] = whole[base + c];
      }
      yield out.subarray(0, kk * rows);
    }
    return;
  }
  const seg = new Float32Array(Math.min(rowBlock, rows) * k);
  for (let c0 = 0; c0 < cols; c0 += k) {
    const kk = Math.min(k, cols - c0);
    for (let r0 = 0; r0 < rows; r0 += rowBlock) {
      const rr = Math.min(rowBlock, rows - r0);
      for (let r = 0; r < rr; r++) readF32(view, (r0 + r) * cols + c0, kk, seg.subarray(r * kk, r * kk + kk));
      for (let r = 0; r < rr; r++) {
        for (let c = 0; c < kk; c++) out[c * rows + r0 + r] = seg[r * kk + c];
      }
    }
    yield out.subarray(0, kk * rows);
  }
}

/** A zero-copy typed array over a whole f32 (Float32Array) or f16 (Uint16Array of bits) tensor, when aligned. */
function wholeTypedView(view: TensorView): Float32Array | Uint16Array | undefined {
  const bytes = viewBytes(view);
  const n = numel(view.shape);
  if (view.dtype === 'f32' && bytes.byteOffset % 4 === 0) return new Float32Array(bytes.buffer, bytes.byteOffset, n);
  if (view.dtype === 'f16' && bytes.byteOffset % 2 === 0) return new Uint16Array(bytes.buffer, bytes.byteOffset, n);
  return undefined;
}

/** The raw bytes of a view in chunks of at most `chunkBytes` (zero-copy subarrays). */
export function* rawChunks(view: TensorView, byteOffset = view.byteOffset, byteLength = view.byteLength, chunkBytes = 4 << 20): Generator<Buffer> {
  const bytes = viewBytes(view, byteOffset, byteLength);
  for (let o = 0; o < bytes.length; o += chunkBytes) yield bytes.subarray(o, Math.min(bytes.length, o + chunkBytes));
}

/**
 * Drops this process's mapping of a range of a view's file (madvise DONTNEED) once a writer is
 * done with it, so converting a model larger than RAM keeps few source pages resident. Only a
 * hint: the pages stay in the OS file cache, and a later read maps them again. Without a range,
 * the whole view (its Q8_0 scales included).
 */
export function releasePages(view: TensorView, byteOffset?: number, byteLength?: number): void {
  const src = view.source;
  if (src.closed || typeof src.file?.advise !== 'function') return;
  const release = (offset: number, length: number) => {
    if (length > 0 && offset >= 0 && offset + length <= src.byteLength) src.file.advise(offset, length, 'dontneed');
  };
  if (byteOffset !== undefined) return release(byteOffset, byteLength ?? 0);
  release(view.byteOffset, view.byteLength);
  if (view.scales) release(view.scales.byteOffset, view.scales.byteLength);
}

/** The canonical shape of a view: its stored shape, reversed when stored transposed. */
export function canonicalShape(view: TensorView): number[] {
  return view.transposed ? [...view.shape].reverse() : [...view.shape];
}

/**
 * A 2-D (or any rank, when no transposition is needed) tensor read as float32 chunks in the
 * orientation a writer stores: `storeTransposed` = the target keeps the matrix [in,out].
 */
export function orientedF32Chunks(view: TensorView, storeTransposed: boolean, chunk = CHUNK_ELEMENTS): Iterable<Float32Array> {
  const needTranspose = (view.transposed ?? false) !== storeTransposed;
  return needTranspose ? transposedF32Chunks(view, chunk) : f32Chunks(view, chunk);
}
