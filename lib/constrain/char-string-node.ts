/**
 * A JSON string whose value (its code points, escapes decoded) is constrained: by a pattern's
 * automaton (lib/constrain/char-dfa.ts), by minLength / maxLength in code points (what ajv counts),
 * or both. The node decodes the JSON text byte by byte (raw UTF-8 or escapes) and takes a byte only
 * when some whole text through it is still valid: a partial UTF-8 sequence or `\u` escape only when
 * a code point it can become is allowed, a code point only when a valid value can still follow it
 * within the lengths (a table of the lengths each pattern state can still accept). So the mask
 * never reaches a dead end, and every valid value stays writable: code points below U+0020, `"` and
 * `\` through escapes, the rest raw or as `\uXXXX` (astral code points raw; lone surrogates, which
 * no UTF-8 text holds, are not written).
 */
import { REJECT, type GrammarNode } from './automaton';
import type { CharDfa, PatternBudget } from './char-dfa';
import type { NodeIds } from './json-nodes';
import { MAX_CODE_POINT } from './regex-parse';

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const SURROGATE_LO = 0xd800;
const SURROGATE_HI = 0xdfff;

// Decoder sub-states (the low part of the node's sub-state).
const D_OPEN = 0;
const D_CONTENT = 1;
const D_ESCAPE = 2;
const D_DONE = 3;
/** \u with k digits read (k in 0..3), value v: D_HEX + k × 65536 + v. */
const D_HEX = 4;
/** Inside a UTF-8 sequence: D_UTF + phase × 32768 + bits so far (phase: sequence length and bytes still due). */
const D_UTF = D_HEX + 4 * 65536;
const STRIDE = D_UTF + 6 * 32768;
/** [length, bytes due] of each UTF phase. */
const UTF_PHASES: readonly [number, number][] = [
  [2, 1],
  [3, 2],
  [3, 1],
  [4, 3],
  [4, 2],
  [4, 1],
];
const phaseOf = (length: number, due: number) => UTF_PHASES.findIndex(([l, d]) => l === length && d === due);
/** The code points a UTF-8 sequence of each length encodes (shorter forms are overlong). */
const SEQUENCE_RANGE: Record<number, [number, number]> = { 2: [0x80, 0x7ff], 3: [0x800, 0xffff], 4: [0x10000, MAX_CODE_POINT] };
const SHORT_ESCAPES: Record<number, number> = { 0x22: 0x22, 0x5c: 0x5c, 0x2f: 0x2f, 0x62: 0x08, 0x66: 0x0c, 0x6e: 0x0a, 0x72: 0x0d, 0x74: 0x09 };
const hexValue = (b: number) => (b >= 0x30 && b <= 0x39 ? b - 0x30 : b >= 0x41 && b <= 0x46 ? b - 0x37 : b >= 0x61 && b <= 0x66 ? b - 0x57 : -1);

/** The code points a value may hold, and how many (min ≤ count ≤ max; max may be Infinity). */
export class CharConstraint {
  /** The count is kept up to cap (max, or min when there is no max: past it any count will do). */
  readonly cap: number;
  private readonly states: number;
  /**
   * nextLength[k × states + s]: the least length ℓ ≥ k of a text the pattern accepts from state s,
   * within [k, cap] (cap + 1 when none). Without a max, length cap stands for "cap or more".
   */
  private readonly nextLength: Int32Array | undefined;
  /** States where every code point keeps the state and the text may end. */
  private readonly free: Uint8Array | undefined;

  private constructor(
    readonly dfa: CharDfa | null,
    readonly min: number,
    readonly max: number,
    nextLength: Int32Array | undefined,
  ) {
    this.cap = max === Infinity ? min : max;
    this.states = dfa === null ? 1 : dfa.states;
    this.nextLength = nextLength;
    if (dfa !== null) {
      this.free = new Uint8Array(dfa.states);
      for (let s = 0; s < dfa.states; s++) {
        let all = dfa.accepting[s] === 1;
        for (let c = 0; c < dfa.classes && all; c++) all = dfa.next[s * dfa.classes + c] === s;
        this.free[s] = all ? 1 : 0;
      }
    }
  }

