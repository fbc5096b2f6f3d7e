/**
 * Test helper: builds ModelWeights whose tensors live in one temporary blob file (each tensor
 * 64-byte aligned, or deliberately misaligned), so writers can be fed sources with any dtype and
 * orientation without a real reader behind them.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mapFile } from '../../lib/addon/mapping';
import type { DType, FormatName, ModelWeights, TensorView, TokenizerData } from '../../lib/addon/weights';
import type { ModelConfig } from '../../lib/architectures/model-config';

export interface BlobTensor {
  name: string;
  dtype: DType;
  shape: number[];
  bytes: Uint8Array;
  transposed?: boolean;
  /** q8_0: the f32 scale bytes and their group size. */
  scales?: { bytes: Uint8Array; groupSize: number };
}

export function blobWeights(
  dir: string,
  file: string,
  format: FormatName,
  config: ModelConfig,
  tensors: BlobTensor[],
  extras: { metadata?: Record<string, unknown>; tokenizer?: TokenizerData; misalign?: boolean } = {},
): ModelWeights {
  const parts: Buffer[] = [];
  let offset = 0;
  const place = (bytes: Uint8Array): number => {
    const pad = (64 - (offset % 64)) % 64 + (extras.misalign ? 1 : 0);
    parts.push(Buffer.alloc(pad), Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
    offset += pad;
    const at = offset;
    offset += bytes.byteLength;
    return at;
  };
  const placed = tensors.map((t) => ({ t, at: place(t.bytes), scalesAt: t.scales ? place(t.scales.bytes) : 0 }));
  const full = path.join(dir, file);
  fs.writeFileSync(full, Buffer.concat(parts));
  const source = mapFile(full);
  const views: TensorView[] = placed.map(({ t, at, scalesAt }) => ({
    name: t.name,
    dtype: t.dtype,
    shape: t.shape,
    source,
    byteOffset: at,
    byteLength: t.bytes.byteLength,
    ...(t.transposed ? { transposed: true } : {}),
    ...(t.scales ? { scales: { byteOffset: scalesAt, byteLength: t.scales.bytes.byteLength, groupSize: t.scales.groupSize } } : {}),
  }));
  return {
    format,
    path: full,
    architecture: config.architecture,
    config,
    tensors: views,
    metadata: extras.metadata ?? {},
    tokenizer: extras.tokenizer,
    sources: [source],
  };
}

/** Row-major transpose of a [rows, cols] float32 matrix. */
export function transpose(data: Float32Array, rows: number, cols: number): Float32Array {
  const out = new Float32Array(rows * cols);
  for (let r = 0; r < rows; r++) for (let c = 0; c < cols; c++) out[c * rows + r] = data[r * cols + c];
  return out;
}

export function f32Bytes(a: Float32Array): Uint8Array {
  return new Uint8Array(a.buffer, a.byteOffset, a.byteLength);
}

/** A copy of `file` with `edit` applied to its bytes, written into `dir`. */
export function corruptCopy(src: string, dir: string, name: string, edit: (b: Buffer) => Buffer | void): string {
  const bytes = fs.readFileSync(src);
  const edited = edit(bytes) ?? bytes;
  const out = path.join(dir, name);
  fs.writeFileSync(out, edited);
  return out;
}
