/**
 * HF's Metaspace pre-tokenizer and decoder (pre_tokenizers/metaspace.rs), the SentencePiece
 * models' (XLM-R, T5, ...): spaces (U+0020 only) become the replacement (▁), one is put before a
 * segment that does not start with one (`prepend_scheme` always; `first`: only the segment that
 * starts the input; `never`), and the text is split before each replacement. The decoder turns
 * each replacement back into a space, except in the first token, where it drops them (unless the
 * scheme is `never`).
 */
import { UnsupportedError } from '../base/errors';

export type PrependScheme = 'always' | 'first' | 'never';

export interface MetaspaceSpec {
  replacement: string;
  prependScheme: PrependScheme;
  split: boolean;
}

/** Reads a `Metaspace` entry as HF deserializes it (the legacy `add_prefix_space` included). */
export function metaspaceFromJson(json: any): MetaspaceSpec {
  const replacement = json?.replacement;
  if (typeof replacement !== 'string' || [...replacement].length !== 1) {
    throw new UnsupportedError(`Metaspace replacement ${JSON.stringify(replacement)} is not one character`);
  }
  const prependScheme: PrependScheme = json.prepend_scheme ?? 'always';
  if (!['always', 'first', 'never'].includes(prependScheme)) throw new UnsupportedError(`Metaspace prepend_scheme ${JSON.stringify(json.prepend_scheme)} is not supported`);
  // HF refuses add_prefix_space false with any scheme but never (absent: always).
  if (json.add_prefix_space === false && prependScheme !== 'never') throw new UnsupportedError('Metaspace add_prefix_space does not match declared prepend_scheme');
  if (json.split !== undefined && typeof json.split !== 'boolean') throw new UnsupportedError('Metaspace split is not a boolean');
  return { replacement, prependScheme, split: json.split ?? true };
}

/** Splits one normalized segment into words (appended to `out`); `first`: the segment starts the input. */
export function metaspaceSplit(spec: MetaspaceSpec, text: string, first: boolean, out: string[]): void {
  const r = spec.replacement;
  let s = text.replaceAll(' ', r);
  if (s.length === 0) return;
  if (!s.startsWith(r) && (spec.prependScheme === 'always' || (spec.prependScheme === 'first' && first))) s = r + s;
  if (!spec.split) {
    out.push(s);
    return;
  }
  let start = 0;
  for (let at = s.indexOf(r, 1); at >= 0; at = s.indexOf(r, at + r.length)) {
    if (at > start) out.push(s.slice(start, at));
    start = at;
  }
  if (start < s.length) out.push(s.slice(start));
}

/** The decoder on one token, `index` its place among the tokens decoded together. */
export function metaspaceDecodeToken(spec: MetaspaceSpec, token: string, index: number): string {
  return token.replaceAll(spec.replacement, index === 0 && spec.prependScheme !== 'never' ? '' : ' ');
}