  /** A constraint; its length table is counted against `budget` (a cell is 1/256 of a state). */
  static *build(dfa: CharDfa | null, min: number, max: number, budget: PatternBudget, where: string): Generator<void, CharConstraint> {
    if (dfa === null || dfa.start < 0) return new CharConstraint(dfa, min, max, undefined);
    const cap = max === Infinity ? min : max;
    const n = dfa.states;
    budget.take(Math.ceil(((cap + 1) * n) / 256), where);
    const succ = Array.from({ length: n }, (_, s) => dfa.successors(s));
    // exact[k × n + s]: some text of exactly k code points is accepted from s.
    const exact = new Uint8Array((cap + 1) * n);
    for (let s = 0; s < n; s++) exact[s] = dfa.accepting[s];
    for (let k = 1; k <= cap; k++) {
      if (k % 16 === 0) yield;
      const row = k * n;
      const prev = row - n;
      for (let s = 0; s < n; s++) {
        for (const t of succ[s]) {
          if (exact[prev + t]) {
            exact[row + s] = 1;
            break;
          }
        }
      }
    }
    if (max === Infinity && cap > 0) {
      // Length cap or more: the states that reach one accepting exactly cap more.
      const reverse: number[][] = Array.from({ length: n }, () => []);
      for (let s = 0; s < n; s++) for (const t of succ[s]) reverse[t].push(s);
      const row = cap * n;
      const stack: number[] = [];
      for (let s = 0; s < n; s++) if (exact[row + s]) stack.push(s);
      while (stack.length > 0) {
        const s = stack.pop()!;
        for (const p of reverse[s]) {
          if (!exact[row + p]) {
            exact[row + p] = 1;
            stack.push(p);
          }
        }
      }
    }
    yield;
    const nextLength = new Int32Array((cap + 2) * n).fill(cap + 1);
    for (let k = cap; k >= 0; k--) for (let s = 0; s < n; s++) nextLength[k * n + s] = exact[k * n + s] ? k : nextLength[(k + 1) * n + s];
    return new CharConstraint(dfa, min, max, nextLength);
  }

  get byteLength(): number {
    return (this.dfa?.byteLength ?? 0) + (this.nextLength?.byteLength ?? 0) + (this.free?.byteLength ?? 0);
  }

  get start(): number {
    return this.dfa === null ? 0 : this.dfa.start;
  }

  /** True when (state s, count c) can still end in a valid value. */
  live(s: number, c: number): boolean {
    if (s < 0) return false;
    if (this.max === Infinity && c >= this.min) return true; // the automaton is trimmed
    if (this.nextLength === undefined) return c <= this.max;
    const lo = Math.max(0, this.min - c);
    const hi = this.max === Infinity ? this.cap : this.max - c;
    return hi >= 0 && this.nextLength[lo * this.states + s] <= hi;
  }

  /** The state after code point cp, packed as count × states + state, or -1 when no valid value goes on from it. */
  next(s: number, c: number, cp: number): number {
    const t = this.dfa === null ? 0 : this.dfa.step(s, cp);
    if (t < 0 || c + 1 > this.max) return -1;
    const count = Math.min(c + 1, this.cap);
    return this.live(t, count) ? this.pack(t, count) : -1;
  }

  /** True when some code point in [lo, hi] (surrogates left out) leads to a live state. */
  liveIn(s: number, c: number, lo: number, hi: number): boolean {
    if (lo <= SURROGATE_HI && hi >= SURROGATE_LO) {
      return (lo < SURROGATE_LO && this.liveIn(s, c, lo, SURROGATE_LO - 1)) || (hi > SURROGATE_HI && this.liveIn(s, c, SURROGATE_HI + 1, hi));
    }
    if (lo > hi) return false;
    const dfa = this.dfa;
    if (dfa === null) return c + 1 <= this.max;
    for (let k = dfa.classOf(lo); k < dfa.classes && dfa.classStarts[k] <= hi; k++) {
      const t = dfa.next[s * dfa.classes + k];
      if (t >= 0 && c + 1 <= this.max && this.live(t, Math.min(c + 1, this.cap))) return true;
    }
    return false;
  }

  accepting(s: number, c: number): boolean {
    return c >= this.min && (this.dfa === null || this.dfa.accepting[s] === 1);
  }

  /**
   * True when a lone surrogate (a `\\uD800`-`\\uDFFF` escape) can be taken as one code point: where
   * the pattern ignores code points and the minimum is met (a pair, one code point to ajv, then
   * counts two: never past maxLength). The mask's fast path (isFree) lets such escapes through.
   */
  takesSurrogate(s: number, c: number): boolean {
    return c >= this.min && c + 1 <= this.max && (this.dfa === null || this.free![s] === 1);
  }

  /** True when any `slack` code points more are taken and the value may end after them (the mask's fast path). */
  isFree(s: number, c: number, slack: number): boolean {
    if (c < this.min || c + slack > this.max) return false;
    return this.dfa === null || this.free![s] === 1;
  }

  pack(s: number, c: number): number {
    return c * this.states + s;
  }

  unpack(packed: number): [number, number] {
    const s = packed % this.states;
    return [s, (packed - s) / this.states];
  }
}

