/**
 * The nodes JSON grammars are made of (lib/constrain/automaton.ts): strings, numbers, literal sets
 * (enum, const, true/false/null), arrays, objects with declared properties, free-form objects, and
 * unions told apart by their first byte. Whitespace between tokens is allowed in runs of at most
 * MAX_WHITESPACE bytes, so a constrained generation cannot stall in whitespace.
 */
import { ConstraintError } from '../base/errors';
import { REJECT, type GrammarNode, type Push } from './automaton';
import type { ByteTrie } from './byte-trie';

export const MAX_WHITESPACE = 12;
const WS_STATES = MAX_WHITESPACE + 1;

const QUOTE = 0x22;
const BACKSLASH = 0x5c;
const isWhitespace = (b: number) => b === 0x20 || b === 0x0a || b === 0x0d || b === 0x09;
const isDigit = (b: number) => b >= 0x30 && b <= 0x39;
const isHex = (b: number) => isDigit(b) || (b >= 0x41 && b <= 0x46) || (b >= 0x61 && b <= 0x66);

/** The memory a node holds besides its tables (an estimate, for the grammar cache's budget). */
const NODE_BYTES = 256;

/** Numbers the nodes of one grammar, at most `maxNodes` of them, and adds up their memory. */
export class NodeIds {
  private next = 0;
  /** The memory of the nodes numbered so far. */
  bytes = 0;
  constructor(private readonly maxNodes = Infinity) {}

  take(tableBytes = 0): number {
    if (this.next >= this.maxNodes) {
      throw new ConstraintError('SCHEMA_TOO_LARGE', `the schema needs more than ${this.maxNodes} grammar nodes (maxNodes)`, 'maxNodes');
    }
    this.bytes += NODE_BYTES + tableBytes;
    return this.next++;
  }
}

/** Push answers, one per (child, resume) pair, made once. */
class PushCache {
  private readonly pushes = new Map<number, Push>();
  get(child: GrammarNode, resume: number, need?: number): Push {
    let p = this.pushes.get(resume);
    if (p === undefined) {
      p = need === undefined ? { child, resume } : { child, resume, need };
      this.pushes.set(resume, p);
    }
    return p;
  }
}

// String sub-states: HEX_4..HEX_1 count the \u digits still due, CONT_1..CONT_3 the UTF-8
// continuation bytes; the lead bytes E0, ED, F0 and F4 narrow the range of the next byte (no
// overlong forms, no surrogates, nothing past U+10FFFF).
const S_OPEN = 0;
const S_CONTENT = 1;
const S_ESCAPE = 2;
const S_HEX_4 = 3;
const S_HEX_1 = 6;
const S_CONT_1 = 7;
const S_CONT_3 = 9;
const S_DONE = 10;
const S_AFTER_E0 = 11; // A0..BF, then one more
const S_AFTER_ED = 12; // 80..9F, then one more
const S_AFTER_F0 = 13; // 90..BF, then two more
const S_AFTER_F4 = 14; // 80..8F, then two more

/** A JSON string: escapes, and well-formed UTF-8 (a multi-byte character may span tokens). */
export class StringNode implements GrammarNode {
  readonly id: number;
  readonly start = S_OPEN;
  constructor(ids: NodeIds) {
    this.id = ids.take();
  }

  /** The sub-state inside the string's content, between characters. */
  static readonly CONTENT = S_CONTENT;
  /** The sub-state after a backslash. */
  static readonly ESCAPE = S_ESCAPE;

  step(sub: number, b: number): number {
    switch (sub) {
      case S_OPEN:
        return b === QUOTE ? S_CONTENT : REJECT;
      case S_CONTENT:
        if (b === QUOTE) return S_DONE;
        if (b === BACKSLASH) return S_ESCAPE;
        if (b < 0x20) return REJECT;
        if (b < 0x80) return S_CONTENT;
        if (b >= 0xc2 && b <= 0xdf) return S_CONT_1;
        if (b === 0xe0) return S_AFTER_E0;
        if (b === 0xed) return S_AFTER_ED;
        if (b >= 0xe1 && b <= 0xef) return S_CONT_1 + 1;
        if (b === 0xf0) return S_AFTER_F0;
        if (b === 0xf4) return S_AFTER_F4;
        if (b >= 0xf1 && b <= 0xf3) return S_CONT_3;
        return REJECT;
      case S_AFTER_E0:
        return b >= 0xa0 && b <= 0xbf ? S_CONT_1 : REJECT;
      case S_AFTER_ED:
        return b >= 0x80 && b <= 0x9f ? S_CONT_1 : REJECT;
      case S_AFTER_F0:
        return b >= 0x90 && b <= 0xbf ? S_CONT_1 + 1 : REJECT;
      case S_AFTER_F4:
        return b >= 0x80 && b <= 0x8f ? S_CONT_1 + 1 : REJECT;
      case S_ESCAPE:
        if (b === 0x75) return S_HEX_4; // \u
        return b === QUOTE || b === BACKSLASH || b === 0x2f || b === 0x62 || b === 0x66 || b === 0x6e || b === 0x72 || b === 0x74 ? S_CONTENT : REJECT;
      default:
        if (sub >= S_HEX_4 && sub <= S_HEX_1) return isHex(b) ? (sub === S_HEX_1 ? S_CONTENT : sub + 1) : REJECT;
        if (sub >= S_CONT_1 && sub <= S_CONT_3) return b >= 0x80 && b <= 0xbf ? (sub === S_CONT_1 ? S_CONTENT : sub - 1) : REJECT;
        return REJECT;
    }
  }

