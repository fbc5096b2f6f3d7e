/**
 * A union whose alternatives may start alike (anyOf / oneOf of objects sharing keys, of strings
 * with different lengths, ...): every alternative still alive is run side by side, each as its own
 * automaton state (lib/constrain/automaton.ts), until the bytes leave one; a byte is taken when some
 * alternative takes it, and the value may end where some alternative is complete. The tuples of
 * states are interned: the node's sub-state is a tuple's number. At most MAX_TUPLES are made per
 * node; past that, a byte that would need a new one is refused (the mask then leaves it out), so
 * memory stays bounded.
 */
import { advance, Frame, REJECT, type GrammarNode, type Push } from './automaton';
import type { NodeIds } from './json-nodes';

/** Tuples of alternative states one node makes at most. */
export const MAX_TUPLES = 1 << 16;

/** The bottom of each alternative's stack: takes nothing, never complete (so nothing ends below the union). */
const BASE: GrammarNode = { id: -1, start: 0, step: () => REJECT, accepting: () => false };

export class OverlapUnionNode implements GrammarNode {
  readonly id: number;
  readonly start = 0;
  private readonly tuples: (Frame | null)[][] = [];
  private readonly byKey = new Map<string, number>();
  private readonly base: Frame;

  /** `depth`: the level the union's value sits at (the alternatives' frames sit one below, as a UnionNode's do). */
  constructor(
    ids: NodeIds,
    alternatives: readonly GrammarNode[],
    depth: number,
  ) {
    this.id = ids.take(alternatives.length * 64);
    let base = new Frame(BASE, 0, null);
    for (let level = 1; level < depth; level++) base = new Frame(BASE, 0, base);
    this.base = base;
    this.intern(alternatives.map((a) => new Frame(a, a.start, base)));
  }

  private intern(tuple: (Frame | null)[]): number {
    const key = tuple.map((f) => (f === null ? '-' : f.key)).join('|');
    const known = this.byKey.get(key);
    if (known !== undefined) return known;
    if (this.tuples.length >= MAX_TUPLES) return REJECT;
    this.tuples.push(tuple);
    this.byKey.set(key, this.tuples.length - 1);
    return this.tuples.length - 1;
  }

  step(sub: number, b: number): number | Push {
    const next = this.tuples[sub].map((f) => (f === null ? null : advance(f, b)));
    return next.some((f) => f !== null) ? this.intern(next) : REJECT;
  }

  /** Complete when some alternative's value is complete (every frame above its base accepting). */
  accepting(sub: number): boolean {
    return this.tuples[sub].some((f) => {
      if (f === null) return false;
      for (let g: Frame | null = f; g !== null && g !== this.base; g = g.parent) if (!g.node.accepting(g.sub)) return false;
      return true;
    });
  }
}
