/**
 * A set of byte strings (enum and const texts, property names) as a trie walked one integer state
 * at a time, in flat typed arrays rather than a table per byte. Only prefixes that two strings or
 * more share are nodes; past its last shared prefix a string is followed in place: the state is the
 * offset, in the strings laid end to end, of the last byte read. A 900,000-byte name thus costs
 * two bytes per byte (the bytes and an end mark), a set of many short strings one node per
 * shared prefix.
 *
 * States: [0, bytes.length) are offsets inside a string's own tail, bytes.length + n is node n
 * (node 0, the empty prefix, is the start).
 */
import { REJECT } from './automaton';

/** Strings visited (over all nodes) between two yields of build. */
const WORK_PER_STEP = 4096;

export class ByteTrie {
  readonly start: number;

  private constructor(
    /** The strings end to end; string k is bytes[starts[k], starts[k + 1]). */
    private readonly bytes: Uint8Array,
    private readonly starts: Int32Array,
    /** 1 at the last byte of each string. */
    private readonly isLast: Uint8Array,
    /** Node n's children: childByte/childState[childStart[n], childStart[n + 1]), by byte. */
    private readonly childStart: Int32Array,
    private readonly childByte: Uint8Array,
    private readonly childState: Int32Array,
    /** The string that ends at node n, or -1. */
    private readonly terminal: Int32Array,
    /** The strings below node n, ascending: below[belowStart[n], belowStart[n + 1]) (kept when asked for). */
    private readonly belowStart: Int32Array | undefined,
    private readonly below: Int32Array | undefined,
  ) {
    this.start = bytes.length;
  }

  /** The memory the tables hold. */
  get byteLength(): number {
    const arrays = [this.bytes, this.starts, this.isLast, this.childStart, this.childByte, this.childState, this.terminal, this.belowStart, this.below];
    return arrays.reduce((sum, a) => sum + (a?.byteLength ?? 0), 0);
  }

  /** The state after `b`, or REJECT. */
  step(state: number, b: number): number {
    const base = this.bytes.length;
    if (state < base) return this.isLast[state] === 0 && this.bytes[state + 1] === b ? state + 1 : REJECT;
    const n = state - base;
    let lo = this.childStart[n];
    let hi = this.childStart[n + 1];
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      const c = this.childByte[mid];
      if (c === b) return this.childState[mid];
      if (c < b) lo = mid + 1;
      else hi = mid;
    }
    return REJECT;
  }

  /** True when a whole string has been read. */
  accepting(state: number): boolean {
    const base = this.bytes.length;
    return state < base ? this.isLast[state] === 1 : this.terminal[state - base] >= 0;
  }

  /** The string a state that is accepting has read. */
  stringAt(state: number): number {
    const base = this.bytes.length;
    return state < base ? this.stringOf(state) : this.terminal[state - base];
  }

  /** True when some string in [from, to] (indices in the order given to build) has the prefix read so far (needs `withBelow`). */
  hasStringIn(state: number, from: number, to: number): boolean {
    const base = this.bytes.length;
    if (state < base) {
      const k = this.stringOf(state);
      return k >= from && k <= to;
    }
    const below = this.below!;
    const n = state - base;
    let lo = this.belowStart![n];
    let hi = this.belowStart![n + 1];
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if (below[mid] < from) lo = mid + 1;
      else hi = mid;
    }
    return lo < this.belowStart![n + 1] && below[lo] <= to;
  }

  /** True when some string whose bit is not set in `used` has the prefix read so far (needs `withBelow`; strings 0..30). */
  hasStringOutside(state: number, used: number): boolean {
    const base = this.bytes.length;
    if (state < base) return ((used >>> this.stringOf(state)) & 1) === 0;
    const below = this.below!;
    const n = state - base;
    for (let i = this.belowStart![n]; i < this.belowStart![n + 1]; i++) if (((used >>> below[i]) & 1) === 0) return true;
    return false;
  }

  /** The string whose bytes hold offset `at`. */
  private stringOf(at: number): number {
    let lo = 0;
    let hi = this.starts.length - 2;
    while (lo < hi) {
      const mid = (lo + hi + 1) >>> 1;
      if (this.starts[mid] <= at) lo = mid;
      else hi = mid - 1;
    }
    return lo;
  }

  /**
   * Builds the trie of `strings` (duplicates allowed; the first one wins), yielding between slices
   * of nodes. `withBelow` keeps the strings below each node (for hasStringIn). Work and memory are
   * linear in the strings' total bytes.
   */
  static *build(strings: readonly Uint8Array[], withBelow = false): Generator<void, ByteTrie> {
    const count = strings.length;
    const starts = new Int32Array(count + 1);
    for (let k = 0; k < count; k++) starts[k + 1] = starts[k] + strings[k].length;
    const bytes = new Uint8Array(starts[count]);
    const isLast = new Uint8Array(starts[count]);
    for (let k = 0; k < count; k++) {
      bytes.set(strings[k], starts[k]);
      if (strings[k].length > 0) isLast[starts[k + 1] - 1] = 1;
    }
    yield;
    const builder = new TrieBuilder(bytes, starts, withBelow);
    while (!builder.buildSome()) yield;
    const t = builder;
    return new ByteTrie(
      bytes,
      starts,
      isLast,
      Int32Array.from(t.childStart),
      Uint8Array.from(t.childByte),
      Int32Array.from(t.childState),
      Int32Array.from(t.terminal),
      withBelow ? Int32Array.from(t.belowStart) : undefined,
      withBelow ? Int32Array.from(t.below) : undefined,
    );
  }
}

