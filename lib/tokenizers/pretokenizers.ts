/**
 * Pre-tokenizers: the regex splits of the byte-level BPE models. Hugging Face compiles these
 * patterns with Oniguruma; JavaScript's RegExp differs in two places that matter here, so
 * patterns are translated before use:
 *  - `\s` is Unicode White_Space in Oniguruma (it has U+0085, lacks U+FEFF); in JS it is the
 *    reverse. We spell it `\p{White_Space}`.
 *  - `(?i:...)` inline flags do not exist in Node 20's RegExp; the (literal) group is expanded
 *    into case classes with the simple case folds Oniguruma applies (`s` also matches U+017F,
 *    `k` also matches U+212A).
 *  - `\p{L}`, `\p{N}`, `\p{Lu}` ... follow Node's Unicode, newer than Oniguruma's: the characters
 *    assigned since are left out, and the few whose category changed since are put back where
 *    Oniguruma had them (onig-unicode.ts).
 */
import { UnsupportedError } from '../base/errors';
import { ONIG_NEWER, ONIG_OLDER } from './onig-unicode';

/** Qwen2 / Qwen2.5 / Qwen3 (tokenizer.json Split pattern, and GGUF pre `qwen2`). */
export const QWEN2_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** Llama 3 (GGUF pre `llama-bpe`): Qwen2's with digit runs of up to 3. */
export const LLAMA3_PATTERN =
  "(?i:'s|'t|'re|'ve|'m|'ll|'d)|[^\\r\\n\\p{L}\\p{N}]?\\p{L}+|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/**
 * o200k (gpt-oss's o200k_harmony, GPT-4o; GGUF pre `gpt-4o`): words split at case changes (an
 * uppercase run, then lowercase), contractions kept on the word, digit runs of up to 3, '/' kept
 * after punctuation.
 */
export const O200K_PATTERN =
  "[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]*[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?|[^\\r\\n\\p{L}\\p{N}]?[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?|\\p{N}{1,3}| ?[^\\s\\p{L}\\p{N}]+[\\r\\n/]*|\\s*[\\r\\n]+|\\s+(?!\\S)|\\s+";

/** GPT-2's, used by HF's ByteLevel pre-tokenizer when `use_regex` is true. */
export const GPT2_PATTERN = "'s|'t|'re|'ve|'m|'ll|'d| ?\\p{L}+| ?\\p{N}+| ?[^\\s\\p{L}\\p{N}]+|\\s+(?!\\S)|\\s+";

const EXTRA_FOLDS: Record<string, string> = { s: '\u017f', k: '\u212a' };

