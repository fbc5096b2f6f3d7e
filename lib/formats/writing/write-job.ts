/**
 * The shared skeleton of a streaming writer: a FileSink plus progress reporting and abort checks
 * between chunks, and removal of the partial file when anything fails. Writers stage their files
 * through OutputFiles (output-files.ts), which renames them into place once all are written.
 */
import { AbortError } from '../../base/errors';
import type { WriteOptions } from '../types';
import { FileSink } from './sink';
import { encodeFloats, type FloatDType } from '../quantization/dtype-convert';
import type { ModelWeights, TensorView } from '../../addon/weights';
import { fail } from '../containers/bytes';
import { canonicalShape, f32Chunks, orientedF32Chunks, rawChunks, releasePages } from '../quantization/tensor-data';

/** Bytes per element of the float dtypes stored one element after another. */
const PLAIN_BYTES: Readonly<Record<string, number>> = { f32: 4, f16: 2, bf16: 2, f64: 8 };

export class WriteJob {
  /** Sees every chunk written while set (EMBD feeds its running CRCs from it). */
  tap: ((chunk: Uint8Array) => void) | undefined;

  constructor(
    readonly sink: FileSink,
    readonly totalBytes: number,
    private readonly options: WriteOptions,
  ) {}

  get position(): number {
    return this.sink.position;
  }

  checkAbort(): void {
    const signal = this.options.signal;
    if (signal?.aborted) throw new AbortError('The write was aborted', { cause: signal.reason });
  }

  /** Writes bytes, then reports progress (optionally naming the tensor being written). */
  async write(data: Uint8Array, tensor?: string): Promise<void> {
    this.checkAbort();
    this.tap?.(data);
    await this.sink.write(data);
    this.options.onProgress?.({ bytesWritten: this.sink.position, totalBytes: this.totalBytes, tensor });
  }

  /** Encodes float32 chunks as `dtype` and writes them. */
  async writeFloats(chunks: Iterable<Float32Array>, dtype: FloatDType, tensor?: string): Promise<void> {
    for (const chunk of chunks) await this.write(encodeFloats(chunk, dtype), tensor);
  }

  /**
   * Writes a tensor as `dtype` in the target orientation (`storeTransposed`: [in,out]); bytes are
   * copied unchanged when neither dtype nor orientation changes.
   */
  async writeTensor(view: TensorView, dtype: FloatDType, storeTransposed = false): Promise<void> {
    const sameOrientation = (view.transposed ?? false) === storeTransposed || view.shape.length < 2;
    if (view.dtype === dtype && sameOrientation) await this.copyView(view);
    else if (sameOrientation && PLAIN_BYTES[view.dtype] !== undefined) await this.convertView(view, dtype);
    else await this.writeFloats(orientedF32Chunks(view, storeTransposed && view.shape.length >= 2), dtype, view.name);
    releasePages(view);
  }

  /** Converts a plain float view element by element in storage order, releasing each chunk's source pages once written. */
  private async convertView(view: TensorView, dtype: FloatDType): Promise<void> {
    const size = PLAIN_BYTES[view.dtype]!;
    let at = view.byteOffset;
    for (const chunk of f32Chunks(view)) {
      await this.write(encodeFloats(chunk, dtype), view.name);
      releasePages(view, at, chunk.length * size);
      at += chunk.length * size;
    }
  }

  /** Copies a view's bytes unchanged, releasing the source pages of each chunk once it is written. */
  async copyView(view: TensorView): Promise<void> {
    let at = view.byteOffset;
    for (const chunk of rawChunks(view)) {
      await this.write(chunk, view.name);
      releasePages(view, at, chunk.length);
      at += chunk.length;
    }
  }

  /** Writes raw chunks unchanged. */
  async writeRaw(chunks: Iterable<Uint8Array>, tensor?: string): Promise<void> {
    for (const chunk of chunks) await this.write(chunk, tensor);
  }
}

/**
 * Creates `path` (a temporary from OutputFiles, or a file inside a staged folder), runs `body` with
 * a WriteJob, checks that exactly `totalBytes` were written, and fsyncs and closes the file; on any
 * failure (abort included) the partial file is deleted and the error rethrown.
 */
export async function runWriteJob(
  path: string,
  totalBytes: number,
  options: WriteOptions,
  body: (job: WriteJob) => Promise<void>,
): Promise<void> {
  if (options.signal?.aborted) throw new AbortError('The write was aborted', { cause: options.signal.reason });
  const sink = await FileSink.create(path);
  try {
    const job = new WriteJob(sink, totalBytes, options);
    await body(job);
    if (sink.position !== totalBytes) {
      throw new Error(`internal: wrote ${sink.position} bytes to ${path}, planned ${totalBytes}`);
    }
    await sink.close();
  } catch (error) {
    await sink.abandon();
    throw error;
  }
}

/** Source tensors by name; duplicate names in the source are a BAD_NAME error. */
export function tensorsByName(weights: ModelWeights): Map<string, TensorView> {
  const map = new Map<string, TensorView>();
  for (const t of weights.tensors) {
    if (map.has(t.name)) fail('BAD_NAME', `tensor '${t.name}' appears twice in the source`, { path: weights.path });
    map.set(t.name, t);
  }
  return map;
}

/**
 * The source tensor `name`, checked to have the canonical shape `shape` and a dtype the writer
 * can read (`dtypes`); MISSING_TENSOR / SHAPE_MISMATCH / BAD_DTYPE otherwise.
 */
export function requireTensor(
  weights: ModelWeights,
  byName: Map<string, TensorView>,
  name: string,
  shape: readonly number[],
  dtypes: readonly string[] = ['f32', 'f16', 'bf16'],
): TensorView {
  const view = byName.get(name);
  if (!view) return fail('MISSING_TENSOR', `the source has no tensor '${name}'`, { path: weights.path });
  const canon = canonicalShape(view);
  if (canon.length !== shape.length || canon.some((v, i) => v !== shape[i])) {
    fail('SHAPE_MISMATCH', `tensor '${name}' has the wrong shape for the configuration`, {
      path: weights.path,
      expected: shape,
      found: canon,
    });
  }
  if (!dtypes.includes(view.dtype)) {
    fail('BAD_DTYPE', `tensor '${name}' has dtype ${view.dtype}`, { path: weights.path, expected: dtypes, found: view.dtype });
  }
  return view;
}
