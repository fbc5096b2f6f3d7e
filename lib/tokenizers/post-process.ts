/** What encode adds around the text's ids, and truncation (HF post-processor + truncation). */
import type { EncodeOptions } from './types';
import { rangeError } from '../base/errors';

export interface SpecialWrapping {
  /** Ids placed before the text when special tokens are added (BOS, [CLS]). */
  prefix: number[];
  /** Ids placed after the text ([SEP], EOS). */
  suffix: number[];
}

export const NO_WRAPPING: SpecialWrapping = { prefix: [], suffix: [] };

/** Truncates the text ids (keeping room for the special tokens) and adds those tokens. */
export function finishEncoding(
  ids: number[],
  wrapping: SpecialWrapping,
  options: EncodeOptions | undefined,
  defaultMaxLength: number | undefined,
): number[] {
  const add = options?.addSpecialTokens !== false;
  const extra = add ? wrapping.prefix.length + wrapping.suffix.length : 0;
  const maxLength = options?.maxLength ?? defaultMaxLength;
  if (maxLength !== undefined && Number.isFinite(maxLength)) {
    if (!Number.isInteger(maxLength) || maxLength < 0) throw rangeError(`maxLength must be a non-negative integer, got ${maxLength}`);
    const room = Math.max(0, maxLength - extra);
    if (ids.length > room) ids.length = room;
  }
  if (!add || extra === 0) return ids;
  return [...wrapping.prefix, ...ids, ...wrapping.suffix];
}