  accepting(sub: number): boolean {
    return sub === S_DONE;
  }

  isStringContent(sub: number): boolean {
    return sub === S_CONTENT;
  }
}

// Number phases; the sub-state is phase + N_PHASES × (digits so far in the current part).
const N_START = 0;
const N_MINUS = 1;
const N_ZERO = 2;
const N_INT = 3;
const N_DOT = 4;
const N_FRAC = 5;
const N_EXP_MARK = 6;
const N_EXP_SIGN = 7;
const N_EXP = 8;
const N_PHASES = 9;
/** Digits of the integer part and of the fraction at most (integers stay safe), and of the exponent (numbers stay finite). */
const MAX_INT_DIGITS = 15;
const MAX_FRAC_DIGITS = 15;
const MAX_EXP_DIGITS = 2;

/** A JSON number, or with `integer` an integer (no fraction, no exponent). */
export class NumberNode implements GrammarNode {
  readonly id: number;
  readonly start = N_START;
  constructor(
    ids: NodeIds,
    readonly integer: boolean,
  ) {
    this.id = ids.take();
  }

  step(sub: number, b: number): number {
    const phase = sub % N_PHASES;
    const n = (sub - phase) / N_PHASES;
    const at = (p: number, digits: number) => p + N_PHASES * digits;
    const digit = isDigit(b);
    switch (phase) {
      case N_START:
      case N_MINUS:
        if (b === 0x2d && phase === N_START) return N_MINUS;
        if (b === 0x30) return at(N_ZERO, 1);
        return digit ? at(N_INT, 1) : REJECT;
      case N_ZERO:
      case N_INT:
        if (phase === N_INT && digit) return n < MAX_INT_DIGITS ? at(N_INT, n + 1) : REJECT;
        if (this.integer) return REJECT;
        if (b === 0x2e) return N_DOT;
        return b === 0x65 || b === 0x45 ? N_EXP_MARK : REJECT;
      case N_DOT:
        return digit ? at(N_FRAC, 1) : REJECT;
      case N_FRAC:
        if (digit) return n < MAX_FRAC_DIGITS ? at(N_FRAC, n + 1) : REJECT;
        return b === 0x65 || b === 0x45 ? N_EXP_MARK : REJECT;
      case N_EXP_MARK:
        if (b === 0x2b || b === 0x2d) return N_EXP_SIGN;
        return digit ? at(N_EXP, 1) : REJECT;
      case N_EXP_SIGN:
        return digit ? at(N_EXP, 1) : REJECT;
      case N_EXP:
        return digit && n < MAX_EXP_DIGITS ? at(N_EXP, n + 1) : REJECT;
      default:
        return REJECT;
    }
  }

  accepting(sub: number): boolean {
    const phase = sub % N_PHASES;
    return phase === N_ZERO || phase === N_INT || phase === N_FRAC || phase === N_EXP;
  }
}

/** One of a fixed set of JSON texts (enum, const, true, false, null): a byte trie, the sub-state its state. */
export class LiteralNode implements GrammarNode {
  readonly id: number;
  readonly start: number;

  constructor(
    ids: NodeIds,
    private readonly texts: ByteTrie,
  ) {
    this.id = ids.take(texts.byteLength);
    this.start = texts.start;
  }

  step(sub: number, b: number): number {
    return this.texts.step(sub, b);
  }

  accepting(sub: number): boolean {
    return this.texts.accepting(sub);
  }
}

