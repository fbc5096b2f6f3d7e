/**
 * JSON-schema constrained decoding over a real vocabulary: before each token the generation asks
 * the constraint for the allowed tokens (a bitset the native sampler applies, binding.d.ts
 * allowedTokens), and feeds it the token drawn.
 *
 * The mask of a state is computed once per grammar and state, then reused. Inside a string's
 * content it is the precomputed tokens that stay inside any string plus the closing ones whose rest
 * the enclosing value takes; elsewhere a preorder walk of the vocabulary trie that skips every
 * subtree whose prefix the grammar rejects, and that settles a subtree whose prefix ends inside a
 * string at once: there the tokens whose rest is plain string characters (vocabulary-index.ts
 * plainFrom) pass without a walk. Stop tokens are allowed exactly when the text is one complete value.
 */
import { ConstraintError } from '../base/errors';
import type { Tokenizer } from '../tokenizers';
import { advance, advanceBytes, isComplete, startState, type Frame, type GrammarNode } from './automaton';
import { ByteBudgetCache } from './byte-budget-cache';
import type { CompiledJsonSchema } from './compiled-schema';
import { GRAMMAR_CACHE_BYTES } from './limits';
import { vocabularyIndex, type VocabularyIndex } from './vocabulary-index';

/** Masks kept per grammar (a mask is vocabSize / 8 bytes). */
const MASKS_PER_GRAMMAR = 256;

/** A schema's grammar over one vocabulary, with the masks of the states met so far. */
export class JsonGrammar {
  private readonly masks = new Map<string, Uint32Array>();

  constructor(
    readonly root: GrammarNode,
    readonly index: VocabularyIndex,
    /** The grammar's own memory (CompiledJsonSchema.bytes), its masks not included. */
    readonly bytes = 0,
  ) {}

  /** The tokens whose bytes the grammar accepts from `state` (stop tokens not included). */
  mask(state: Frame): Uint32Array {
    const key = state.key;
    let mask = this.masks.get(key);
    if (mask === undefined) {
      mask = this.compute(state);
      if (this.masks.size >= MASKS_PER_GRAMMAR) this.masks.delete(this.masks.keys().next().value!);
      this.masks.set(key, mask);
    }
    return mask;
  }

  private compute(state: Frame): Uint32Array {
    const { trie } = this.index;
    const { byte, depth, end, tokenStart, ids } = trie;
    if (state.node.isStringContent?.(state.sub, trie.maxDepth)) return this.stringMask(state);
    const bits = new Uint32Array(this.index.words);
    // states[d]: the state after the first d bytes of the current trie path.
    const states: Frame[] = new Array(trie.maxDepth + 1);
    states[0] = state;
    for (let i = 0; i < byte.length; ) {
      const next = advance(states[depth[i] - 1], byte[i]);
      if (next === null) {
        i = end[i];
      } else if (this.allowBelow(next, depth[i], tokenStart[i], tokenStart[end[i]], bits)) {
        i = end[i];
      } else {
        states[depth[i]] = next;
        for (let t = tokenStart[i]; t < tokenStart[i + 1]; t++) bits[ids[t] >>> 5] |= 1 << (ids[t] & 31);
        i++;
      }
    }
    return bits;
  }

  /** Inside a string's content: the tokens that stay inside it, and those that close it and whose rest the enclosing value takes. */
  private stringMask(state: Frame): Uint32Array {
    const { stringInner, closers, closerRest, bytes, offsets } = this.index;
    const bits = stringInner.slice();
    const closed = advance(state, 0x22);
    if (closed === null) return bits;
    for (let k = 0; k < closers.length; k++) {
      const t = closers[k];
      if (advanceBytes(closed, bytes, offsets[t] + closerRest[k], offsets[t + 1]) !== null) bits[t >>> 5] |= 1 << (t & 31);
    }
    return bits;
  }

