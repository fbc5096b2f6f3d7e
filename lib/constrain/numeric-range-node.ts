/**
 * An integer or number within minimum / maximum / exclusiveMinimum / exclusiveMaximum, as an
 * explicit automaton over the bytes `-`, `.` and digits, built breadth first and trimmed (a state
 * from which no text in range follows is dropped, so the mask never dead-ends). A text is compared
 * digit by digit with the bounds' shortest decimal forms (String(bound)). Texts have at most 15
 * digits (integer and fraction together) and no exponent: distinct decimals of 15 digits are
 * distinct doubles in the same order, and none but the bound's own form parses to a bound, so the
 * decimal comparison is exactly the comparison ajv makes on the parsed value.
 */
import { REJECT, type GrammarNode } from './automaton';
import type { PatternBudget } from './char-dfa';
import type { NodeIds } from './json-nodes';

/** Digits in a bounded number's text (integer part and fraction together). */
export const MAX_BOUNDED_DIGITS = 15;
const MINUS = 10;
const DOT = 11;
const SYMBOLS = 12;

/** A bound's magnitude as decimal digits: the integer part without leading zeros, the fraction without trailing ones. */
interface Decimal {
  readonly int: string;
  readonly frac: string;
  readonly exclusive: boolean;
}

/** The shortest decimal form of |x|. */
function decimal(x: number, exclusive: boolean): Decimal {
  const m = /^(\d+)(?:\.(\d+))?(?:e([+-]\d+))?$/.exec(String(Math.abs(x)))!;
  let digits = m[1] + (m[2] ?? '');
  let point = m[1].length + Number(m[3] ?? 0);
  if (point < 0) {
    digits = '0'.repeat(-point) + digits;
    point = 0;
  }
  if (point > digits.length) digits += '0'.repeat(point - digits.length);
  return { int: digits.slice(0, point).replace(/^0+/, ''), frac: digits.slice(point).replace(/0+$/, ''), exclusive };
}

type Rel = 0 | 1 | 2; // below, equal so far, above
const BELOW = 0;
const EQUAL = 1;
const ABOVE = 2;

/** The bounds of a magnitude (a value's absolute value) for one sign; null: no value of that sign. */
interface Side {
  readonly lower: Decimal | null;
  readonly upper: Decimal | null;
}

interface Abstract {
  phase: 'start' | 'minus' | 'zero' | 'int' | 'dot' | 'frac';
  negative: boolean;
  /** Digits written (integer part without a lone leading 0, and fraction). */
  digits: number;
  /** Fraction digits written. */
  n: number;
  /** In 'int': the integer digits compared, as text, with each bound's integer part so far; in 'frac': the value with the bound. */
  relLower: Rel;
  relUpper: Rel;
}

const keyOf = (a: Abstract) => `${a.phase}${a.negative ? '-' : '+'}${a.digits}.${a.n}.${a.relLower}${a.relUpper}`;

/** The relation of the integer part written (`digits` digits) with bound `b`, the text compare `lex` so far. */
function intRelation(digits: number, lex: Rel, b: Decimal | null): Rel {
  if (b === null) return EQUAL; // unused
  if (digits < b.int.length) return BELOW;
  if (digits > b.int.length) return ABOVE;
  return lex;
}

/** The final relation of a value with a bound it equals so far: the bound's remaining fraction decides. */
function endRelation(rel: Rel, n: number, b: Decimal): Rel {
  return rel === EQUAL && n < b.frac.length ? BELOW : rel;
}

export class NumericRangeNode implements GrammarNode {
  readonly id: number;
  readonly start = 0;

  private constructor(
    ids: NodeIds,
    /** next[s × SYMBOLS + symbol] (symbol: digit 0-9, 10 '-', 11 '.'), -1 where rejected; state 0 the start. */
    private readonly next: Int32Array,
    private readonly accept: Uint8Array,
  ) {
    this.id = ids.take(next.byteLength + accept.byteLength);
  }

