/**
 * What a byte-level BPE tokenizer does to text before the model sees it, as plain data (so that a
 * packed tokenizer can carry it to another thread or a cache file): tokenizer.json's own
 * `normalizer` and `pre_tokenizer` entries, or the fixed steps of the sources without them.
 */
import { bertNormalizerFromJson } from './bert-basic';
import { normalizerFromJson, type Normalizer } from './normalizers';
import { preTokenizerFromJson, regexPreTokenizer, type PreTokenizer } from './pretokenizers';

export interface BpeTextSpec {
  /** tokenizer.json's `normalizer` entry, or 'NFC', or 'none'. */
  normalizer: { json: unknown } | 'NFC' | 'none';
  /** tokenizer.json's `pre_tokenizer` entry, or one regex split (a space put before the text first when prefixSpace). */
  preTokenizer: { json: unknown } | { pattern: string; prefixSpace: boolean };
}

export function bpeTextSteps(spec: BpeTextSpec): { normalizer: Normalizer | undefined; preTokenizer: PreTokenizer } {
  const n = spec.normalizer;
  const normalizer = n === 'none' ? undefined : n === 'NFC' ? (s: string) => s.normalize('NFC') : normalizerFromJson(n.json, bertNormalizerFromJson);
  const p = spec.preTokenizer;
  if ('json' in p) return { normalizer, preTokenizer: preTokenizerFromJson(p.json) };
  const split = regexPreTokenizer(p.pattern);
  const preTokenizer: PreTokenizer = p.prefixSpace ? (text, out) => split(text.startsWith(' ') ? text : ' ' + text, out) : split;
  return { normalizer, preTokenizer };
}
