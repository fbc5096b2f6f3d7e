/** Corpus comparisons of a weightmap tokenizer with Hugging Face's on the same tokenizer.json, and what the family tests share. */
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import type { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import type { Tokenizer } from '../../lib/tokenizers';

const SHOWN = 5;

function same(a: readonly number[], b: readonly number[]): boolean {
  return a.length === b.length && a.every((x, i) => x === b[i]);
}

/** Encodes every string both ways; `bad` describes the first mismatches. */
export async function compareEncode(ours: Tokenizer, hf: HfTokenizer, corpus: string[], addSpecialTokens: boolean): Promise<{ total: number; bad: string[] }> {
  const expected = (await hf.encodeBatch(corpus, { addSpecialTokens })).map((e) => e.getIds());
  const bad: string[] = [];
  corpus.forEach((text, i) => {
    const got = ours.encode(text, { addSpecialTokens });
    if (!same(got, expected[i]) && bad.length < SHOWN) {
      bad.push(`${JSON.stringify(text).slice(0, 160)}\n  ours ${JSON.stringify(got).slice(0, 240)}\n  hf   ${JSON.stringify(expected[i]).slice(0, 240)}`);
    }
  });
  return { total: corpus.length, bad };
}

/**
 * Decodes HF's ids of every string (special tokens added, so BOS is among them) plus runs of
 * random ids over the whole vocabulary and the caller's `extra` lists, keeping and skipping
 * special tokens.
 */
export async function compareDecode(ours: Tokenizer, hf: HfTokenizer, corpus: string[], extra: number[][] = [], seed = 99): Promise<{ total: number; bad: string[] }> {
  const idLists = (await hf.encodeBatch(corpus, { addSpecialTokens: true })).map((e) => e.getIds());
  idLists.push(...extra);
  let s = seed >>> 0;
  const next = () => (s = (Math.imul(s, 1103515245) + 12345) >>> 0);
  for (let k = 0; k < 300; k++) idLists.push(Array.from({ length: 1 + (next() % 12) }, () => next() % ours.vocabSize));
  const bad: string[] = [];
  let total = 0;
  for (const skip of [false, true]) {
    const expected = await hf.decodeBatch(idLists, skip);
    idLists.forEach((ids, i) => {
      total++;
      const got = ours.decode(ids, { skipSpecialTokens: skip });
      if (got !== expected[i] && bad.length < SHOWN) bad.push(`skip=${skip} ${JSON.stringify(ids).slice(0, 200)}\n  ours ${JSON.stringify(got).slice(0, 200)}\n  hf   ${JSON.stringify(expected[i]).slice(0, 200)}`);
    });
  }
  return { total: total / 2, bad };
}

/** Points WEIGHTMAP_CACHE at a fresh folder for the tests of the calling file; returns the folder's getter. */
export function useTempTokenizerCache(): () => string {
  let dir = '';
  const saved = process.env.WEIGHTMAP_CACHE;
  beforeAll(() => {
    dir = fs.mkdtempSync(nodePath.join(os.tmpdir(), 'weightmap-tokfam-'));
    process.env.WEIGHTMAP_CACHE = dir;
  });
  afterAll(() => {
    fs.rmSync(dir, { recursive: true, force: true });
    if (saved === undefined) delete process.env.WEIGHTMAP_CACHE;
    else process.env.WEIGHTMAP_CACHE = saved;
  });
  return () => dir;
}

/** The conversation the chat-template tests render (the user text is trimmed by both templates). */
export const CHAT = [
  { role: 'system' as const, content: 'You are terse.' },
  { role: 'user' as const, content: ' Hi there \n' },
  { role: 'assistant' as const, content: 'Hello.' },
  { role: 'user' as const, content: 'Count to 3.' },
];
