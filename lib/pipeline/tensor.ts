/**
 * Tensor messages: made from typed arrays, and read back only after every field is checked
 * against the receiver's bounds (session id, dtype, rank, each dimension, position, byte count)
 * so that nothing is allocated or run in proportion to an unchecked number.
 */
import { native } from '../addon/native';
import { DTYPE_BYTES, type TensorMessage, type WireDType } from './schema';

/** A message that breaks the schema or the receiver's bounds. */
export class TensorError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'TensorError';
  }
}

export interface TensorBounds {
  /** The id the message must carry. */
  sessionId: string;
  dtypes: readonly WireDType[];
  /** Elements per row of a [rows, width] tensor; undefined for a vector of `rows` elements. */
  width?: number;
  maxRows: number;
  /** Inclusive bounds of `position`. */
  minPosition: number;
  maxPosition: number;
  /** position + rows may not pass this. */
  endLimit: number;
}

export interface ReadTensor {
  position: number;
  rows: number;
  /** int32 for I32, float32 for F32 and F16 (widened). */
  values: Int32Array | Float32Array;
}

export const MAX_SESSION_ID = 128;

const isCount = (v: unknown): v is number => typeof v === 'number' && Number.isInteger(v) && v >= 0;

// Every check runs on every message (a stage reads one per token): the error texts are built only
// when a check fails.
export function readTensor(msg: TensorMessage, bounds: TensorBounds): ReadTensor {
  if (msg.sessionId !== bounds.sessionId) throw new TensorError(`the session id ${JSON.stringify(String(msg.sessionId).slice(0, MAX_SESSION_ID))} is not this stream's`);
  if (!(bounds.dtypes as readonly string[]).includes(msg.dtype)) throw new TensorError(`dtype ${msg.dtype} is not one of ${bounds.dtypes.join(', ')}`);
  const dtype = msg.dtype as WireDType;
  const shape = msg.shape;
  const rank = bounds.width === undefined ? 1 : 2;
  if (!(Array.isArray(shape) && shape.length === rank && shape.every(isCount))) throw new TensorError(`shape [${String(shape)}] is not of rank ${rank}`);
  const rows = shape[0];
  if (!(rows >= 1 && rows <= bounds.maxRows)) throw new TensorError(`shape [${shape.join(', ')}]: ${rows} rows outside [1, ${bounds.maxRows}]`);
  if (bounds.width !== undefined && shape[1] !== bounds.width) {
    throw new TensorError(`shape [${shape.join(', ')}]: rows of ${shape[1]} elements, expected ${bounds.width}`);
  }
  const position = msg.position;
  if (!(isCount(position) && position >= bounds.minPosition && position <= bounds.maxPosition)) {
    throw new TensorError(`position ${position} outside [${bounds.minPosition}, ${bounds.maxPosition}]`);
  }
  if (position + rows > bounds.endLimit) throw new TensorError(`positions ${position}..${position + rows - 1} pass the limit of ${bounds.endLimit}`);
  const count = rows * (bounds.width ?? 1);
  const bytes = count * DTYPE_BYTES[dtype];
  if (!(Buffer.isBuffer(msg.data) && msg.data.length === bytes)) {
    throw new TensorError(`${msg.data?.length} data bytes, expected ${bytes} for shape [${shape.join(', ')}] of ${dtype}`);
  }

  // Copied out of the message buffer, whose offset need not be aligned for the element type.
  if (dtype === 'F16') {
    const half = new Uint16Array(count);
    new Uint8Array(half.buffer).set(msg.data);
    const values = new Float32Array(count);
    native().kernels.f16ToF32(native().kernels.isa(), half, values);
    return { position, rows, values };
  }
  const values = dtype === 'I32' ? new Int32Array(count) : new Float32Array(count);
  new Uint8Array(values.buffer).set(msg.data);
  return { position, rows, values };
}

/** A message of `values` as [rows] (int32: token ids) or [rows, width] (float32). */
export function tensorMessage(sessionId: string, position: number, values: Int32Array | Float32Array, width?: number): TensorMessage {
  const rows = width === undefined ? values.length : values.length / width;
  return {
    sessionId,
    position,
    shape: width === undefined ? [rows] : [rows, width],
    dtype: values instanceof Int32Array ? 'I32' : 'F32',
    data: Buffer.from(values.buffer, values.byteOffset, values.byteLength),
  };
}