/** The node tables of a ByteTrie, made breadth first, a slice of nodes at a time. */
class TrieBuilder {
  // Node n holds the strings order[nodeLo[n], nodeHi[n]), which share their first nodeDepth[n] bytes.
  private readonly order: Int32Array;
  private readonly scratch: Int32Array;
  private readonly nodeLo: number[] = [0];
  private readonly nodeHi: number[];
  private readonly nodeDepth: number[] = [0];
  readonly childStart: number[] = [];
  readonly childByte: number[] = [];
  readonly childState: number[] = [];
  readonly terminal: number[] = [];
  readonly belowStart: number[] = [];
  readonly below: number[] = [];
  private readonly counts = new Int32Array(256);
  private readonly groupStart = new Int32Array(256);
  private readonly fill = new Int32Array(256);
  private readonly present = new Uint8Array(256);
  private next = 0;

  constructor(
    private readonly bytes: Uint8Array,
    private readonly starts: Int32Array,
    private readonly withBelow: boolean,
  ) {
    const count = starts.length - 1;
    this.order = new Int32Array(count);
    for (let k = 0; k < count; k++) this.order[k] = k;
    this.scratch = new Int32Array(count);
    this.nodeHi = [count];
  }

  /** Makes nodes until about WORK_PER_STEP strings were visited; true when all are made. */
  buildSome(): boolean {
    let work = 0;
    while (this.next < this.nodeLo.length && work < WORK_PER_STEP) work += this.buildNode(this.next++);
    if (this.next < this.nodeLo.length) return false;
    this.childStart.push(this.childByte.length);
    if (this.withBelow) this.belowStart.push(this.below.length);
    return true;
  }

  private buildNode(n: number): number {
    const { bytes, starts, order, scratch, counts, groupStart, fill, present } = this;
    const lo = this.nodeLo[n];
    const hi = this.nodeHi[n];
    const depth = this.nodeDepth[n];
    this.childStart.push(this.childByte.length);
    if (this.withBelow) {
      this.belowStart.push(this.below.length);
      const sorted = order.slice(lo, hi).sort();
      for (let i = 0; i < sorted.length; i++) this.below.push(sorted[i]);
    }
    // Strings that end here; the rest, counted by their next byte.
    let ends = -1;
    let distinct = 0;
    for (let i = lo; i < hi; i++) {
      const k = order[i];
      const at = starts[k] + depth;
      if (at === starts[k + 1]) {
        if (ends < 0 || k < ends) ends = k;
        continue;
      }
      const b = bytes[at];
      if (counts[b]++ === 0) present[distinct++] = b;
    }
    this.terminal.push(ends);
    if (distinct > 1) present.subarray(0, distinct).sort();
    // Lay the groups out in byte order (a counting sort of the range, through scratch).
    let end = lo;
    for (let g = 0; g < distinct; g++) {
      const b = present[g];
      groupStart[b] = end;
      fill[b] = end;
      end += counts[b];
    }
    for (let i = lo; i < hi; i++) {
      const k = order[i];
      const at = starts[k] + depth;
      if (at < starts[k + 1]) scratch[fill[bytes[at]]++] = k;
    }
    for (let g = 0; g < distinct; g++) {
      const b = present[g];
      const from = groupStart[b];
      const size = counts[b];
      counts[b] = 0;
      this.childByte.push(b);
      if (size === 1) {
        this.childState.push(starts[scratch[from]] + depth);
      } else {
        this.childState.push(bytes.length + this.nodeLo.length);
        this.nodeLo.push(from);
        this.nodeHi.push(from + size);
        this.nodeDepth.push(depth + 1);
      }
    }
    for (let i = lo; i < end; i++) order[i] = scratch[i];
    return hi - lo + distinct;
  }
}