  /**
   * The node of the integers (or numbers) in the range, or null when no text of at most 15 digits
   * is in it. `min`/`max`: inclusive or, with the exclusive flags, exclusive bounds (±Infinity: none).
   */
  static *build(
    ids: NodeIds,
    integer: boolean,
    range: { min: number; max: number; exclusiveMin: boolean; exclusiveMax: boolean },
    budget: PatternBudget,
    where: string,
  ): Generator<void, NumericRangeNode | null> {
    const { min, max, exclusiveMin, exclusiveMax } = range;
    const positive: Side | null = max < 0 || (max === 0 && exclusiveMax) ? null : { lower: min > 0 || (min === 0 && exclusiveMin) ? decimal(min, exclusiveMin) : null, upper: Number.isFinite(max) ? decimal(max, exclusiveMax) : null };
    // A negative value -m is in range when -max <= m <= -min.
    const negative: Side | null = min > 0 || (min === 0 && exclusiveMin) ? null : { lower: max < 0 || (max === 0 && exclusiveMax) ? decimal(max, exclusiveMax) : null, upper: Number.isFinite(min) ? decimal(min, exclusiveMin) : null };
    const sideOf = (a: Abstract) => (a.negative ? negative : positive);

    const accepting = (a: Abstract): boolean => {
      const side = sideOf(a);
      if (side === null || a.phase === 'start' || a.phase === 'minus' || a.phase === 'dot') return false;
      const inInt = a.phase === 'int' || a.phase === 'zero';
      const ok = (b: Decimal | null, rel: Rel, isLower: boolean): boolean => {
        if (b === null) return true;
        let r = inInt ? intRelation(a.digits, rel, b) : rel;
        r = endRelation(r, inInt ? 0 : a.n, b);
        if (r === EQUAL) return !b.exclusive;
        return isLower ? r === ABOVE : r === BELOW;
      };
      return ok(side.lower, a.relLower, true) && ok(side.upper, a.relUpper, false);
    };

    const stepOf = (a: Abstract, symbol: number): Abstract | null => {
      const digit = symbol < 10;
      switch (a.phase) {
        case 'start':
          if (symbol === MINUS) return negative === null ? null : { ...a, phase: 'minus', negative: true };
          if (!digit || positive === null) return null;
          return stepOf({ ...a, phase: 'minus' }, symbol);
        case 'minus':
          if (!digit) return null;
          if (symbol === 0) return { ...a, phase: 'zero' };
          return intDigit(a, symbol);
        case 'zero':
          return symbol === DOT && !integer ? { ...toFrac(a), phase: 'dot' } : null;
        case 'int':
          if (digit) return a.digits < MAX_BOUNDED_DIGITS ? intDigit(a, symbol) : null;
          return symbol === DOT && !integer && a.digits < MAX_BOUNDED_DIGITS ? { ...toFrac(a), phase: 'dot' } : null;
        case 'dot':
        case 'frac':
          if (!digit || a.digits >= MAX_BOUNDED_DIGITS) return null;
          return fracDigit(a, symbol);
      }
    };
    // The integer part's digits compare as text with each bound's integer part, position by position.
    const intDigit = (a: Abstract, d: number): Abstract => {
      const side = sideOf(a)!;
      const lex = (rel: Rel, b: Decimal | null): Rel => {
        if (b === null || rel !== EQUAL || a.digits >= b.int.length) return rel;
        const bd = b.int.charCodeAt(a.digits) - 0x30;
        return d < bd ? BELOW : d > bd ? ABOVE : EQUAL;
      };
      return { ...a, phase: 'int', digits: a.digits + 1, relLower: lex(a.relLower, side.lower), relUpper: lex(a.relUpper, side.upper) };
    };
    const toFrac = (a: Abstract): Abstract => {
      const side = sideOf(a)!;
      const digits = a.phase === 'zero' ? 0 : a.digits;
      return { ...a, digits, n: 0, relLower: intRelation(digits, a.relLower, side.lower), relUpper: intRelation(digits, a.relUpper, side.upper) };
    };
    const fracDigit = (a: Abstract, d: number): Abstract => {
      const side = sideOf(a)!;
      const cmp = (rel: Rel, b: Decimal | null): Rel => {
        if (b === null || rel !== EQUAL) return rel;
        const bd = a.n < b.frac.length ? b.frac.charCodeAt(a.n) - 0x30 : 0;
        return d < bd ? BELOW : d > bd ? ABOVE : EQUAL;
      };
      const relLower = cmp(a.relLower, side.lower);
      const relUpper = cmp(a.relUpper, side.upper);
      // Past the bounds' digits only the digit count matters: n is kept while a relation is still open.
      const open = (relLower === EQUAL && side.lower !== null) || (relUpper === EQUAL && side.upper !== null);
      return { ...a, phase: 'frac', digits: a.digits + 1, n: open ? a.n + 1 : 0, relLower, relUpper };
    };

    const states: Abstract[] = [{ phase: 'start', negative: false, digits: 0, n: 0, relLower: EQUAL, relUpper: EQUAL }];
    const index = new Map<string, number>([[keyOf(states[0]), 0]]);
    const next: number[] = [];
    budget.take(1, where);
    for (let s = 0; s < states.length; s++) {
      if (s % 64 === 63) yield;
      for (let symbol = 0; symbol < SYMBOLS; symbol++) {
        const t = stepOf(states[s], symbol);
        if (t === null) {
          next[s * SYMBOLS + symbol] = -1;
          continue;
        }
        const key = keyOf(t);
        let id = index.get(key);
        if (id === undefined) {
          budget.take(1, where);
          id = states.length;
          index.set(key, id);
          states.push(t);
        }
        next[s * SYMBOLS + symbol] = id;
      }
    }
    // Trim: keep the states from which an accepting one is reachable.
    const n = states.length;
    const live = new Uint8Array(n);
    const accept = states.map(accepting);
    const reverse: number[][] = Array.from({ length: n }, () => []);
    for (let s = 0; s < n; s++) for (let symbol = 0; symbol < SYMBOLS; symbol++) if (next[s * SYMBOLS + symbol] >= 0) reverse[next[s * SYMBOLS + symbol]].push(s);
    const stack: number[] = [];
    for (let s = 0; s < n; s++) if (accept[s]) stack.push(s);
    while (stack.length > 0) {
      const s = stack.pop()!;
      if (live[s]) continue;
      live[s] = 1;
      for (const p of reverse[s]) if (!live[p]) stack.push(p);
    }
    if (!live[0]) return null;
    const table = new Int32Array(n * SYMBOLS);
    for (let s = 0; s < n; s++) for (let symbol = 0; symbol < SYMBOLS; symbol++) {
      const t = next[s * SYMBOLS + symbol];
      table[s * SYMBOLS + symbol] = t >= 0 && live[t] ? t : -1;
    }
    return new NumericRangeNode(ids, table, Uint8Array.from(accept, (a) => (a ? 1 : 0)));
  }

  step(sub: number, b: number): number {
    const symbol = b >= 0x30 && b <= 0x39 ? b - 0x30 : b === 0x2d ? MINUS : b === 0x2e ? DOT : -1;
    if (symbol < 0) return REJECT;
    const t = this.next[sub * SYMBOLS + symbol];
    return t < 0 ? REJECT : t;
  }

  accepting(sub: number): boolean {
    return this.accept[sub] === 1;
  }
}