// Array and object phases share one layout: sub = phase + phases × (whitespace run + WS_STATES × rest).
function pack(phase: number, phases: number, ws: number, rest: number): number {
  return phase + phases * (ws + WS_STATES * rest);
}
function unpack(sub: number, phases: number): { phase: number; ws: number; rest: number } {
  const phase = sub % phases;
  const r = (sub - phase) / phases;
  const ws = r % WS_STATES;
  return { phase, ws, rest: (r - ws) / WS_STATES };
}

const A_OPEN = 0;
const A_FIRST = 1; // after '['
const A_NEXT = 2; // after an item
const A_ITEM = 3; // after ','
const A_DONE = 4;
const A_PHASES = 5;

/** An array of `items`, with at least minItems and at most maxItems of them (the count saturates past both bounds). */
export class ArrayNode implements GrammarNode {
  readonly id: number;
  readonly start = A_OPEN;
  private readonly pushes = new PushCache();
  items!: GrammarNode;

  constructor(
    ids: NodeIds,
    private readonly minItems: number,
    private readonly maxItems: number | undefined,
  ) {
    this.id = ids.take();
  }

  step(sub: number, b: number): number | Push {
    const { phase, ws, rest: count } = unpack(sub, A_PHASES);
    const at = (p: number, w: number, c: number) => pack(p, A_PHASES, w, c);
    if (phase === A_OPEN) return b === 0x5b ? at(A_FIRST, 0, 0) : REJECT;
    if (phase === A_DONE) return REJECT;
    if (isWhitespace(b)) return ws < MAX_WHITESPACE ? at(phase, ws + 1, count) : REJECT;
    if (phase === A_NEXT) {
      if (b === 0x2c) return this.maxItems === undefined || count < this.maxItems ? at(A_ITEM, 0, count) : REJECT;
      return b === 0x5d && count >= this.minItems ? at(A_DONE, 0, 0) : REJECT;
    }
    if (phase === A_FIRST && b === 0x5d) return this.minItems === 0 ? at(A_DONE, 0, 0) : REJECT;
    if (this.maxItems === 0) return REJECT;
    const saturated = Math.min(count + 1, this.maxItems ?? this.minItems);
    return this.pushes.get(this.items, at(A_NEXT, 0, saturated));
  }

  accepting(sub: number): boolean {
    return sub % A_PHASES === A_DONE;
  }
}

const O_OPEN = 0;
const O_FIRST = 1; // after '{'
const O_KEY = 2; // inside a declared key (rest = key trie state × slots + next property)
const O_COLON = 3; // after the key (rest = its property)
const O_VALUE = 4; // after ':' (rest = its property)
const O_NEXT = 5; // after a value (rest = the next property)
const O_MEMBER = 6; // after ','
const O_DONE = 7;
const O_PHASES = 8;

export interface PropertyNode {
  name: string;
  node: GrammarNode;
  required: boolean;
}

/** Objects of at most this many declared properties take them in any order (a set of the written ones is the state); larger ones in declared order. */
export const MAX_ANY_ORDER_PROPERTIES = 16;

/**
 * An object with declared properties; optional ones may be left out, no others appear, none twice.
 * Up to MAX_ANY_ORDER_PROPERTIES they come in any order the model chooses (the sub-state holds the
 * set written so far); past that in their declared order. Keys are matched with a trie of their
 * JSON texts after the opening quote (`keys`: string j is property j's, built with its strings
 * below each node).
 */
export class ObjectNode implements GrammarNode {
  readonly id: number;
  readonly start = O_OPEN;
  private readonly pushes = new PushCache();
  /** lastAllowed[p]: the last property that may come when p is the next (the first required one from p on). */
  private readonly lastAllowed: Int32Array;
  /** mayEnd[p]: no required property from p on, so the object may close when p is the next. */
  private readonly mayEnd: Uint8Array;
  private readonly slots: number;
  /** Any order: the bit set of the required properties, and of all. */
  private readonly anyOrder: boolean;
  private readonly requiredSet: number = 0;
  private readonly allSet: number = 0;
  /** Any order: pushes per property (two properties can resume at the same set). */
  private readonly pushesOf: PushCache[] = [];

