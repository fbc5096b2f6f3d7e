/** Text normalizers of HF tokenizers (the subset weightmap's models use), as plain string functions. */
import { UnsupportedError } from '../base/errors';
import { EXTRA_STRIPPED, NOT_STRIPPED } from './bert-unicode';
import { precompiledFromBase64 } from './precompiled-charsmap';
import { compileOnigPattern } from './pretokenizers';

export type Normalizer = (text: string) => string;

const lowerCache = new Map<number, string>();

/**
 * Lowercases code point by code point, like HF's NormalizedString::lowercase (Rust
 * `char::to_lowercase`): no context rules, so a final capital sigma becomes σ, not ς.
 */
export function lowercaseByChar(text: string): string {
  let ascii = true;
  for (let i = 0; i < text.length; i++) {
    if (text.charCodeAt(i) >= 0x80) {
      ascii = false;
      break;
    }
  }
  if (ascii) return text.toLowerCase();
  let out = '';
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    if (cp < 0x80) {
      out += cp >= 65 && cp <= 90 ? String.fromCharCode(cp + 32) : ch;
      continue;
    }
    let lower = lowerCache.get(cp);
    if (lower === undefined) {
      lower = ch.toLowerCase();
      lowerCache.set(cp, lower);
    }
    out += lower;
  }
  return out;
}

// \p{Mn} as HF's (older) Unicode tables have it: see bert-unicode.ts.
const NONSPACING_MARK = new RegExp(`(?![${NOT_STRIPPED}])\\p{Mn}|[${EXTRA_STRIPPED}]`, 'gu');

/** Removes nonspacing marks (HF StripAccents; run after NFD). */
export function stripNonspacingMarks(text: string): string {
  return text.replace(NONSPACING_MARK, '');
}

function escapeRegExp(s: string): string {
  return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
}

/** Rust's char::is_whitespace (White_Space: U+0085 in, U+FEFF out), as HF's Strip tests it. */
const WHITE_SPACE = /\p{White_Space}/u;

/**
 * Builds the normalizer of a tokenizer.json `normalizer` entry (null -> undefined); `where`
 * names the file in the errors of a malformed `Precompiled` charsmap.
 */
export function normalizerFromJson(json: any, bert: (json: any) => Normalizer, where = 'tokenizer.json'): Normalizer | undefined {
  if (json === null || json === undefined) return undefined;
  switch (json.type) {
    case 'NFC':
      return (s) => s.normalize('NFC');
    case 'NFD':
      return (s) => s.normalize('NFD');
    case 'NFKC':
      return (s) => s.normalize('NFKC');
    case 'NFKD':
      return (s) => s.normalize('NFKD');
    case 'Lowercase':
      return lowercaseByChar;
    case 'StripAccents':
      return stripNonspacingMarks;
    case 'BertNormalizer':
      return bert(json);
    case 'Strip': {
      const left = json.strip_left !== false;
      const right = json.strip_right !== false;
      return (s) => {
        let a = 0;
        let b = s.length;
        if (left) while (a < b && WHITE_SPACE.test(s[a])) a++;
        if (right) while (b > a && WHITE_SPACE.test(s[b - 1])) b--;
        return s.slice(a, b);
      };
    }
    case 'Prepend': {
      const prefix = String(json.prepend);
      return (s) => (s.length === 0 ? s : prefix + s);
    }
    case 'Replace': {
      const content = String(json.content);
      if (json.pattern?.String !== undefined) {
        const re = new RegExp(escapeRegExp(String(json.pattern.String)), 'g');
        return (s) => s.replace(re, () => content);
      }
      if (typeof json.pattern?.Regex === 'string') {
        const re = compileOnigPattern(json.pattern.Regex);
        return (s) => s.replace(re, () => content);
      }
      throw new UnsupportedError('Replace normalizer without a String or Regex pattern is not supported');
    }
    case 'Precompiled': {
      const charsmap = precompiledFromBase64(json.precompiled_charsmap, where);
      return (s) => charsmap.normalize(s);
    }
    case 'Sequence': {
      if (!Array.isArray(json.normalizers)) throw new UnsupportedError('a Sequence normalizer needs a list of normalizers');
      const parts = (json.normalizers as any[]).map((n) => normalizerFromJson(n, bert, where)).filter((n): n is Normalizer => !!n);
      return (s) => {
        for (const n of parts) s = n(s);
        return s;
      };
    }
    default:
      throw new UnsupportedError(`normalizer type ${JSON.stringify(json.type)} is not supported`);
  }
}
