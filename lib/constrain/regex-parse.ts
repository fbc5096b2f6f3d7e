/**
 * The regular-expression subset that `pattern` (and `format`, lib/constrain/formats.ts) compile
 * from, parsed into a tree over Unicode code points, with ECMAScript's meaning under the `u` flag
 * (what ajv tests a pattern with). Supported: literal characters and escaped syntax characters,
 * classes `[a-z0-9_]` and `[^...]`, `\d \w \s` and their negations `\D \W \S`, `.`, control escapes
 * (`\n \r \t \f \v \0`, `\xHH`, `\uHHHH`, `\u{H...}`), groups `(...)`, `(?:...)`, `(?<name>...)`,
 * alternation, `? * + {m} {m,} {m,n}` (lazy forms too: the same language), and the anchors `^` at
 * the start and `$` at the end of a top-level alternative; a side without its anchor may have any
 * text around the match (JSON Schema's search semantics). Anything else (backreferences,
 * lookaround, `\b`, `\p{...}`, anchors inside) is an UnsupportedError naming the feature.
 */
import { UnsupportedError } from '../base/errors';

/** Code point ranges, sorted, disjoint and not adjacent: [lo0, hi0, lo1, hi1, ...], inclusive. */
export type Ranges = readonly number[];

export type Regex =
  | { readonly kind: 'chars'; readonly ranges: Ranges }
  | { readonly kind: 'seq'; readonly items: readonly Regex[] }
  | { readonly kind: 'alt'; readonly items: readonly Regex[] }
  | { readonly kind: 'repeat'; readonly item: Regex; readonly min: number; readonly max: number };

export const MAX_CODE_POINT = 0x10ffff;
/** Repetition counts past this are refused (the automaton's state bound refuses far smaller ones). */
const MAX_REPEAT = 100_000;

export function normalize(ranges: readonly number[]): Ranges {
  const pairs: [number, number][] = [];
  for (let i = 0; i < ranges.length; i += 2) pairs.push([ranges[i], ranges[i + 1]]);
  pairs.sort((a, b) => a[0] - b[0]);
  const out: number[] = [];
  for (const [lo, hi] of pairs) {
    if (out.length > 0 && lo <= out[out.length - 1] + 1) out[out.length - 1] = Math.max(out[out.length - 1], hi);
    else out.push(lo, hi);
  }
  return out;
}

export function complement(ranges: Ranges): Ranges {
  const out: number[] = [];
  let next = 0;
  for (let i = 0; i < ranges.length; i += 2) {
    if (ranges[i] > next) out.push(next, ranges[i] - 1);
    next = ranges[i + 1] + 1;
  }
  if (next <= MAX_CODE_POINT) out.push(next, MAX_CODE_POINT);
  return out;
}

const DIGIT: Ranges = [0x30, 0x39];
const WORD: Ranges = normalize([0x30, 0x39, 0x41, 0x5a, 0x5f, 0x5f, 0x61, 0x7a]);
// ECMAScript's WhiteSpace and LineTerminator.
const SPACE: Ranges = normalize([0x09, 0x0d, 0x20, 0x20, 0xa0, 0xa0, 0x1680, 0x1680, 0x2000, 0x200a, 0x2028, 0x2029, 0x202f, 0x202f, 0x205f, 0x205f, 0x3000, 0x3000, 0xfeff, 0xfeff]);
/** `.`: anything but a line terminator. */
const DOT: Ranges = complement(normalize([0x0a, 0x0a, 0x0d, 0x0d, 0x2028, 0x2029]));
/** Any code point (the text around an unanchored match). */
export const ANY: Ranges = [0, MAX_CODE_POINT];

const chars = (ranges: Ranges): Regex => ({ kind: 'chars', ranges });
const EMPTY: Regex = { kind: 'seq', items: [] };

const SYNTAX = '^$\\.*+?()[]{}|/';
const CONTROL: Record<string, number> = { n: 0x0a, r: 0x0d, t: 0x09, f: 0x0c, v: 0x0b, '0': 0 };

class Parser {
  private at = 0;
  constructor(
    private readonly source: string,
    private readonly where: string,
  ) {}

  private fail(feature: string): never {
    throw new UnsupportedError(`${this.where}: ${feature} is not supported in a constrained pattern (the supported subset is listed in docs/server.md)`);
  }

  private peek(): string | undefined {
    return this.source[this.at];
  }