  constructor(
    ids: NodeIds,
    private readonly properties: readonly PropertyNode[],
    private readonly keys: ByteTrie,
  ) {
    this.id = ids.take(keys.byteLength + properties.length * 5);
    const count = properties.length;
    this.anyOrder = count <= MAX_ANY_ORDER_PROPERTIES;
    // Any order: rest is the written set (after a value, ','), or key trie state × 2^count + set, or set × count + property (after a key).
    this.slots = this.anyOrder ? 2 ** count : count + 1;
    this.lastAllowed = new Int32Array(count);
    this.mayEnd = new Uint8Array(count + 1);
    this.mayEnd[count] = 1;
    for (let p = count - 1; p >= 0; p--) {
      this.lastAllowed[p] = properties[p].required || p === count - 1 ? p : this.lastAllowed[p + 1];
      this.mayEnd[p] = properties[p].required ? 0 : this.mayEnd[p + 1];
    }
    if (this.anyOrder) {
      let required = 0;
      properties.forEach((p, i) => {
        if (p.required) required |= 1 << i;
      });
      this.requiredSet = required;
      this.pushesOf = properties.map(() => new PushCache());
      this.allSet = 2 ** count - 1;
    }
  }

  step(sub: number, b: number): number | Push {
    return this.anyOrder ? this.stepAnyOrder(sub, b) : this.stepInOrder(sub, b);
  }

  private stepInOrder(sub: number, b: number): number | Push {
    const { phase, ws, rest } = unpack(sub, O_PHASES);
    const at = (p: number, w: number, r: number) => pack(p, O_PHASES, w, r);
    const count = this.properties.length;
    switch (phase) {
      case O_OPEN:
        return b === 0x7b ? at(O_FIRST, 0, 0) : REJECT;
      case O_DONE:
        return REJECT;
      case O_KEY: {
        const next = rest % this.slots;
        const child = this.keys.step((rest - next) / this.slots, b);
        if (child === REJECT || !this.keys.hasStringIn(child, next, this.lastAllowed[next])) return REJECT;
        return this.keys.accepting(child) ? at(O_COLON, 0, this.keys.stringAt(child)) : at(O_KEY, 0, child * this.slots + next);
      }
    }
    if (isWhitespace(b)) return ws < MAX_WHITESPACE ? at(phase, ws + 1, rest) : REJECT;
    switch (phase) {
      case O_FIRST:
        if (b === 0x7d) return this.mayEnd[0] ? at(O_DONE, 0, 0) : REJECT;
        return b === QUOTE && count > 0 ? at(O_KEY, 0, this.keys.start * this.slots) : REJECT;
      case O_COLON:
        return b === 0x3a ? at(O_VALUE, 0, rest) : REJECT;
      case O_VALUE:
        return this.pushes.get(this.properties[rest].node, at(O_NEXT, 0, rest + 1));
      case O_NEXT:
        if (b === 0x2c) return rest < count ? at(O_MEMBER, 0, rest) : REJECT;
        return b === 0x7d && this.mayEnd[rest] ? at(O_DONE, 0, 0) : REJECT;
      case O_MEMBER:
        return b === QUOTE ? at(O_KEY, 0, this.keys.start * this.slots + rest) : REJECT;
      default:
        return REJECT;
    }
  }

  private stepAnyOrder(sub: number, b: number): number | Push {
    const { phase, ws, rest } = unpack(sub, O_PHASES);
    const at = (p: number, w: number, r: number) => pack(p, O_PHASES, w, r);
    const count = this.properties.length;
    const hasAllRequired = (set: number) => (set & this.requiredSet) === this.requiredSet;
    switch (phase) {
      case O_OPEN:
        return b === 0x7b ? at(O_FIRST, 0, 0) : REJECT;
      case O_DONE:
        return REJECT;
      case O_KEY: {
        const set = rest % this.slots;
        const child = this.keys.step((rest - set) / this.slots, b);
        // Only keys not written yet (a key's text ends with its quote: an accepting state is one key).
        if (child === REJECT || !this.keys.hasStringOutside(child, set)) return REJECT;
        return this.keys.accepting(child) ? at(O_COLON, 0, set * count + this.keys.stringAt(child)) : at(O_KEY, 0, child * this.slots + set);
      }
    }
    if (isWhitespace(b)) return ws < MAX_WHITESPACE ? at(phase, ws + 1, rest) : REJECT;
    switch (phase) {
      case O_FIRST:
        if (b === 0x7d) return hasAllRequired(0) ? at(O_DONE, 0, 0) : REJECT;
        return b === QUOTE && count > 0 ? at(O_KEY, 0, this.keys.start * this.slots) : REJECT;
      case O_COLON:
        return b === 0x3a ? at(O_VALUE, 0, rest) : REJECT;
      case O_VALUE: {
        const property = rest % count;
        const set = (rest - property) / count;
        return this.pushesOf[property].get(this.properties[property].node, at(O_NEXT, 0, set | (1 << property)));
      }
      case O_NEXT:
        if (b === 0x2c) return rest !== this.allSet ? at(O_MEMBER, 0, rest) : REJECT;
        return b === 0x7d && hasAllRequired(rest) ? at(O_DONE, 0, 0) : REJECT;
      case O_MEMBER:
        return b === QUOTE ? at(O_KEY, 0, this.keys.start * this.slots + rest) : REJECT;
      default:
        return REJECT;
    }
  }

