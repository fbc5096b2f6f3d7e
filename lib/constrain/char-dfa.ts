/**
 * A regex tree (lib/constrain/regex-parse.ts) compiled to a deterministic automaton over code
 * points: Thompson's construction, then the subset construction over the classes of code points
 * the pattern tells apart, then trimmed (a state from which no text is accepted is dropped, so
 * every state left can still end in a match). Both constructions count their states against a
 * PatternBudget: a pattern whose automaton would pass it (a state explosion, `(a|b){1000}`-style
 * counts) is a ConstraintError naming maxPatternStates, reached in bounded work and memory.
 */
import { ConstraintError } from '../base/errors';
import { MAX_CODE_POINT, type Ranges, type Regex } from './regex-parse';

/** States of all patterns of one schema, counted against SchemaLimits.maxPatternStates. */
export class PatternBudget {
  private used = 0;
  constructor(readonly max: number) {}

  take(n: number, where: string): void {
    this.used += n;
    if (this.used > this.max) {
      throw new ConstraintError(
        'SCHEMA_TOO_LARGE',
        `${where}: the schema's patterns, formats and string lengths need more than ${this.max} automaton states (maxPatternStates)`,
        'maxPatternStates',
      );
    }
  }
}

/** NFA states per DFA state of the budget (Thompson's construction is a few times larger than the automaton it makes). */
const NFA_PER_STATE = 8;
/** DFA states made between two yields. */
const STATES_PER_STEP = 64;

class Nfa {
  readonly eps: number[][] = [];
  readonly ranges: (Ranges | null)[] = [];
  readonly target: number[] = [];

  constructor(
    private readonly budget: PatternBudget,
    private readonly where: string,
  ) {}

  state(): number {
    if (this.eps.length % 256 === 0) this.budget.take(Math.ceil(256 / NFA_PER_STATE), this.where);
    this.eps.push([]);
    this.ranges.push(null);
    this.target.push(-1);
    return this.eps.length - 1;
  }

  /** The fragment for `re` between a new start and end state. */
  build(re: Regex): [number, number] {
    switch (re.kind) {
      case 'chars': {
        const s = this.state();
        const e = this.state();
        this.ranges[s] = re.ranges;
        this.target[s] = e;
        return [s, e];
      }
      case 'seq': {
        const s = this.state();
        let end = s;
        for (const item of re.items) {
          const [a, b] = this.build(item);
          this.eps[end].push(a);
          end = b;
        }
        return [s, end];
      }
      case 'alt': {
        const s = this.state();
        const e = this.state();
        for (const item of re.items) {
          const [a, b] = this.build(item);
          this.eps[s].push(a);
          this.eps[b].push(e);
        }
        return [s, e];
      }
      case 'repeat': {
        const s = this.state();
        let end = s;
        for (let i = 0; i < re.min; i++) {
          const [a, b] = this.build(re.item);
          this.eps[end].push(a);
          end = b;
        }
        if (re.max === Infinity) {
          const [a, b] = this.build(re.item);
          this.eps[end].push(a);
          this.eps[b].push(a);
          const e = this.state();
          this.eps[end].push(e);
          this.eps[b].push(e);
          return [s, e];
        }
        const e = this.state();
        for (let i = re.min; i < re.max; i++) {
          this.eps[end].push(e);
          const [a, b] = this.build(re.item);
          this.eps[end].push(a);
          end = b;
        }
        this.eps[end].push(e);
        return [s, e];
      }
    }
  }
}

/** A trimmed deterministic automaton over code points; state -1 is the dead one. */
export class CharDfa {
  constructor(
    /** Class c holds the code points [classStarts[c], classStarts[c + 1]). */
    readonly classStarts: Int32Array,
    /** next[s × classes + c]: the state after a code point of class c, or -1. */
    readonly next: Int32Array,
    readonly accepting: Uint8Array,
    /** -1 when the pattern matches nothing. */
    readonly start: number,
  ) {}

