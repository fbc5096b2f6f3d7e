/**
 * A model vocabulary as constrained decoding walks it, built once per tokenizer:
 *  - every token's bytes (special tokens and ids without bytes have none and are never allowed),
 *  - `plainFrom`: where each token's longest suffix of plain string characters starts (characters
 *    that may stand unescaped in a JSON string, whole UTF-8 sequences): from inside a string,
 *    such a suffix leads back to the same state (and `plainTo`: where its longest such prefix ends),
 *  - from inside a string's content, which tokens stay inside any string (`stringInner`) and which
 *    close it (`closers`, with where the rest after the closing quote starts): whatever the string
 *    belongs to, only the closers' rests need a walk,
 *  - a byte trie of all tokens in preorder: node i has a byte, a depth (1 = a first byte), the end
 *    of its subtree (skip to end[i] to prune it) and the tokens that end at it.
 */
import { UnsupportedError } from '../base/errors';
import type { Tokenizer } from '../tokenizers';
import { NodeIds, StringNode } from './json-nodes';
import { inSlices } from './slices';

export interface VocabularyIndex {
  /** Token ids run over [0, vocabSize) (the model's; the tokenizer's may be smaller). */
  readonly vocabSize: number;
  /** Words of a token bitset. */
  readonly words: number;
  /** Token t's bytes are bytes[offsets[t], offsets[t + 1]). */
  readonly bytes: Uint8Array;
  readonly offsets: Int32Array;
  /** Token t's bytes from plainFrom[t] on are plain string characters (0: all of them)... */
  readonly plainFrom: Int32Array;
  /** ...and so are its first plainTo[t] bytes. */
  readonly plainTo: Int32Array;
  /** Bitset of the tokens a string's content takes without ending (escapes and split UTF-8 included). */
  readonly stringInner: Uint32Array;
  /** The tokens that end a string's content with a quote; closerRest[k]: the offset in closers[k] just past it. */
  readonly closers: Int32Array;
  readonly closerRest: Int32Array;
  readonly trie: {
    readonly byte: Uint8Array;
    readonly depth: Uint16Array;
    readonly end: Int32Array;
    /** Tokens ending at node i: ids[tokenStart[i], tokenStart[i + 1]). */
    readonly tokenStart: Int32Array;
    readonly ids: Int32Array;
    readonly maxDepth: number;
  };
}

type BytesOf = (id: number) => Uint8Array | undefined;

function bytesGetter(tokenizer: Tokenizer): BytesOf {
  const withBytes = tokenizer as Tokenizer & { tokenBytes?: BytesOf };
  if (typeof withBytes.tokenBytes !== 'function') {
    throw new UnsupportedError(`constrained output needs a tokenizer whose tokens are byte strings (this one is ${tokenizer.kind})`);
  }
  return (id) => withBytes.tokenBytes!(id);
}

/**
 * Where the longest suffix of bytes[from, to) made of plain string characters starts, and where
 * the longest such prefix ends (relative to `from`).
 */
function plainBounds(bytes: Uint8Array, from: number, to: number, strings: StringNode): [number, number] {
  let sub = StringNode.CONTENT;
  let start = 0;
  let boundary = 0;
  let prefixEnd = -1;
  for (let i = from; i < to; i++) {
    const b = bytes[i];
    const next = b === 0x22 || b === 0x5c ? -1 : strings.step(sub, b);
    if (next >= 0) {
      sub = next;
      if (sub === StringNode.CONTENT) boundary = i + 1 - from;
      continue;
    }
    if (prefixEnd < 0) prefixEnd = boundary;
    // A byte that cannot begin a character restarts after itself; one that could (ASCII, a lead
    // byte cut short by it) restarts with itself.
    sub = b === 0x22 || b === 0x5c ? -1 : strings.step(StringNode.CONTENT, b);
    start = sub < 0 ? i + 1 - from : i - from;
    if (sub < 0) sub = StringNode.CONTENT;
  }
  return [sub === StringNode.CONTENT ? start : to - from, prefixEnd < 0 ? boundary : prefixEnd];
}