function expandCaseInsensitive(group: string, pattern: string): string {
  let out = '';
  for (let i = 0; i < group.length; i++) {
    const c = group[i];
    if (c === '\\' || c === '[' || c === '(') {
      throw new UnsupportedError(`regex ${JSON.stringify(pattern)}: only literal text is supported inside (?i:...)`);
    }
    const lower = c.toLowerCase();
    if (lower !== c.toUpperCase()) out += `[${lower}${c.toUpperCase()}${EXTRA_FOLDS[lower] ?? ''}]`;
    else out += c === '|' ? '|' : c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  return `(?:${out})`;
}

/** A character-class body of onig-unicode.ts (code points and `a-b` ranges) → its code points. */
function codePointsOf(body: string): number[] {
  const chars = Array.from(body, (ch) => ch.codePointAt(0)!);
  const out: number[] = [];
  for (let i = 0; i < chars.length; i++) {
    const a = chars[i];
    const b = chars[i + 1] === 0x2d && i + 2 < chars.length ? chars[(i += 2)] : a;
    for (let cp = a; cp <= b; cp++) out.push(cp);
  }
  return out;
}

const classBody = (cps: readonly number[]) => cps.map((cp) => `\\u{${cp.toString(16)}}`).join('');

/** Whether Oniguruma's \p{category} holds `cp`: JS's, less the newer, plus the older (onig-unicode.ts). */
function onigHolds(category: string, cp: number): boolean {
  const ch = String.fromCodePoint(cp);
  const older = ONIG_OLDER[category] ?? '';
  if (older !== '' && new RegExp(`[${older}]`, 'u').test(ch)) return true;
  const newer = ONIG_NEWER[category] ?? '';
  return new RegExp(`^\\p{${category}}$`, 'u').test(ch) && !(newer !== '' && new RegExp(`[${newer}]`, 'u').test(ch));
}

/**
 * What a class naming `categories` must leave out of JS's match (code points newer in one member's
 * category that no member holds in Oniguruma) and add to it (the members' older code points).
 */
function classCorrection(categories: readonly string[]): { exclude: string; include: string } {
  const candidates = new Set<number>();
  for (const c of categories) for (const cp of codePointsOf(ONIG_NEWER[c] ?? '')) candidates.add(cp);
  const exclude = [...candidates].sort((a, b) => a - b).filter((cp) => !categories.some((c) => onigHolds(c, cp)));
  return { exclude: classBody(exclude), include: categories.map((c) => ONIG_OLDER[c] ?? '').join('') };
}

/** The category of the `\p{L}` / `\pN` style escape at `i`, and the escape's length. */
function categoryAt(pattern: string, i: number): { category: string; length: number } {
  const end = pattern[i + 2] === '{' ? pattern.indexOf('}', i + 2) : i + 2;
  if (end < 0 || end >= pattern.length) throw new UnsupportedError(`regex ${JSON.stringify(pattern)}: unfinished \\${pattern[i + 1]} escape at ${i}`);
  return pattern[i + 2] === '{' ? { category: pattern.slice(i + 3, end), length: end + 1 - i } : { category: pattern[i + 2], length: 3 };
}

/**
 * Translates an Oniguruma pattern (as HF tokenizer.json stores it) into an equivalent JS RegExp
 * source. Unicode categories leave out what Oniguruma does not count and add what it counts that
 * JS no longer does (onig-unicode.ts): a bare \p{C} becomes `(?:(?![newer])\p{C}|[older])`, a
 * class holding categories `(?:(?![newer])[... older])`, a negated one `(?:[^... older]|[newer])`
 * (the class's other members, \s and literals, hold none of those code points).
 */
export function translateOnigPattern(pattern: string): string {
  let out = '';
  let inClass = false;
  let classStart = 0;
  let classCategories: string[] = [];
  for (let i = 0; i < pattern.length; i++) {
    const c = pattern[i];
    if (!inClass && pattern.startsWith('(?i:', i)) {
      let depth = 1;
      let j = i + 4;
      for (; j < pattern.length && depth > 0; j++) {
        if (pattern[j] === '\\') j++;
        else if (pattern[j] === '(') depth++;
        else if (pattern[j] === ')') depth--;
      }
      out += expandCaseInsensitive(pattern.slice(i + 4, j - 1), pattern);
      i = j - 1;
      continue;
    }
    if (c === '\\') {
      const d = pattern[i + 1];
      if (d === 's') out += '\\p{White_Space}';
      else if (d === 'S') out += '\\P{White_Space}';
      else if (d === 'p' || d === 'P') {
        const { category, length } = categoryAt(pattern, i);
        const escape = `\\${d}{${category}}`;
        i += length - 1;
        const newer = ONIG_NEWER[category] ?? '';
        const older = ONIG_OLDER[category] ?? '';
        if (inClass) {
          if (d === 'P' && (newer !== '' || older !== '')) throw new UnsupportedError(`regex ${JSON.stringify(pattern)}: \\P{${category}} inside a class is not supported`);
          out += escape;
          classCategories.push(category);
        } else if (newer === '' && older === '') out += escape;
        else {
          const [less, more] = d === 'p' ? [newer, older] : [older, newer];
          out += `(?:${less === '' ? '' : `(?![${less}])`}${escape}${more === '' ? '' : `|[${more}]`})`;
        }
        continue;
      } else out += c + d;
      i++;
      continue;
    }
    if (c === '[' && !inClass) {
      inClass = true;
      classStart = out.length;
      classCategories = [];
    } else if (c === ']' && inClass) {
      inClass = false;
      const { exclude, include } = classCorrection(classCategories);
      if (exclude !== '' || include !== '') {
        const body = out.slice(classStart) + include + ']';
        const negated = body.startsWith('[^');
        const corrected = exclude === '' ? body : negated ? `(?:${body}|[${exclude}])` : `(?:(?![${exclude}])${body})`;
        out = out.slice(0, classStart) + corrected;
        continue;
      }
    } else if (!inClass && (pattern.startsWith('(?>', i) || /^[*+?}]\+/.test(pattern.slice(i, i + 2)) && i > 0)) {
      throw new UnsupportedError(`regex ${JSON.stringify(pattern)}: atomic groups and possessive quantifiers are not supported`);
    }
    out += c;
  }
  return out;
}

