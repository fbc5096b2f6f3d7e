/**
 * Added tokens (special or not) are cut out of the text before anything else, with the exact
 * semantics of HF's AddedVocabulary: leftmost-longest matching, tokens with `normalized: false`
 * matched on the raw text, tokens with `normalized: true` on the normalized remainder, and the
 * single_word / lstrip / rstrip flags.
 */

export interface AddedToken {
  id: number;
  content: string;
  /** Skipped by decode(skipSpecialTokens). */
  special: boolean;
  singleWord: boolean;
  lstrip: boolean;
  rstrip: boolean;
  /** Matched against the normalized text (true) or the raw text (false). */
  normalized: boolean;
}

/** A piece of the input: text still to tokenize, or an added token's id. */
export type Segment = string | number;

// Rust regex `\w` (Unicode): Alphabetic, marks, decimal digits, connector punctuation, join controls.
const WORD_CHAR = /[\p{Alphabetic}\p{M}\p{Nd}\p{Pc}\p{Join_Control}]/u;
const WHITE_SPACE = /\p{White_Space}/u;

interface TrieNode {
  next: Map<number, TrieNode>;
  /** Index into the token list when a token ends here. */
  token: number;
}

/** Leftmost-longest multi-pattern matcher over UTF-16 code units. */
class PatternSet {
  private root: TrieNode = { next: new Map(), token: -1 };
  readonly size: number;

  constructor(readonly patterns: readonly string[]) {
    this.size = patterns.length;
    patterns.forEach((p, index) => {
      if (p.length === 0) return;
      let node = this.root;
      for (let i = 0; i < p.length; i++) {
        const c = p.charCodeAt(i);
        let child = node.next.get(c);
        if (!child) {
          child = { next: new Map(), token: -1 };
          node.next.set(c, child);
        }
        node = child;
      }
      if (node.token < 0) node.token = index;
    });
  }

  /** The longest pattern starting at `at`: [patternIndex, end] or undefined. */
  matchAt(text: string, at: number): [number, number] | undefined {
    let node: TrieNode | undefined = this.root.next.get(text.charCodeAt(at));
    let best: [number, number] | undefined;
    let i = at + 1;
    while (node) {
      if (node.token >= 0) best = [node.token, i];
      if (i >= text.length) break;
      node = node.next.get(text.charCodeAt(i++));
    }
    return best;
  }

  firstUnits(): Set<number> {
    return new Set(this.root.next.keys());
  }
}

function endsWithWordChar(s: string): boolean {
  if (s.length === 0) return false;
  const last = s.codePointAt(s.length - 1)!;
  const ch = last >= 0xdc00 && last <= 0xdfff && s.length >= 2 ? s.slice(-2) : s.slice(-1);
  return WORD_CHAR.test(ch);
}

function startsWithWordChar(s: string): boolean {
  if (s.length === 0) return false;
  return WORD_CHAR.test(String.fromCodePoint(s.codePointAt(0)!));
}

/** Matches one set of added tokens in a string (HF `find_matches`). */
class AddedTokenMatcher {
  private compiled?: { set: PatternSet; first: Set<number> };

  /**
   * `patterns()` gives each token's text to match. The trie is built on the first split, not
   * here: thousands of added tokens (Gemma 3 has 6k) cost milliseconds that loading need not pay.
   */
  constructor(
    private readonly tokens: readonly AddedToken[],
    private readonly patterns: () => readonly string[],
  ) {}

  private matcher(): { set: PatternSet; first: Set<number> } {
    if (!this.compiled) {
      const set = new PatternSet(this.patterns());
      this.compiled = { set, first: set.firstUnits() };
    }
    return this.compiled;
  }

  get empty(): boolean {
    return this.tokens.length === 0;
  }