/** The preorder trie of the tokens `order` lists in byte order. */
function* buildTrie(bytes: Uint8Array, offsets: Int32Array, order: Int32Array): Generator<void, VocabularyIndex['trie']> {
  const nodeByte: number[] = [];
  const nodeDepth: number[] = [];
  const nodeEnd: number[] = [];
  const tokenStart: number[] = [];
  const ids: number[] = [];
  /** path[d]: the open node at depth d + 1 on the current path. */
  const path: number[] = [];
  let previous = -1;
  let maxDepth = 0;
  for (let k = 0; k < order.length; k++) {
    if (k % SLICE === 0) yield;
    const id = order[k];
    const from = offsets[id];
    const length = offsets[id + 1] - from;
    let shared = 0;
    if (previous >= 0) {
      const pFrom = offsets[previous];
      const pLength = offsets[previous + 1] - pFrom;
      while (shared < length && shared < pLength && bytes[from + shared] === bytes[pFrom + shared]) shared++;
    }
    // Close the nodes below the shared prefix: their subtrees end here.
    while (path.length > shared) nodeEnd[path.pop()!] = nodeByte.length;
    for (let d = shared; d < length; d++) {
      path.push(nodeByte.length);
      nodeByte.push(bytes[from + d]);
      nodeDepth.push(d + 1);
      nodeEnd.push(-1);
      tokenStart.push(ids.length);
    }
    // A token equal to the previous one's bytes ends at the same node; tokens are listed by node
    // in preorder, so tokenStart of later nodes is filled as they are made.
    ids.push(id);
    maxDepth = Math.max(maxDepth, length);
    previous = id;
  }
  while (path.length > 0) nodeEnd[path.pop()!] = nodeByte.length;
  tokenStart.push(ids.length);
  return {
    byte: Uint8Array.from(nodeByte),
    depth: Uint16Array.from(nodeDepth),
    end: Int32Array.from(nodeEnd),
    tokenStart: Int32Array.from(tokenStart),
    ids: Int32Array.from(ids),
    maxDepth,
  };
}

/** Walks bytes[from, to) from inside a string: -1 when rejected, 0 when still inside at the end, else the offset (from `from`) just past the closing quote. */
function walkString(bytes: Uint8Array, from: number, to: number, strings: StringNode): number {
  let sub = StringNode.CONTENT;
  for (let i = from; i < to; i++) {
    sub = strings.step(sub, bytes[i]);
    if (sub < 0) return -1;
    if (strings.accepting(sub)) return i + 1 - from;
  }
  return 0;
}

/** Token ids in the byte order of their tokens (ties by id): counted into buckets by their first two bytes, then each bucket sorted. */
function* byteOrder(bytes: Uint8Array, offsets: Int32Array, present: Int32Array): Generator<void, Int32Array> {
  // Bucket b0 × 257 + (b1 + 1) for tokens of two bytes or more, b0 × 257 for one byte (it comes first).
  const bucketOf = (id: number) => bytes[offsets[id]] * 257 + (offsets[id + 1] - offsets[id] > 1 ? bytes[offsets[id] + 1] + 1 : 0);
  const starts = new Int32Array(256 * 257 + 1);
  for (let k = 0; k < present.length; k++) {
    if (k % SLICE === 0) yield;
    starts[bucketOf(present[k]) + 1]++;
  }
  for (let b = 1; b < starts.length; b++) starts[b] += starts[b - 1];
  const order = new Int32Array(present.length);
  const fill = starts.slice();
  for (let k = 0; k < present.length; k++) {
    if (k % SLICE === 0) yield;
    order[fill[bucketOf(present[k])]++] = present[k];
  }
  const keyOf = (id: number) => Buffer.from(bytes.buffer, bytes.byteOffset + offsets[id], offsets[id + 1] - offsets[id]).toString('latin1');
  let sorted = 0;
  for (let b = 0; b + 1 < starts.length; b++) {
    const size = starts[b + 1] - starts[b];
    if (size < 2) continue;
    // Latin-1 strings compare like their bytes.
    const keys = new Map<number, string>();
    for (const id of order.subarray(starts[b], starts[b + 1])) keys.set(id, keyOf(id));
    order.subarray(starts[b], starts[b + 1]).sort((x, y) => (keys.get(x)! < keys.get(y)! ? -1 : keys.get(x)! > keys.get(y)! ? 1 : x - y));
    sorted += size;
    if (sorted >= SLICE) {
      sorted = 0;
      yield;
    }
  }
  return order;
}