  /** The next code point as a string (a surrogate pair whole). */
  private take(): string {
    const cp = this.source.codePointAt(this.at);
    if (cp === undefined) this.fail('a pattern that ends early');
    const ch = String.fromCodePoint(cp);
    this.at += ch.length;
    return ch;
  }

  parse(): Regex {
    const alternatives: Regex[] = [];
    for (;;) {
      alternatives.push(this.topAlternative());
      if (this.peek() === undefined) break;
      this.at++; // '|'
    }
    return alternatives.length === 1 ? alternatives[0] : { kind: 'alt', items: alternatives };
  }

  /** One top-level alternative with its anchors: an unanchored side takes any text. */
  private topAlternative(): Regex {
    const anchoredStart = this.peek() === '^';
    if (anchoredStart) this.at++;
    const items = this.sequence(true);
    const anchoredEnd = this.peek() === '$';
    if (anchoredEnd) {
      this.at++;
      if (this.peek() !== undefined && this.peek() !== '|') this.fail('an anchor ($) inside the pattern');
    }
    if (this.peek() === ')') this.fail('an unbalanced )');
    const around = { kind: 'repeat', item: chars(ANY), min: 0, max: Infinity } as const;
    return { kind: 'seq', items: [...(anchoredStart ? [] : [around]), ...items, ...(anchoredEnd ? [] : [around])] };
  }

  private alternation(): Regex {
    const alternatives: Regex[] = [{ kind: 'seq', items: this.sequence(false) }];
    while (this.peek() === '|') {
      this.at++;
      alternatives.push({ kind: 'seq', items: this.sequence(false) });
    }
    return alternatives.length === 1 ? alternatives[0] : { kind: 'alt', items: alternatives };
  }

  private sequence(top: boolean): Regex[] {
    const items: Regex[] = [];
    for (;;) {
      const c = this.peek();
      if (c === undefined || c === '|' || c === ')') return items;
      if (c === '$') {
        if (top) return items;
        this.fail('an anchor ($) inside a group');
      }
      if (c === '^') this.fail('an anchor (^) inside the pattern');
      items.push(this.quantified(this.atom()));
    }
  }

  private atom(): Regex {
    const c = this.take();
    switch (c) {
      case '.':
        return chars(DOT);
      case '[':
        return chars(this.charClass());
      case '(':
        return this.group();
      case '\\':
        return chars(this.escape(false));
      case '*':
      case '+':
      case '?':
        return this.fail(`a quantifier (${c}) with nothing before it`);
      case '{':
        return this.fail('a quantifier ({) with nothing before it');
      case ']':
      case '}':
        return this.fail(`a lone ${c} (escape it)`);
      default: {
        const cp = c.codePointAt(0)!;
        return chars([cp, cp]);
      }
    }
  }

  private group(): Regex {
    if (this.peek() === '?') {
      this.at++;
      const kind = this.take();
      if (kind === '<') {
        const next = this.peek();
        if (next === '=' || next === '!') this.fail('lookbehind ((?<= or (?<!)');
        while (this.peek() !== undefined && this.peek() !== '>') {
          if (!/[A-Za-z0-9_$]/.test(this.take())) this.fail('a group name with that character');
        }
        if (this.take() !== '>') this.fail('an unclosed group name');
      } else if (kind === '=' || kind === '!') {
        this.fail(`lookahead ((?${kind})`);
      } else if (kind !== ':') {
        this.fail(`the group modifier (?${kind}`);
      }
    }
    const inner = this.alternation();
    if (this.peek() !== ')') this.fail('an unclosed group');
    this.at++;
    return inner;
  }