export function compileOnigPattern(pattern: string): RegExp {
  try {
    return new RegExp(translateOnigPattern(pattern), 'gu');
  } catch (e) {
    throw new UnsupportedError(`regex ${JSON.stringify(pattern)} cannot be compiled: ${(e as Error).message}`);
  }
}

export type SplitBehavior = 'Isolated' | 'Removed' | 'MergedWithPrevious' | 'MergedWithNext' | 'Contiguous';

/**
 * Splits `text` by the matches of `re` (a 'g' RegExp) the way HF's Split pre-tokenizer does and
 * appends the pieces to `out`. Fast path for Isolated without invert (every byte-level model).
 */
export function splitByRegex(text: string, re: RegExp, behavior: SplitBehavior, invert: boolean, out: string[]): void {
  re.lastIndex = 0;
  if (behavior === 'Isolated' && !invert) {
    let last = 0;
    for (let m = re.exec(text); m !== null; m = re.exec(text)) {
      const len = m[0].length;
      if (len === 0) {
        re.lastIndex++;
        continue;
      }
      if (m.index > last) out.push(text.slice(last, m.index));
      out.push(m[0]);
      last = m.index + len;
    }
    if (last < text.length) out.push(text.slice(last));
    return;
  }
  // General case: (piece, isDelimiter) segments covering the text, then HF's fold per behavior.
  const pieces: string[] = [];
  const delim: boolean[] = [];
  let last = 0;
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    if (m[0].length === 0) {
      re.lastIndex++;
      continue;
    }
    if (m.index > last) {
      pieces.push(text.slice(last, m.index));
      delim.push(invert);
    }
    pieces.push(m[0]);
    delim.push(!invert);
    last = m.index + m[0].length;
  }
  if (last < text.length) {
    pieces.push(text.slice(last));
    delim.push(invert);
  }
  const merged: string[] = [];
  let previousDelim = false;
  switch (behavior) {
    case 'Isolated':
      merged.push(...pieces);
      break;
    case 'Removed':
      for (let i = 0; i < pieces.length; i++) if (!delim[i]) merged.push(pieces[i]);
      break;
    case 'Contiguous':
      for (let i = 0; i < pieces.length; i++) {
        if (delim[i] && previousDelim) merged[merged.length - 1] += pieces[i];
        else merged.push(pieces[i]);
        previousDelim = delim[i];
      }
      break;
    case 'MergedWithPrevious':
      for (let i = 0; i < pieces.length; i++) {
        if (delim[i] && !previousDelim && merged.length > 0) merged[merged.length - 1] += pieces[i];
        else merged.push(pieces[i]);
        previousDelim = delim[i];
      }
      break;
    case 'MergedWithNext': {
      const rev: string[] = [];
      for (let i = pieces.length - 1; i >= 0; i--) {
        if (delim[i] && !previousDelim && rev.length > 0) rev[rev.length - 1] = pieces[i] + rev[rev.length - 1];
        else rev.push(pieces[i]);
        previousDelim = delim[i];
      }
      merged.push(...rev.reverse());
      break;
    }
  }
  for (const p of merged) out.push(p);
}