/** The index, built in slices of work: the generator yields between them. */
function* build(tokenizer: Tokenizer, vocabSize: number): Generator<void, VocabularyIndex> {
  const bytesOf = bytesGetter(tokenizer);
  const limit = Math.min(vocabSize, tokenizer.vocabSize);
  const parts: (Uint8Array | undefined)[] = new Array(limit);
  let total = 0;
  for (let id = 0; id < limit; id++) {
    if (id % SLICE === 0) yield;
    if (tokenizer.isSpecial(id)) continue;
    const b = bytesOf(id);
    if (b === undefined || b.length === 0) continue;
    parts[id] = b;
    total += b.length;
  }
  const bytes = new Uint8Array(total);
  const offsets = new Int32Array(vocabSize + 1);
  let at = 0;
  for (let id = 0; id < vocabSize; id++) {
    if (id % SLICE === 0) yield;
    offsets[id] = at;
    const b = id < limit ? parts[id] : undefined;
    if (b !== undefined) {
      bytes.set(b, at);
      at += b.length;
    }
  }
  offsets[vocabSize] = at;

  const plainFrom = new Int32Array(vocabSize);
  const plainTo = new Int32Array(vocabSize);
  const words = Math.ceil(vocabSize / 32);
  const stringInner = new Uint32Array(words);
  const closers: number[] = [];
  const closerRest: number[] = [];
  const strings = new StringNode(new NodeIds());
  const present: number[] = [];
  for (let id = 0; id < vocabSize; id++) {
    if (id % SLICE === 0) yield;
    const from = offsets[id];
    const to = offsets[id + 1];
    if (to === from) continue;
    present.push(id);
    [plainFrom[id], plainTo[id]] = plainBounds(bytes, from, to, strings);
    const end = walkString(bytes, from, to, strings);
    if (end === 0) stringInner[id >>> 5] |= 1 << (id & 31);
    else if (end > 0) {
      closers.push(id);
      closerRest.push(end);
    }
  }
  const order = yield* byteOrder(bytes, offsets, Int32Array.from(present));
  return {
    vocabSize,
    words,
    bytes,
    offsets,
    plainFrom,
    plainTo,
    stringInner,
    closers: Int32Array.from(closers),
    closerRest: Int32Array.from(closerRest),
    trie: yield* buildTrie(bytes, offsets, order),
  };
}

/** Tokens per slice of work. */
const SLICE = 1024;

const cache = new WeakMap<Tokenizer, Map<number, Promise<VocabularyIndex>>>();

/**
 * The index of `tokenizer`'s vocabulary over ids [0, vocabSize), built once (about 0.5 s of work
 * for 150k tokens, in slices of a few ms so the event loop keeps turning).
 */
export function vocabularyIndex(tokenizer: Tokenizer, vocabSize: number): Promise<VocabularyIndex> {
  let byVocab = cache.get(tokenizer);
  if (byVocab === undefined) {
    byVocab = new Map();
    cache.set(tokenizer, byVocab);
  }
  let index = byVocab.get(vocabSize);
  if (index === undefined) {
    bytesGetter(tokenizer); // an UnsupportedError now, not a rejected promise kept in the cache
    index = inSlices(build(tokenizer, vocabSize));
    byVocab.set(vocabSize, index);
  }
  return index;
}
