/**
 * Sentence pairs as BERT cross-encoders take them, as Hugging Face's tokenizer encodes a pair
 * (BertProcessing / the pair template `[CLS] $A [SEP] $B [SEP]`, type ids 0 then 1) with its
 * pair truncation:
 *
 *   - 'longest_first' (HF's default for `truncation=True`, which sentence-transformers'
 *     CrossEncoder uses): when the pair is too long, the shorter side keeps min(its length,
 *     ⌊room/2⌋) tokens and the longer side the rest (the Rust tokenizer's rule; on equal lengths
 *     the query counts as the shorter one, so the document gets the odd token). A query shorter than half the room is kept whole.
 *   - 'only_second': the document alone is cut; a query too long for the room is a RangeError.
 *
 * Both keep each side's first tokens (right-side truncation).
 */
import { rangeError } from '../base/errors';

/** How a sentence pair too long for its maximum is cut: 'longest_first' (HF's default) or 'only_second' (the document only). */
export type PairTruncation = 'longest_first' | 'only_second';
export const PAIR_TRUNCATIONS: readonly PairTruncation[] = ['longest_first', 'only_second'];

/** The special tokens around a pair. */
export interface PairSpecials {
  cls: number;
  sep: number;
}

/** How many tokens of each side fit in `room` under `strategy`. */
export function truncatedPairLengths(a: number, b: number, room: number, strategy: PairTruncation): [number, number] {
  if (a + b <= room) return [a, b];
  if (strategy === 'only_second') {
    if (a > room) throw rangeError(`the query has ${a} tokens; with 'only_second' truncation at most ${room} fit`);
    return [a, room - a];
  }
  const half = Math.floor(room / 2);
  if (a > b) {
    const kb = Math.min(b, half);
    return [room - kb, kb];
  }
  const ka = Math.min(a, half);
  return [ka, room - ka];
}

/**
 * `[CLS] a [SEP] b [SEP]` cut to `maxLength` ids (the three special tokens included), with the
 * token types (0 through the first [SEP], 1 after it).
 */
export function encodePair(a: readonly number[], b: readonly number[], specials: PairSpecials, maxLength: number, strategy: PairTruncation): { ids: number[]; types: number[] } {
  if (!Number.isInteger(maxLength) || maxLength < 3) throw rangeError(`a pair needs a maxLength of at least 3, got ${maxLength}`);
  const [na, nb] = truncatedPairLengths(a.length, b.length, maxLength - 3, strategy);
  const ids = [specials.cls, ...a.slice(0, na), specials.sep, ...b.slice(0, nb), specials.sep];
  const types = ids.map((_, i) => (i < na + 2 ? 0 : 1));
  return { ids, types };
}