  /**
   * When `state` (after the first d bytes of the trie tokens ids[from, to)) is inside a string's
   * content, sets the bits of those tokens whose rest the grammar accepts and returns true: a rest
   * of plain characters needs no walk. Returns false elsewhere.
   */
  private allowBelow(state: Frame, d: number, from: number, to: number, bits: Uint32Array): boolean {
    if (!state.node.isStringContent?.(state.sub, this.index.trie.maxDepth)) return false;
    const { bytes, offsets, plainFrom, plainTo, trie } = this.index;
    const ids = trie.ids;
    for (let k = from; k < to; k++) {
      const t = ids[k];
      // Plain bytes from d on keep the state: walk only from the first byte that is not.
      if (plainFrom[t] <= d || advanceBytes(state, bytes, offsets[t] + Math.max(d, plainTo[t]), offsets[t + 1]) !== null) bits[t >>> 5] |= 1 << (t & 31);
    }
    return true;
  }
}

/** One generation's progress through a grammar. */
export class TokenConstraint {
  private state: Frame;
  private readonly stopTokens: readonly number[];

  constructor(
    readonly grammar: JsonGrammar,
    stopTokens: readonly number[],
  ) {
    this.state = startState(grammar.root);
    this.stopTokens = stopTokens.filter((t) => t >= 0 && t < grammar.index.vocabSize);
  }

  /** True when the text so far is one complete value. */
  get complete(): boolean {
    return isComplete(this.state);
  }

  /** The tokens that may come next as a bitset (bit t % 32 of word t / 32); all zero: nothing may. */
  allowed(): Uint32Array {
    const mask = this.grammar.mask(this.state);
    if (!this.complete || this.stopTokens.length === 0) return mask;
    const withStops = mask.slice();
    for (const t of this.stopTokens) withStops[t >>> 5] |= 1 << (t & 31);
    return withStops;
  }

  /** Feeds the token drawn (a stop token ends the text). Throws for a token the grammar rejects. */
  advance(token: number): void {
    if (this.stopTokens.includes(token)) {
      if (!this.complete) throw new ConstraintError('TOKEN_REJECTED', `constraint: stop token ${token} before the JSON value is complete`);
      return;
    }
    const { bytes, offsets } = this.grammar.index;
    const next = token >= 0 && token < this.grammar.index.vocabSize ? advanceBytes(this.state, bytes, offsets[token], offsets[token + 1]) : null;
    if (next === null || offsets[token] === offsets[token + 1]) throw new ConstraintError('TOKEN_REJECTED', `constraint: token ${token} does not continue the JSON text`);
    this.state = next;
  }

  /** Feeds text that is not a whole token (the rest of one whose start opened the constraint); false when the grammar rejects it. */
  advanceBytes(bytes: Uint8Array): boolean {
    const next = advanceBytes(this.state, bytes);
    if (next === null) return false;
    this.state = next;
    return true;
  }
}

/** Per vocabulary, the grammars of the schemas seen, by their JSON text. */
const grammars = new WeakMap<VocabularyIndex, ByteBudgetCache<string, JsonGrammar>>();

/**
 * The constraint of a compiled schema over `tokenizer`'s vocabulary [0, vocabSize) (UnsupportedError
 * for a tokenizer whose tokens are not byte strings). Grammars of the same schema are shared (with
 * their masks) while they fit GRAMMAR_CACHE_BYTES.
 */
export async function jsonSchemaConstraint(tokenizer: Tokenizer, vocabSize: number, schema: CompiledJsonSchema, stopTokens: readonly number[]): Promise<TokenConstraint> {
  const index = await vocabularyIndex(tokenizer, vocabSize);
  let byKey = grammars.get(index);
  if (byKey === undefined) {
    const maskBytes = MASKS_PER_GRAMMAR * index.words * 4;
    byKey = new ByteBudgetCache(GRAMMAR_CACHE_BYTES, (g) => g.bytes + maskBytes);
    grammars.set(index, byKey);
  }
  let grammar = byKey.get(schema.key);
  if (grammar === undefined) {
    grammar = new JsonGrammar(schema.root, index, schema.bytes);
    byKey.set(schema.key, grammar);
  }
  return new TokenConstraint(grammar, stopTokens);
}