  private quantified(atom: Regex): Regex {
    let item = atom;
    for (;;) {
      const c = this.peek();
      let min: number;
      let max: number;
      if (c === '*' || c === '+' || c === '?') {
        this.at++;
        [min, max] = c === '*' ? [0, Infinity] : c === '+' ? [1, Infinity] : [0, 1];
      } else if (c === '{') {
        const m = /^\{(\d+)(,(\d*))?\}/.exec(this.source.slice(this.at));
        if (m === null) this.fail('a { that is not a quantifier {m}, {m,} or {m,n} (escape it)');
        this.at += m[0].length;
        min = Number(m[1]);
        max = m[2] === undefined ? min : m[3] === '' ? Infinity : Number(m[3]);
        if (min > MAX_REPEAT || (max !== Infinity && max > MAX_REPEAT)) this.fail(`a repetition count past ${MAX_REPEAT}`);
        if (max < min) this.fail('a quantifier {m,n} with n below m');
      } else {
        return item;
      }
      if (this.peek() === '?') this.at++; // lazy: the same language
      if (this.peek() === '*' || this.peek() === '+' || this.peek() === '{') {
        if (this.peek() !== '{' || /^\{\d/.test(this.source.slice(this.at))) this.fail('a possessive or doubled quantifier');
      }
      item = { kind: 'repeat', item, min, max };
    }
  }

  /** After a backslash: the ranges it stands for. */
  private escape(inClass: boolean): Ranges {
    const c = this.take();
    switch (c) {
      case 'd':
        return DIGIT;
      case 'D':
        return complement(DIGIT);
      case 'w':
        return WORD;
      case 'W':
        return complement(WORD);
      case 's':
        return SPACE;
      case 'S':
        return complement(SPACE);
      case 'x': {
        const m = /^[0-9A-Fa-f]{2}/.exec(this.source.slice(this.at));
        if (m === null) this.fail('\\x without two hex digits');
        this.at += 2;
        const cp = parseInt(m[0], 16);
        return [cp, cp];
      }
      case 'u': {
        const m = /^(?:([0-9A-Fa-f]{4})|\{([0-9A-Fa-f]{1,6})\})/.exec(this.source.slice(this.at));
        if (m === null) this.fail('\\u without four hex digits or {hex}');
        this.at += m[0].length;
        const cp = parseInt(m[1] ?? m[2], 16);
        if (cp > MAX_CODE_POINT) this.fail('a code point past U+10FFFF');
        return [cp, cp];
      }
      case 'b':
        if (inClass) return [0x08, 0x08];
        return this.fail('a word boundary (\\b)');
      case 'B':
        return this.fail('a word boundary (\\B)');
      case 'p':
      case 'P':
        return this.fail(`a Unicode property escape (\\${c}{...})`);
      case 'c':
        return this.fail('a control-letter escape (\\c)');
      case 'k':
        return this.fail('a named backreference (\\k)');
      default:
        if (c === '0' && /[0-9]/.test(this.peek() ?? '')) this.fail('an octal escape');
        if (c in CONTROL) return [CONTROL[c], CONTROL[c]];
        if (/[1-9]/.test(c)) this.fail(`a backreference (\\${c})`);
        if (SYNTAX.includes(c)) {
          const cp = c.codePointAt(0)!;
          return [cp, cp];
        }
        return this.fail(`the escape \\${c}`);
    }
  }

  /** After '[': the class's ranges. */
  private charClass(): Ranges {
    const negated = this.peek() === '^';
    if (negated) this.at++;
    const ranges: number[] = [];
    let first = true;
    for (;;) {
      const c = this.peek();
      if (c === undefined) this.fail('an unclosed [');
      if (c === ']' && !first) break;
      if (c === ']') this.fail('an empty class []');
      first = false;
      const lo = this.classAtom();
      if (this.peek() === '-' && this.source[this.at + 1] !== ']' && this.source[this.at + 1] !== undefined) {
        this.at++;
        const hi = this.classAtom();
        if (lo.length !== 2 || lo[0] !== lo[1] || hi.length !== 2 || hi[0] !== hi[1]) this.fail('a class range with a class escape at one end');
        if (hi[0] < lo[0]) this.fail('a class range out of order');
        ranges.push(lo[0], hi[0]);
      } else {
        ranges.push(...lo);
      }
    }
    this.at++;
    const set = normalize(ranges);
    return negated ? complement(set) : set;
  }

  private classAtom(): Ranges {
    const c = this.take();
    if (c === '\\') {
      if (this.peek() === '-') {
        this.at++;
        return [0x2d, 0x2d];
      }
      return this.escape(true);
    }
    if (c === '[' && this.peek() === ':') this.fail('a POSIX class ([:name:])');
    const cp = c.codePointAt(0)!;
    return [cp, cp];
  }
}

/** `source` parsed as a pattern (UnsupportedError naming what is outside the subset; `where` prefixes the message). */
export function parseRegex(source: string, where: string): Regex {
  return new Parser(source, where).parse();
}

/** A regex for one exact text. */
export function literalRegex(text: string): Regex {
  const items: Regex[] = [];
  for (const ch of text) {
    const cp = ch.codePointAt(0)!;
    items.push(chars([cp, cp]));
  }
  return items.length === 1 ? items[0] : { kind: 'seq', items };
}

export { EMPTY as EMPTY_REGEX };
