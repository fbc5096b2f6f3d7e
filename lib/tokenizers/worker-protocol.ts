/** Messages between the JS thread (worker-client.ts) and the tokenizer worker (worker.ts). */
import { rangeError, UnsupportedError, WeightFormatError, type WeightFormatErrorCode } from '../base/errors';
import type { TokenizerData } from '../addon/weights';
import type { EncodeOptions } from './types';

/** How the worker can make a tokenizer of its own that encodes like the caller's. */
export type Recipe = { packed: SharedArrayBuffer | Uint8Array } | { path: string } | { data: TokenizerData; where: string };

export type Request =
  /**
   * Build `path`; reply the packed tokenizer (also stored in the cache folder `cacheDir` under
   * `source`, cache.ts) or none when its kind does not pack.
   */
  | { id: number; op: 'load'; path: string; cacheDir: string | undefined; source: object }
  /** Encode `texts` with the tokenizer `key` (made from `recipe`, which is sent the first time). */
  | { id: number; op: 'encode'; key: number; recipe?: Recipe; texts: string[]; options: EncodeOptions | undefined };

export type Reply =
  | { id: number; packed: SharedArrayBuffer | undefined }
  | { id: number; ids: Int32Array[] }
  | { id: number; error: SentError };

/** The code of the error an encode request gets when the worker no longer holds its tokenizer (the recipe is then sent again). */
export const MISSING_RECIPE = 'ERR_WEIGHTMAP_MISSING_RECIPE';

/** An error as it crosses threads: its class by name, its message, and its own data fields. */
export interface SentError {
  name: string;
  message: string;
  fields: Record<string, unknown>;
}

const FIELDS = ['code', 'path', 'offset', 'expected', 'found', 'errno', 'syscall'];

export function sendError(error: unknown): SentError {
  const e = error instanceof Error ? error : new Error(String(error));
  const fields: Record<string, unknown> = {};
  for (const key of FIELDS) {
    const value = (e as unknown as Record<string, unknown>)[key];
    if (value !== undefined && typeof value !== 'function' && typeof value !== 'symbol') {
      try {
        fields[key] = structuredClone(value);
      } catch {
        fields[key] = String(value);
      }
    }
  }
  return { name: e.name, message: e.message, fields };
}

/** The error again, of the same class where it is one of weightmap's or a built-in one. */
export function receiveError(sent: SentError): Error {
  const f = sent.fields;
  let error: Error;
  switch (sent.name) {
    case 'WeightFormatError':
      error = new WeightFormatError(f.code as WeightFormatErrorCode, '', { path: f.path as string | undefined, offset: f.offset as number | undefined, expected: f.expected, found: f.found });
      break;
    case 'UnsupportedError':
      error = new UnsupportedError(sent.message);
      break;
    case 'RangeError':
      error = rangeError(sent.message);
      break;
    case 'TypeError':
      error = new TypeError(sent.message);
      break;
    default:
      error = new Error(sent.message);
      Object.assign(error, f);
  }
  error.message = sent.message;
  return error;
}
