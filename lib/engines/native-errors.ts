/**
 * Native failures as weightmap's error classes: an engine rejects with an Error carrying a `code`
 * (native/napi/engine_worker.h); callers get AbortError, RangeError, DisposedError or
 * WeightFormatError instead, with the original as `cause`.
 */
import { AbortError, DisposedError, rangeError, WeightFormatError, type WeightFormatErrorCode } from '../base/errors';

const FORMAT_CODES = new Set<string>([
  'BAD_MAGIC', 'BAD_VERSION', 'BAD_HEADER', 'TRUNCATED', 'TRAILING_DATA', 'SHAPE_MISMATCH', 'OUT_OF_BOUNDS',
  'OVERLAP', 'CHECKSUM_MISMATCH', 'CONFIG_MISMATCH', 'BAD_NAME', 'BAD_DTYPE', 'MISSING_TENSOR', 'UNSUPPORTED',
]);

/** `error` translated; `what` names the object for DisposedError, `path` the weights for format errors. */
export function fromNativeError(error: unknown, what: string, path?: string): unknown {
  // Duck-typed: errors made by the addon belong to the main realm, which `instanceof` misses
  // under vm contexts (jest).
  if (typeof error !== 'object' || error === null || typeof (error as Error).message !== 'string') return error;
  const code = (error as { code?: unknown }).code;
  const message = (error as Error).message;
  if (code === 'ABORT_ERR') return new AbortError(undefined, { cause: error });
  if (code === 'ERR_WEIGHTMAP_DISPOSED') return new DisposedError(what);
  if (code === 'ERR_OUT_OF_RANGE') {
    return rangeError(message, { cause: error });
  }
  if (typeof code === 'string' && FORMAT_CODES.has(code)) {
    return new WeightFormatError(code as WeightFormatErrorCode, message, { path, cause: error });
  }
  return error;
}

/** Runs `call` (a native promise) with `signal` wired to `abort`; failures are translated. */
export async function withAbort<T>(
  call: () => Promise<T>,
  abort: () => void,
  signal: AbortSignal | undefined,
  what: string,
): Promise<T> {
  if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
  const onAbort = () => abort();
  signal?.addEventListener('abort', onAbort, { once: true });
  try {
    return await call();
  } catch (error) {
    throw fromNativeError(error, what);
  } finally {
    signal?.removeEventListener('abort', onAbort);
  }
}