  split(text: string, out: Segment[]): void {
    const { set, first } = this.matcher();
    let startOffset = 0;
    let i = 0;
    const n = text.length;
    while (i < n) {
      if (!first.has(text.charCodeAt(i))) {
        i++;
        continue;
      }
      const m = set.matchAt(text, i);
      if (!m) {
        i++;
        continue;
      }
      const token = this.tokens[m[0]];
      let start = i;
      let stop = m[1];
      i = stop; // matches never overlap, even when a match is discarded below
      if (token.singleWord) {
        const startSpace = start === 0 || !endsWithWordChar(text.slice(0, start));
        const stopSpace = stop === n || !startsWithWordChar(text.slice(stop));
        if (!startSpace || !stopSpace) continue;
      }
      if (token.lstrip) {
        let s = start;
        while (s > 0 && WHITE_SPACE.test(text[s - 1])) s--;
        start = Math.max(s, startOffset);
      }
      if (token.rstrip) {
        while (stop < n && WHITE_SPACE.test(text[stop])) stop++;
      }
      if (startOffset < start) out.push(text.slice(startOffset, start));
      out.push(token.id);
      startOffset = stop;
    }
    if (startOffset < n) out.push(text.slice(startOffset));
  }
}

/** Cuts added tokens out of the input, normalizing what lies between them. */
export class AddedTokenSplitter {
  private readonly raw: AddedTokenMatcher;
  private readonly normalizedSet: AddedTokenMatcher;
  readonly tokens: readonly AddedToken[];
  /** The splitter of the tokens that are not special (made on first use). */
  private plain: AddedTokenSplitter | undefined;

  constructor(tokens: readonly AddedToken[], private readonly normalize?: (s: string) => string) {
    this.tokens = tokens;
    const rawTokens = tokens.filter((t) => !t.normalized);
    const normTokens = tokens.filter((t) => t.normalized);
    this.raw = new AddedTokenMatcher(rawTokens, () => rawTokens.map((t) => t.content));
    this.normalizedSet = new AddedTokenMatcher(normTokens, () => normTokens.map((t) => (normalize ? normalize(t.content) : t.content)));
  }

  /**
   * The input as a list of normalized text pieces and added-token ids, in order; with
   * `parseSpecial` false, special tokens' text stays text (HF's split_special_tokens).
   */
  split(text: string, parseSpecial = true): Segment[] {
    if (!parseSpecial && this.tokens.some((t) => t.special)) {
      return (this.plain ??= new AddedTokenSplitter(this.tokens.filter((t) => !t.special), this.normalize)).split(text);
    }
    const first: Segment[] = [];
    if (this.raw.empty) first.push(text);
    else this.raw.split(text, first);
    const out: Segment[] = [];
    for (const seg of first) {
      if (typeof seg === 'number') {
        out.push(seg);
        continue;
      }
      const normalized = this.normalize ? this.normalize(seg) : seg;
      if (this.normalizedSet.empty) out.push(normalized);
      else this.normalizedSet.split(normalized, out);
    }
    return out;
  }
}

/** The lookups a BPE tokenizer keeps of its added tokens, and the vocabulary size they extend. */
export interface AddedTokenIndex {
  /** Contents by id (they take the place of the vocabulary's token). */
  content: Map<number, string>;
  byContent: Map<string, AddedToken>;
  /** Ids of special tokens: HF marks special by content, every added token whose content is a special token's. */
  special: Set<number>;
  /** max(vocabSize, largest added id + 1). */
  vocabSize: number;
}

export function indexAddedTokens(addedTokens: readonly AddedToken[], vocabSize: number): AddedTokenIndex {
  const index: AddedTokenIndex = { content: new Map(), byContent: new Map(), special: new Set(), vocabSize };
  for (const t of addedTokens) {
    index.content.set(t.id, t.content);
    index.byContent.set(t.content, t);
    if (t.id + 1 > index.vocabSize) index.vocabSize = t.id + 1;
  }
  const specialContents = new Set(addedTokens.filter((t) => t.special).map((t) => t.content));
  for (const t of addedTokens) if (specialContents.has(t.content)) index.special.add(t.id);
  return index;
}
