/**
 * Typed access to the keys of a config.json object, with WeightFormatErrors that name the file and
 * the key: what the readers of lib/formats/containers/hf-config.ts and each family's config.json mapping read
 * through (ConfigKeys for the decoder families' hooks).
 */
import { WeightFormatError, type WeightFormatErrorCode } from '../base/errors';
import type { ConfigKeys } from './decoder/config';

/** A parsed config.json object. */
export type HfJson = Record<string, unknown>;

export function isObject(v: unknown): v is HfJson {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

function fieldsFail(code: WeightFormatErrorCode, message: string, details: { path?: string; expected?: unknown; found?: unknown }): never {
  throw new WeightFormatError(code, message, details);
}

/** Typed field access with WeightFormatErrors that name the file and the key. */
export class Fields implements ConfigKeys {
  constructor(
    readonly json: HfJson,
    readonly path: string | undefined,
  ) {}

  private wrongType(key: string, expected: string): never {
    return fieldsFail('BAD_HEADER', `config key '${key}' has the wrong type`, { path: this.path, expected, found: this.json[key] });
  }

  has(key: string): boolean {
    return this.json[key] !== undefined && this.json[key] !== null;
  }

  name(key: string): string {
    return key;
  }

  raw(key: string): unknown {
    return this.json[key];
  }

  nested(key: string): Fields | undefined {
    const v = this.json[key];
    return isObject(v) ? new Fields(v, this.path) : undefined;
  }

  fail(code: 'UNSUPPORTED' | 'CONFIG_MISMATCH', message: string, details: { expected?: unknown; found?: unknown } = {}): never {
    return fieldsFail(code, message, { path: this.path, ...details });
  }

  /** A positive integer (or ≥ min); required unless a default is given. */
  int(key: string, fallback?: number, min = 1): number {
    if (!this.has(key)) {
      if (fallback === undefined) return fieldsFail('CONFIG_MISMATCH', `config.json lacks '${key}'`, { path: this.path, expected: key, found: 'absent' });
      return fallback;
    }
    const v = this.json[key];
    if (typeof v !== 'number' || !Number.isSafeInteger(v)) this.wrongType(key, 'an integer');
    if ((v as number) < min || (v as number) > 0x7fffffff) {
      fieldsFail('CONFIG_MISMATCH', `config key '${key}' is out of range`, { path: this.path, expected: `${min}..2^31-1`, found: v });
    }
    return v as number;
  }

  /** A finite positive number. */
  num(key: string, fallback: number): number {
    if (!this.has(key)) return fallback;
    const v = this.json[key];
    if (typeof v !== 'number' || !Number.isFinite(v)) this.wrongType(key, 'a number');
    if ((v as number) <= 0) fieldsFail('CONFIG_MISMATCH', `config key '${key}' must be positive`, { path: this.path, expected: '> 0', found: v });
    return v as number;
  }

  bool(key: string, fallback: boolean): boolean {
    if (!this.has(key)) return fallback;
    const v = this.json[key];
    if (typeof v !== 'boolean') this.wrongType(key, 'true or false');
    return v as boolean;
  }

  str(key: string): string | undefined {
    if (!this.has(key)) return undefined;
    const v = this.json[key];
    if (typeof v !== 'string') this.wrongType(key, 'a string');
    return v as string;
  }

  /** A token id, or a list of them (eos_token_id). */
  ids(key: string): number[] | undefined {
    if (!this.has(key)) return undefined;
    const v = this.json[key];
    const list = Array.isArray(v) ? v : [v];
    if (!list.every((x) => typeof x === 'number' && Number.isSafeInteger(x) && x >= 0)) this.wrongType(key, 'a token id or a list of token ids');
    return list as number[];
  }
}