/** A JSON string whose decoded value the CharConstraint allows. Sub-state: packed (count, state) × STRIDE + decoder state. */
export class CharStringNode implements GrammarNode {
  readonly id: number;
  readonly start: number;

  constructor(
    ids: NodeIds,
    private readonly chars: CharConstraint,
  ) {
    this.id = ids.take(chars.byteLength);
    this.start = chars.start * STRIDE + D_OPEN;
  }

  /** True when the value can be anything at all (the node admits at least one string: checked by the compiler). */
  get admitsSome(): boolean {
    return this.chars.live(this.chars.start, 0);
  }

  step(sub: number, b: number): number {
    const dec = sub % STRIDE;
    const packed = (sub - dec) / STRIDE;
    const chars = this.chars;
    const [s, c] = chars.unpack(packed);
    const at = (p: number, d: number) => p * STRIDE + d;
    const take = (cp: number) => {
      const p = chars.next(s, c, cp);
      return p < 0 ? REJECT : at(p, D_CONTENT);
    };
    if (dec === D_OPEN) return b === QUOTE ? at(packed, D_CONTENT) : REJECT;
    if (dec === D_DONE) return REJECT;
    if (dec === D_CONTENT) {
      if (b === QUOTE) return chars.accepting(s, c) ? D_DONE : REJECT;
      if (b === BACKSLASH) return chars.liveIn(s, c, 0, 0xffff) ? at(packed, D_ESCAPE) : REJECT;
      if (b < 0x20) return REJECT;
      if (b < 0x80) return take(b);
      let length: number;
      let bits: number;
      if (b >= 0xc2 && b <= 0xdf) [length, bits] = [2, b & 0x1f];
      else if (b >= 0xe0 && b <= 0xef) [length, bits] = [3, b & 0x0f];
      else if (b >= 0xf0 && b <= 0xf4) [length, bits] = [4, b & 0x07];
      else return REJECT;
      return this.partial(packed, s, c, length, length - 1, bits);
    }
    if (dec === D_ESCAPE) {
      if (b === 0x75) return at(packed, D_HEX); // \u: checked live on the backslash
      const cp = SHORT_ESCAPES[b];
      return cp === undefined ? REJECT : take(cp);
    }
    if (dec < D_UTF) {
      const h = hexValue(b);
      if (h < 0) return REJECT;
      const k = Math.floor((dec - D_HEX) / 65536) + 1;
      const v = ((dec - D_HEX) % 65536) * 16 + h;
      const surrogates = chars.takesSurrogate(s, c);
      if (k === 4) {
        if (v < SURROGATE_LO || v > SURROGATE_HI) return take(v);
        return surrogates ? at(chars.pack(s, Math.min(c + 1, chars.cap)), D_CONTENT) : REJECT;
      }
      const shift = 4 * (4 - k);
      const lo = v << shift;
      const hi = ((v + 1) << shift) - 1;
      return chars.liveIn(s, c, lo, hi) || (surrogates && lo <= SURROGATE_HI && hi >= SURROGATE_LO) ? at(packed, D_HEX + k * 65536 + v) : REJECT;
    }
    if (b < 0x80 || b > 0xbf) return REJECT;
    const phase = Math.floor((dec - D_UTF) / 32768);
    const [length, due] = UTF_PHASES[phase];
    const bits = (((dec - D_UTF) % 32768) << 6) | (b & 0x3f);
    if (due === 1) {
      const [lo, hi] = SEQUENCE_RANGE[length];
      return bits < lo || bits > hi || (bits >= SURROGATE_LO && bits <= SURROGATE_HI) ? REJECT : take(bits);
    }
    return this.partial(packed, s, c, length, due - 1, bits);
  }

  /** After a UTF-8 byte that leaves `due` bytes: the sub-state, when a code point it can become is allowed. */
  private partial(packed: number, s: number, c: number, length: number, due: number, bits: number): number {
    const [first, last] = SEQUENCE_RANGE[length];
    const lo = Math.max(first, bits << (6 * due));
    const hi = Math.min(last, ((bits + 1) << (6 * due)) - 1);
    if (lo > hi || !this.chars.liveIn(s, c, lo, hi)) return REJECT;
    return packed * STRIDE + D_UTF + phaseOf(length, due) * 32768 + bits;
  }

  accepting(sub: number): boolean {
    return sub === D_DONE;
  }

  isStringContent(sub: number, slack = Infinity): boolean {
    const dec = sub % STRIDE;
    if (dec !== D_CONTENT) return false;
    const [s, c] = this.chars.unpack((sub - dec) / STRIDE);
    return this.chars.isFree(s, c, slack);
  }
}