/** Splits one normalized text segment into the words the model encodes (appended to `out`). */
export type PreTokenizer = (text: string, out: string[]) => void;

type Stage = (pieces: string[]) => string[];

/** A pre-tokenizer that splits with one Oniguruma-style pattern, matches isolated. */
export function regexPreTokenizer(pattern: string): PreTokenizer {
  const re = compileOnigPattern(pattern);
  return (text, out) => splitByRegex(text, re, 'Isolated', false, out);
}

function stageFromJson(json: any): Stage[] {
  switch (json?.type) {
    case 'Sequence':
      return (json.pretokenizers as any[]).flatMap(stageFromJson);
    case 'Split': {
      const pattern = json.pattern ?? {};
      const source =
        pattern.Regex !== undefined
          ? translateOnigPattern(String(pattern.Regex))
          : String(pattern.String).replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
      const re = new RegExp(source, 'gu');
      const behavior = String(json.behavior) as SplitBehavior;
      if (!['Isolated', 'Removed', 'MergedWithPrevious', 'MergedWithNext', 'Contiguous'].includes(behavior)) {
        throw new UnsupportedError(`Split behavior ${JSON.stringify(json.behavior)} is not supported`);
      }
      const invert = !!json.invert;
      return [
        (pieces) => {
          const out: string[] = [];
          for (const p of pieces) splitByRegex(p, re, behavior, invert, out);
          return out;
        },
      ];
    }
    case 'ByteLevel': {
      const stages: Stage[] = [];
      if (json.add_prefix_space) stages.push((pieces) => pieces.map((p) => (p.startsWith(' ') ? p : ' ' + p)));
      if (json.use_regex !== false) {
        const re = compileOnigPattern(GPT2_PATTERN);
        stages.push((pieces) => {
          const out: string[] = [];
          for (const p of pieces) splitByRegex(p, re, 'Isolated', false, out);
          return out;
        });
      }
      return stages;
    }
    case 'Digits': {
      const re = json.individual_digits ? /\p{N}/gu : /\p{N}+/gu;
      return [
        (pieces) => {
          const out: string[] = [];
          for (const p of pieces) splitByRegex(p, re, 'Isolated', false, out);
          return out;
        },
      ];
    }
    default:
      throw new UnsupportedError(`pre-tokenizer type ${JSON.stringify(json?.type)} is not supported with byte-level BPE`);
  }
}

/** The pre-tokenizer of a byte-level BPE tokenizer.json (`pre_tokenizer` entry). */
export function preTokenizerFromJson(json: any): PreTokenizer {
  if (json === null || json === undefined) return (text, out) => void (text.length > 0 && out.push(text));
  // The common shapes compile to one regex pass.
  if (json.type === 'ByteLevel' && !json.add_prefix_space && json.use_regex !== false) return regexPreTokenizer(GPT2_PATTERN);
  if (
    json.type === 'Sequence' &&
    json.pretokenizers?.length === 2 &&
    json.pretokenizers[0].type === 'Split' &&
    json.pretokenizers[0].pattern?.Regex !== undefined &&
    json.pretokenizers[0].behavior === 'Isolated' &&
    !json.pretokenizers[0].invert &&
    json.pretokenizers[1].type === 'ByteLevel' &&
    json.pretokenizers[1].use_regex === false &&
    !json.pretokenizers[1].add_prefix_space
  ) {
    return regexPreTokenizer(String(json.pretokenizers[0].pattern.Regex));
  }
  const stages = stageFromJson(json);
  return (text, out) => {
    let pieces = [text];
    for (const s of stages) pieces = s(pieces);
    for (const p of pieces) if (p.length > 0) out.push(p);
  };
}
