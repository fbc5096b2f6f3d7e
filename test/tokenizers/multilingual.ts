/**
 * Deterministic multilingual text for the Unigram tests: Latin with accents (composed and
 * decomposed), CJK, Arabic, Devanagari, Cyrillic, Greek, Thai, Korean, emoji (ZWJ sequences
 * included), fullwidth forms, digits, whitespace runs, tabs and newlines.
 */
import { mulberry32 } from '../helpers/rng';

export const MULTILINGUAL_WORDS = [
  'the', 'quick', 'brown', 'fox', 'jumps', 'over', 'lazy', 'dog', 'tokenization', 'naïve', 'café', 'résumé', 'façade', 'Ångström',
  'straße', 'İstanbul', 'São', 'Paulo', 'coração', 'niño', 'señor', 'Zürich', 'Kraków', 'Łódź', 'Dvořák', 'crème', 'brûlée',
  'москва', 'Привет', 'мир', 'большой', 'язык', 'Україна', 'Ελληνικά', 'καλημέρα', 'Σίσυφος',
  'مرحبا', 'بالعالم', 'اللغة', 'العربية', 'كتاب', 'نمرة', 'שלום', 'עולם',
  'नमस्ते', 'दुनिया', 'हिन्दी', 'भाषा', 'क्षत्रिय', 'संस्कृत',
  '日本語', 'こんにちは', 'カタカナ', 'ひらがな', '東京', '北京欢迎你', '中文句子', '还有', '汉字', '学习', '한국어', '문장', '안녕하세요',
  'ภาษาไทย', 'สวัสดี', 'ﬁnance', 'ＡＢＣ', 'ｆｕｌｌｗｉｄｔｈ', '①②③', '½', '™', 'x²', 'µs', 'e\u0301te\u0301', 'A\u030angstro\u0308m', 'Ａ\u0301',
];
const EMOJI = ['😀', '🎉', '🦙', '❤️', '👍🏽', '👩‍💻', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷', '✅', '🫠'];
const SPACES = [' ', ' ', ' ', '  ', '   ', '\t', '\n', ' \n ', '\u3000', '\u00a0', '\u200b', '\r\n', '     '];

/** `count` lines of mixed-script text; the same seed always gives the same lines. */
export function multilingualLines(count: number, seed = 4242): string[] {
  const r = mulberry32(seed);
  const pick = <T>(xs: readonly T[]) => xs[Math.floor(r() * xs.length)];
  const out: string[] = [];
  for (let i = 0; i < count; i++) {
    const n = 2 + Math.floor(r() * 14);
    let s = r() < 0.1 ? pick(SPACES) : '';
    for (let k = 0; k < n; k++) {
      const u = r();
      if (u < 0.75) s += pick(MULTILINGUAL_WORDS);
      else if (u < 0.85) s += pick(EMOJI);
      else s += String(Math.floor(r() * 10 ** (1 + Math.floor(r() * 6))));
      if (k < n - 1) s += r() < 0.85 ? ' ' : pick(SPACES);
    }
    if (r() < 0.1) s += pick(SPACES);
    out.push(s);
  }
  return out;
}