  get classes(): number {
    return this.classStarts.length - 1;
  }

  get states(): number {
    return this.accepting.length;
  }

  get byteLength(): number {
    return this.classStarts.byteLength + this.next.byteLength + this.accepting.byteLength;
  }

  classOf(cp: number): number {
    let lo = 0;
    let hi = this.classStarts.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.classStarts[mid] <= cp) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  step(state: number, cp: number): number {
    return this.next[state * this.classes + this.classOf(cp)];
  }

  /** The distinct states one code point leads to from `state`. */
  successors(state: number): number[] {
    const out = new Set<number>();
    const k = this.classes;
    for (let c = 0; c < k; c++) {
      const t = this.next[state * k + c];
      if (t >= 0) out.add(t);
    }
    return [...out];
  }
}

/** The class boundaries of several range lists: 0, each range's start and end + 1, MAX + 1. */
function boundaries(lists: Iterable<Ranges>): Int32Array {
  const set = new Set<number>([0, MAX_CODE_POINT + 1]);
  for (const r of lists) for (let i = 0; i < r.length; i += 2) set.add(r[i]).add(r[i + 1] + 1);
  return Int32Array.from([...set].sort((a, b) => a - b));
}

function classIndex(starts: Int32Array, cp: number): number {
  let lo = 0;
  let hi = starts.length - 1;
  while (lo < hi) {
    const mid = (lo + hi) >>> 1;
    if (starts[mid] < cp) lo = mid + 1;
    else hi = mid;
  }
  return lo;
}

/** `re` as a trimmed DFA (a ConstraintError past the budget), in steps. */
export function* regexDfa(re: Regex, budget: PatternBudget, where: string): Generator<void, CharDfa> {
  const nfa = new Nfa(budget, where);
  const [start, end] = nfa.build(re);
  yield;
  const n = nfa.eps.length;
  const starts = boundaries(nfa.ranges.filter((r): r is Ranges => r !== null));
  const classes = starts.length - 1;
  // Each char state's classes, as spans of class indices.
  const spans: (number[] | null)[] = nfa.ranges.map((r) => {
    if (r === null) return null;
    const out: number[] = [];
    for (let i = 0; i < r.length; i += 2) out.push(classIndex(starts, r[i]), classIndex(starts, r[i + 1] + 1) - 1);
    return out;
  });
  const mark = new Int32Array(n).fill(-1);
  let stamp = 0;
  const closure = (seeds: Iterable<number>): number[] => {
    stamp++;
    const out: number[] = [];
    const stack = [...seeds];
    while (stack.length > 0) {
      const s = stack.pop()!;
      if (mark[s] === stamp) continue;
      mark[s] = stamp;
      out.push(s);
      for (const t of nfa.eps[s]) if (mark[t] !== stamp) stack.push(t);
    }
    return out.sort((a, b) => a - b);
  };
  const ids = new Map<string, number>();
  const sets: number[][] = [];
  const next: number[] = [];
  const intern = (set: number[]): number => {
    if (set.length === 0) return -1;
    const key = set.join(',');
    let id = ids.get(key);
    if (id === undefined) {
      budget.take(1, where);
      if ((sets.length + 1) * classes > budget.max * 64) budget.take(budget.max + 1, where); // a table past 64 cells per budgeted state
      id = sets.length;
      ids.set(key, id);
      sets.push(set);
    }
    return id;
  };
  const dfaStart = intern(closure([start]));
  const targets: number[][] = Array.from({ length: classes }, () => []);
  for (let d = 0; d < sets.length; d++) {
    if (d % STATES_PER_STEP === STATES_PER_STEP - 1) yield;
    for (const t of targets) t.length = 0;
    for (const s of sets[d]) {
      const span = spans[s];
      if (span === null) continue;
      for (let i = 0; i < span.length; i += 2) for (let c = span[i]; c <= span[i + 1]; c++) targets[c].push(nfa.target[s]);
    }
    // Classes with the same targets share one closure.
    const byKey = new Map<string, number>();
    for (let c = 0; c < classes; c++) {
      const key = targets[c].join(',');
      let id = byKey.get(key);
      if (id === undefined) {
        id = targets[c].length === 0 ? -1 : intern(closure(targets[c]));
        byKey.set(key, id);
      }
      next[d * classes + c] = id;
    }
  }
  const accepting = sets.map((set) => set.includes(end));
  yield;
  return trim(starts, Int32Array.from(next), accepting, dfaStart);
}

