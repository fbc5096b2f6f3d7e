/**
 * Sentence pairs as cross-encoders take them, as Hugging Face's tokenizer encodes a pair — BERT's
 * (BertProcessing / the pair template `[CLS] $A [SEP] $B [SEP]`, type ids 0 then 1) or RoBERTa's
 * (RobertaProcessing: `<s> $A </s></s> $B </s>`, type ids all 0) — with its pair truncation:
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

/** Where the special tokens go: 'bert' ([CLS] a [SEP] b [SEP]) or 'roberta' (<s> a </s></s> b </s>). */
export type PairLayout = 'bert' | 'roberta';

/** The special tokens around a pair (RoBERTa's <s> and </s> as cls and sep), and their layout (default 'bert'). */
export interface PairSpecials {
  cls: number;
  sep: number;
  layout?: PairLayout;
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

/** How many special tokens a pair of `layout` adds. */
export function pairSpecialCount(layout: PairLayout = 'bert'): number {
  return layout === 'roberta' ? 4 : 3;
}

/**
 * `[CLS] a [SEP] b [SEP]` (types 0 through the first [SEP], 1 after it) or `<s> a </s></s> b </s>`
 * (types all 0), cut to `maxLength` ids (the special tokens included).
 */
export function encodePair(a: readonly number[], b: readonly number[], specials: PairSpecials, maxLength: number, strategy: PairTruncation): { ids: number[]; types: number[] } {
  const extra = pairSpecialCount(specials.layout);
  if (!Number.isInteger(maxLength) || maxLength < extra) throw rangeError(`a pair needs a maxLength of at least ${extra}, got ${maxLength}`);
  const [na, nb] = truncatedPairLengths(a.length, b.length, maxLength - extra, strategy);
  const { cls, sep } = specials;
  if (specials.layout === 'roberta') {
    const ids = [cls, ...a.slice(0, na), sep, sep, ...b.slice(0, nb), sep];
    return { ids, types: ids.map(() => 0) };
  }
  const ids = [cls, ...a.slice(0, na), sep, ...b.slice(0, nb), sep];
  const types = ids.map((_, i) => (i < na + 2 ? 0 : 1));
  return { ids, types };
}
