/**
 * A byte-level pushdown automaton for JSON texts. A grammar is a graph of nodes (lib/constrain/
 * json-nodes.ts), each a small deterministic machine over integer sub-states; a state is the stack
 * of frames (node, sub-state) of the values being written, innermost first. A value ends lazily:
 * when its node rejects a byte in an accepting sub-state, the byte goes to the enclosing value.
 */

/** A node's answer to a byte it cannot take itself: the byte begins `child`; afterwards the node resumes at `resume`. */
export interface Push {
  readonly child: GrammarNode;
  readonly resume: number;
  /** Frames below the node's own that must fit for the value it commits to (default 1: the child's). */
  readonly need?: number;
}

/** step()'s answer for a byte the node does not take. */
export const REJECT = -1;

export interface GrammarNode {
  /** Unique among the nodes of one grammar (state keys are built from it). */
  readonly id: number;
  readonly start: number;
  /** The sub-state after `byte` (REJECT when the node cannot take it), or a Push. */
  step(sub: number, byte: number): number | Push;
  /** True when the value is complete at `sub` (it may still grow, as a number does). */
  accepting(sub: number): boolean;
  /**
   * True at a sub-state inside a string's content from which any run of at most `slack` plain
   * characters (and escapes) is taken, after which the string may close, just as from this
   * sub-state: the mask's fast path (a plain string: always; a constrained one where its pattern
   * and lengths leave every such run open).
   */
  isStringContent?(sub: number, slack?: number): boolean;
}

/**
 * Values nest at most this deep (free-form JSON is recursive; deeper bytes are rejected, and a
 * schema whose values nest deeper is refused when compiled: lib/constrain/limits.ts).
 */
export const MAX_DEPTH = 32;

export class Frame {
  private cachedKey: string | undefined;
  readonly depth: number;

  constructor(
    readonly node: GrammarNode,
    readonly sub: number,
    readonly parent: Frame | null,
  ) {
    this.depth = parent === null ? 1 : parent.depth + 1;
  }

  /** Identifies the state (frames with equal keys accept the same continuations). */
  get key(): string {
    if (this.cachedKey === undefined) this.cachedKey = `${this.parent === null ? '' : this.parent.key}/${this.node.id}.${this.sub}`;
    return this.cachedKey;
  }
}

export function startState(root: GrammarNode): Frame {
  return new Frame(root, root.start, null);
}

/** The state after `byte`, or null when the grammar cannot take it here. */
export function advance(state: Frame | null, byte: number): Frame | null {
  let frame = state;
  while (frame !== null) {
    const result = frame.node.step(frame.sub, byte);
    if (typeof result === 'number') {
      if (result === frame.sub) return frame;
      if (result !== REJECT) return new Frame(frame.node, result, frame.parent);
      if (!frame.node.accepting(frame.sub)) return null;
      frame = frame.parent; // the value is complete: the byte belongs to the enclosing one
      continue;
    }
    if (frame.depth + (result.need ?? 1) > MAX_DEPTH) return null;
    const resumed = new Frame(frame.node, result.resume, frame.parent);
    frame = new Frame(result.child, result.child.start, resumed);
  }
  return null;
}

/** The state after `bytes[from, to)`, or null. */
export function advanceBytes(state: Frame | null, bytes: Uint8Array, from = 0, to = bytes.length): Frame | null {
  let s = state;
  for (let i = from; i < to && s !== null; i++) s = advance(s, bytes[i]);
  return s;
}

/** True when the text so far is one complete value (every open value can end here). */
export function isComplete(state: Frame): boolean {
  for (let f: Frame | null = state; f !== null; f = f.parent) if (!f.node.accepting(f.sub)) return false;
  return true;
}

/** True when some byte can still follow. */
export function canContinue(state: Frame): boolean {
  for (let b = 0; b < 256; b++) if (advance(state, b) !== null) return true;
  return false;
}