/** Drops the states from which nothing is accepted, renumbering the rest. */
function trim(starts: Int32Array, next: Int32Array, accepting: boolean[], start: number): CharDfa {
  const n = accepting.length;
  const classes = starts.length - 1;
  const reverse: number[][] = Array.from({ length: n }, () => []);
  for (let s = 0; s < n; s++) for (let c = 0; c < classes; c++) if (next[s * classes + c] >= 0) reverse[next[s * classes + c]].push(s);
  const live = new Uint8Array(n);
  const stack: number[] = [];
  for (let s = 0; s < n; s++) if (accepting[s]) stack.push(s);
  while (stack.length > 0) {
    const s = stack.pop()!;
    if (live[s]) continue;
    live[s] = 1;
    for (const p of reverse[s]) if (!live[p]) stack.push(p);
  }
  const renumber = new Int32Array(n).fill(-1);
  let count = 0;
  for (let s = 0; s < n; s++) if (live[s]) renumber[s] = count++;
  const table = new Int32Array(count * classes);
  const accept = new Uint8Array(count);
  for (let s = 0; s < n; s++) {
    if (!live[s]) continue;
    const r = renumber[s];
    accept[r] = accepting[s] ? 1 : 0;
    for (let c = 0; c < classes; c++) {
      const t = next[s * classes + c];
      table[r * classes + c] = t >= 0 ? renumber[t] : -1;
    }
  }
  return new CharDfa(starts, table, accept, start >= 0 ? renumber[start] : -1);
}

/** The automaton of the texts both `a` and `b` accept (a pattern and a format together), trimmed. */
export function* intersectDfa(a: CharDfa, b: CharDfa, budget: PatternBudget, where: string): Generator<void, CharDfa> {
  if (a.start < 0 || b.start < 0) return new CharDfa(Int32Array.of(0, MAX_CODE_POINT + 1), new Int32Array(0), new Uint8Array(0), -1);
  const set = new Set<number>([...a.classStarts, ...b.classStarts]);
  const starts = Int32Array.from([...set].sort((x, y) => x - y));
  const classes = starts.length - 1;
  const ca = Array.from({ length: classes }, (_, c) => a.classOf(starts[c]));
  const cb = Array.from({ length: classes }, (_, c) => b.classOf(starts[c]));
  const ids = new Map<number, number>();
  const pairs: [number, number][] = [];
  const intern = (x: number, y: number): number => {
    if (x < 0 || y < 0) return -1;
    const key = x * b.states + y;
    let id = ids.get(key);
    if (id === undefined) {
      budget.take(1, where);
      id = pairs.length;
      ids.set(key, id);
      pairs.push([x, y]);
    }
    return id;
  };
  const start = intern(a.start, b.start);
  const next: number[] = [];
  for (let d = 0; d < pairs.length; d++) {
    if (d % STATES_PER_STEP === STATES_PER_STEP - 1) yield;
    const [x, y] = pairs[d];
    for (let c = 0; c < classes; c++) next[d * classes + c] = intern(a.next[x * a.classes + ca[c]], b.next[y * b.classes + cb[c]]);
  }
  return trim(
    starts,
    Int32Array.from(next),
    pairs.map(([x, y]) => a.accepting[x] === 1 && b.accepting[y] === 1),
    start,
  );
}