  accepting(sub: number): boolean {
    return sub % O_PHASES === O_DONE;
  }
}

/**
 * An object with any keys and values of `values` (set once the grammar is built): any JSON, or
 * additionalProperties' schema; at most `maxMembers` of them (the count is the sub-state's rest).
 */
export class FreeObjectNode implements GrammarNode {
  readonly id: number;
  readonly start = O_OPEN;
  private readonly pushes = new PushCache();
  values!: GrammarNode;

  constructor(
    ids: NodeIds,
    /** A string node (any string, or propertyNames' schema). */
    private readonly keys: GrammarNode,
    private readonly maxMembers = Infinity,
  ) {
    this.id = ids.take();
  }

  step(sub: number, b: number): number | Push {
    const { phase, ws, rest } = unpack(sub, O_PHASES);
    // rest counts the members written, kept only under a bound.
    const at = (p: number, w: number, count = rest) => pack(p, O_PHASES, w, count);
    if (phase === O_OPEN) return b === 0x7b ? at(O_FIRST, 0) : REJECT;
    if (phase === O_DONE) return REJECT;
    if (isWhitespace(b)) return ws < MAX_WHITESPACE ? at(phase, ws + 1) : REJECT;
    switch (phase) {
      case O_FIRST:
      case O_MEMBER:
        if (b === 0x7d && phase === O_FIRST) return at(O_DONE, 0, 0);
        if (rest >= this.maxMembers) return REJECT;
        // A key commits the object to a value after it: the key's frame and the value's two (a union and its value) must fit.
        return b === QUOTE ? this.pushes.get(this.keys, at(O_COLON, 0), 2) : REJECT;
      case O_COLON:
        return b === 0x3a ? at(O_VALUE, 0) : REJECT;
      case O_VALUE:
        return this.pushes.get(this.values, at(O_NEXT, 0, this.maxMembers === Infinity ? 0 : rest + 1));
      case O_NEXT:
        if (b === 0x2c) return rest < this.maxMembers ? at(O_MEMBER, 0) : REJECT;
        return b === 0x7d ? at(O_DONE, 0, 0) : REJECT;
      default:
        return REJECT;
    }
  }

  accepting(sub: number): boolean {
    return sub % O_PHASES === O_DONE;
  }
}

/** The bytes a value of `node` can start with. */
export function firstBytes(node: GrammarNode, seen = new Set<GrammarNode>()): Set<number> {
  if (node instanceof UnionNode) return node.firstBytes();
  const out = new Set<number>();
  if (seen.has(node)) return out;
  seen.add(node);
  for (let b = 0; b < 256; b++) {
    const r = node.step(node.start, b);
    if (typeof r === 'number') {
      if (r !== REJECT) out.add(b);
    } else if (firstBytes(r.child, seen).has(b)) {
      out.add(b);
    }
  }
  seen.delete(node);
  return out;
}

const U_START = 0;
const U_DONE = 1;

/** One of several values whose first bytes differ (the first byte picks the alternative). */
export class UnionNode implements GrammarNode {
  readonly id: number;
  readonly start = U_START;
  private readonly byFirstByte: (Push | undefined)[] = new Array(256);

  constructor(ids: NodeIds) {
    this.id = ids.take();
  }

  /**
   * Sets the alternatives once they are built. Returns the first byte two alternatives share, if
   * any (the union is then ambiguous; the first alternative keeps it).
   */
  setAlternatives(alternatives: readonly GrammarNode[]): number | undefined {
    let clash: number | undefined;
    for (const alternative of alternatives) {
      const push = { child: alternative, resume: U_DONE };
      for (const b of firstBytes(alternative)) {
        if (this.byFirstByte[b] === undefined) this.byFirstByte[b] = push;
        else clash ??= b;
      }
    }
    return clash;
  }

  /** The bytes the alternatives set so far start with (a union pushes only where its alternative takes the byte). */
  firstBytes(): Set<number> {
    const out = new Set<number>();
    for (let b = 0; b < 256; b++) if (this.byFirstByte[b] !== undefined) out.add(b);
    return out;
  }

  step(sub: number, b: number): number | Push {
    return sub === U_START ? (this.byFirstByte[b] ?? REJECT) : REJECT;
  }

  accepting(sub: number): boolean {
    return sub === U_DONE;
  }
}
