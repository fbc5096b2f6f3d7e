/**
 * BERT's text cleaning and word splitting as HF tokenizers does it (BertNormalizer +
 * BertPreTokenizer). Where FORMATS.md §3.7 differs, HF wins: "control" means categories Cc, Cf
 * and Co (unassigned code points are kept and end up as [UNK]); the CJK ranges are HF's.
 */
import { EXTRA_PUNCT, NOT_DROPPED, NOT_PUNCT } from './bert-unicode';
import { lowercaseByChar, stripNonspacingMarks } from './normalizers';

export interface BertNormalizerOptions {
  cleanText: boolean;
  handleChineseChars: boolean;
  /** Defaults to `lowercase` (HF `strip_accents: null`). */
  stripAccents?: boolean;
  lowercase: boolean;
}

// NUL, U+FFFD and Cc/Cf/Co except tab, newline, carriage return are dropped (as HF's older
// Unicode tables classify them: see bert-unicode.ts).
const DROPPED = new RegExp(`[\\0\\uFFFD]|(?![\\t\\n\\r${NOT_DROPPED}])[\\p{Cc}\\p{Cf}\\p{Co}]`, 'gu');
// Rust char::is_whitespace (White_Space) plus tab/newline/CR; after the drop above.
const WHITESPACE = /\p{White_Space}/gu;
const CJK =
  /[\u4E00-\u9FFF\u3400-\u4DBF\u{20000}-\u{2A6DF}\u{2A700}-\u{2B73F}\u{2B740}-\u{2B81F}\u{2B920}-\u{2CEAF}\uF900-\uFAFF\u{2F800}-\u{2FA1F}]/gu;
const NEEDS_WORK = /[^\x20-\x7e]/;

export function bertNormalizer(options: BertNormalizerOptions): (text: string) => string {
  const strip = options.stripAccents ?? options.lowercase;
  return (text) => {
    // Printable ASCII needs only lowercasing.
    if (!NEEDS_WORK.test(text)) return options.lowercase ? text.toLowerCase() : text;
    if (options.cleanText) text = text.replace(DROPPED, '').replace(WHITESPACE, ' ');
    if (options.handleChineseChars) text = text.replace(CJK, ' $& ');
    if (strip) text = stripNonspacingMarks(text.normalize('NFD'));
    if (options.lowercase) text = lowercaseByChar(text);
    return text;
  };
}

/** HF tokenizer.json `BertNormalizer` entry. */
export function bertNormalizerFromJson(json: any): (text: string) => string {
  return bertNormalizer({
    cleanText: json.clean_text !== false,
    handleChineseChars: json.handle_chinese_chars !== false,
    stripAccents: json.strip_accents === null || json.strip_accents === undefined ? undefined : !!json.strip_accents,
    lowercase: json.lowercase !== false,
  });
}

// A word is a run of characters that are neither whitespace nor punctuation; every punctuation
// character (ASCII punctuation or Unicode P*, in HF's Unicode version) is a word of its own.
const ASCII_PUNCT = '!-\\/:-@\\[-`{-~';
const BERT_WORD = new RegExp(
  `(?:[^\\p{White_Space}\\p{P}${ASCII_PUNCT}${EXTRA_PUNCT}]|[${NOT_PUNCT}])+|(?![${NOT_PUNCT}])[\\p{P}${ASCII_PUNCT}]|[${EXTRA_PUNCT}]`,
  'gu',
);

/** BertPreTokenizer: splits on whitespace (dropped) and isolates punctuation. */
export function bertPreTokenize(text: string, out: string[]): void {
  BERT_WORD.lastIndex = 0;
  for (let m = BERT_WORD.exec(text); m !== null; m = BERT_WORD.exec(text)) out.push(m[0]);
}
