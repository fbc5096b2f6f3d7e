/**
 * A deterministic corpus of awkward strings for differential tests against Hugging Face's
 * tokenizers: whitespace runs, digits, contractions, emoji and ZWJ sequences, CJK, combining
 * accents (NFC and NFD), code, mixed scripts, control and format characters, very long words,
 * special-token look-alikes.
 */

import { mulberry32 } from '../helpers/rng';

const WORDS = [
  'the', 'The', 'THE', 'hello', 'world', 'tokenization', 'naïve', 'café', 'résumé', 'Ångström', 'straße', 'İstanbul',
  'ΟΔΟΣ', 'Σίσυφος', 'москва', 'Привет', 'مرحبا', 'שלום', 'नमस्ते', 'こんにちは', 'カタカナ', '東京', '北京欢迎你', '한국어',
  'ภาษาไทย', 'កាន់តែ', 'Ελληνικά', 'ǅemal', 'ﬁnance', 'ＡＢＣ', '①②③', '½', '²³', 'Ⅻ', '٣٤٥', '१२३', 'x²', 'µs',
];
const PUNCT = ['.', ',', '!', '?', ';', ':', '...', '—', '–', '-', '(', ')', '[', ']', '{', '}', '"', '«', '»', '“', '”', '¿', '¡', '@', '#', '$', '%', '&', '*', '/', '\\', '|', '~', '`', '^', '+', '=', '<', '>', '_', '·', '。', '、', '！'];
const SPACES = [' ', '  ', '   ', '\t', '\n', '\n\n', '\r\n', ' \n ', '\u00a0', '\u3000', '\u2009', '\u200b', '\u0085', '\ufeff', '\v', '\f', '\u2028', ' \t \n'];
const CONTRACTIONS = ["'s", "'t", "'re", "'ve", "'m", "'ll", "'d", "'S", "'T", "'RE", "'Ve", "'LL", "'D", "'ſ", "'K", "’s", "''", "'"];
const EMOJI = ['😀', '🎉', '🦙', '❤️', '👍🏽', '👩‍💻', '👨‍👩‍👧‍👦', '🏳️‍🌈', '🇫🇷', '😶‍🌫️', '✅', '🫠', '©', '®', '™', '⌘'];
const CODE = [
  'for (let i = 0; i < n; i++) {\n    x += a[i];\n}',
  'def f(x):\n\treturn x**2  # square',
  '#include <stdio.h>\nint main(){printf("%d\\n", 42);}',
  'SELECT * FROM users WHERE id = 7;',
  '<div class="a">&nbsp;</div>',
  '{"key": [1, 2.5, -3e10, null, true]}',
  '    indented\n        more\n\t\ttabs',
  'a_b_c camelCase snake_case SCREAMING_CASE kebab-case',
  'https://example.com/path?q=1&r=2#frag',
  '0x1F 0b1010 1_000_000 3.14159 -0.0 1e-9',
];
const SPECIALS = ['<|im_start|>', '<|im_end|>', '<|endoftext|>', '<think>', '</think>', '<tool_call>', '[CLS]', '[SEP]', '[MASK]', '[UNK]', '<s>', '</s>', '<notatoken>', '<|im_start', 'im_end|>'];
const CONTROLS = ['\u0000', '\u0001', '\u001b', '\u007f', '\u0085', '\u00ad', '\u200d', '\u200e', '\u2060', '\ufffd', '\ue000', '\u{f0000}', '\u0300', '\u0301', '\u0327', '\u{e0001}', '\u0378', '\u{2b820}', '\u{30000}'];

function pick<T>(r: () => number, xs: readonly T[]): T {
  return xs[Math.floor(r() * xs.length)];
}

function randomCodePoint(r: () => number): string {
  const ranges: [number, number][] = [
    [0x20, 0x7e], [0xa0, 0x24f], [0x300, 0x36f], [0x370, 0x3ff], [0x400, 0x4ff], [0x590, 0x6ff], [0x900, 0x97f],
    [0xe00, 0xe7f], [0x1100, 0x11ff], [0x2000, 0x206f], [0x2190, 0x23ff], [0x3000, 0x30ff], [0x4e00, 0x9fff],
    [0xac00, 0xd7a3], [0xff00, 0xffef], [0x1f300, 0x1faff], [0x20000, 0x2a6df], [0x0, 0x1f],
  ];
  const [lo, hi] = pick(r, ranges);
  return String.fromCodePoint(lo + Math.floor(r() * (hi - lo + 1)));
}

function digits(r: () => number): string {
  const n = 1 + Math.floor(r() * 12);
  let s = '';
  for (let i = 0; i < n; i++) s += String(Math.floor(r() * 10));
  return s;
}

/** `count` strings; the same seed always gives the same list. */
export function makeCorpus(count: number, seed = 20240601): string[] {
  const r = mulberry32(seed);
  const out: string[] = ['', ' ', '  ', '\n', '\t\t', 'a', "'s", '   Hello', 'Hello   ', '\u00e9', 'e\u0301', 'x'.repeat(3000), 'ab'.repeat(2000)];
  const parts: (() => string)[] = [
    () => pick(r, WORDS),
    () => pick(r, WORDS).toUpperCase(),
    () => pick(r, PUNCT),
    () => pick(r, SPACES),
    () => pick(r, SPACES).repeat(1 + Math.floor(r() * 5)),
    () => pick(r, CONTRACTIONS),
    () => pick(r, EMOJI),
    () => pick(r, CODE),
    () => pick(r, SPECIALS),
    () => pick(r, CONTROLS),
    () => digits(r),
    () => randomCodePoint(r),
    () => pick(r, WORDS).normalize('NFD'),
    () => pick(r, WORDS).repeat(2 + Math.floor(r() * 40)), // long words
    () => Array.from({ length: 1 + Math.floor(r() * 8) }, () => randomCodePoint(r)).join(''),
  ];
  while (out.length < count) {
    const n = 1 + Math.floor(r() * 12);
    let s = '';
    for (let i = 0; i < n; i++) {
      s += pick(r, parts)();
      if (r() < 0.5) s += ' ';
    }
    out.push(s);
  }
  return out;
}
