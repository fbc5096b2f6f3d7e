/**
 * Byte-level BPE model: a word (one pre-tokenizer piece) -> ids. Initial symbols are the word's
 * UTF-8 bytes (each the vocabulary id of its byte-level stand-in character), merged by rank.
 * Results are cached per word.
 */
import { WeightFormatError } from '../base/errors';
import { BYTE_TO_CHAR, bytesToByteLevel } from './byte-level';
import { mergeWord } from './bpe-merge';
import { MergeTable } from './merge-table';
import { runNow, type Steps } from '../base/steps';
import { encodeUtf8Into } from './utf8';

const CACHE_LIMIT = 200_000;
/** Words longer than this (UTF-16 units) are not cached. */
const CACHE_MAX_WORD = 256;

export interface BpeModelOptions {
  /** HF `ignore_merges`: a word that is itself a vocabulary entry is emitted as one token. */
  ignoreMerges?: boolean;
  /** Id for bytes whose stand-in is missing from the vocabulary (HF drops them when unset). */
  unkId?: number;
}

/** Builds the pair table from merges given as token-string pairs, in rank order. */
export function mergeTableFromPairs(
  vocab: ReadonlyMap<string, number>,
  merges: Iterable<readonly [string, string]>,
  where: string,
): MergeTable {
  return runNow(mergeTableFromPairsSteps(vocab, merges, where));
}

/** Merges between two checkpoints of the build (well under a millisecond; see steps.ts). */
const MERGE_STEP = 2048;

/** mergeTableFromPairs in slices (see steps.ts). */
export function* mergeTableFromPairsSteps(
  vocab: ReadonlyMap<string, number>,
  merges: Iterable<readonly [string, string]>,
  where: string,
): Steps<MergeTable> {
  const pairs = Array.isArray(merges) ? merges : [...merges];
  const table = new MergeTable(pairs.length);
  let rank = 0;
  for (const [a, b] of pairs) {
    if (rank % MERGE_STEP === MERGE_STEP - 1) yield;
    const ia = vocab.get(a);
    const ib = vocab.get(b);
    const im = vocab.get(a + b);
    if (ia === undefined || ib === undefined || im === undefined) {
      throw new WeightFormatError('BAD_HEADER', `merge ${rank} "${a} ${b}" uses a token missing from the vocabulary`, {
        path: where,
      });
    }
    table.add(ia, ib, rank, im);
    rank++;
  }
  return table;
}

/** Parses merges written as "a b" lines (merges.txt, GGUF) or [a, b] pairs (newer tokenizer.json). */
export function parseMergeEntry(entry: unknown, index: number, where: string): [string, string] {
  if (Array.isArray(entry) && entry.length === 2 && typeof entry[0] === 'string' && typeof entry[1] === 'string') {
    return [entry[0], entry[1]];
  }
  if (typeof entry === 'string') {
    const space = entry.indexOf(' ', 1);
    if (space > 0 && entry.indexOf(' ', space + 1) < 0) return [entry.slice(0, space), entry.slice(space + 1)];
  }
  throw new WeightFormatError('BAD_HEADER', `merge ${index} is not a pair of tokens`, {
    path: where,
    found: entry,
  });
}

export class BpeModel {
  /** byte -> id of its stand-in character, -1 when absent. */
  private readonly byteIds = new Int32Array(256);
  private readonly cache = new Map<string, Int32Array>();
  private utf8Buf: Uint8Array = new Uint8Array(1024);
  private symBuf = new Int32Array(1024);

  constructor(
    private readonly vocab: { get(token: string): number | undefined },
    private readonly table: MergeTable,
    private readonly options: BpeModelOptions = {},
  ) {
    for (let b = 0; b < 256; b++) this.byteIds[b] = vocab.get(String.fromCharCode(BYTE_TO_CHAR[b])) ?? -1;
  }

  /** Appends the ids of one pre-tokenized word to `out`. */
  encodeWord(word: string, out: number[]): void {
    const cached = this.cache.get(word);
    if (cached !== undefined) {
      for (let i = 0; i < cached.length; i++) out.push(cached[i]);
      return;
    }
    const [bytes, nBytes] = encodeUtf8Into(word, this.utf8Buf);
    this.utf8Buf = bytes;
    if (this.options.ignoreMerges) {
      const whole = this.vocab.get(bytesToByteLevel(bytes.subarray(0, nBytes)));
      if (whole !== undefined) {
        out.push(whole);
        return;
      }
    }
    if (this.symBuf.length < nBytes) this.symBuf = new Int32Array(nBytes * 2);
    const syms = this.symBuf;
    let n = 0;
    for (let i = 0; i < nBytes; i++) {
      const id = this.byteIds[bytes[i]];
      if (id >= 0) syms[n++] = id;
      else if (this.options.unkId !== undefined) syms[n++] = this.options.unkId;
    }
    n = mergeWord(syms, n, this.table);
    for (let i = 0; i < n; i++) out.push(syms[i]);
    if (word.length <= CACHE_MAX_WORD) {
      if (this.cache.size >= CACHE_LIMIT) this.cache.clear();
      this.cache.set(word, syms.slice(0, n));
    }
  }
}
