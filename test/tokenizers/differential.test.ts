/**
 * Differential test against Hugging Face's Rust tokenizers over a generated corpus: Qwen3
 * (byte-level BPE, from tokenizer.json and from the ajc1 .tokenizer alone) and
 * MiniLM (WordPiece), encode and decode, built directly and packed as the tokenizer worker hands it over.
 */
import { fixture } from '../helpers/fixtures';
import { tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizerSync } from '../../lib/tokenizer-loading';
import { packTokenizer, unpackTokenizer } from '../../lib/tokenizers/packed';
import { makeCorpus } from './corpus';
import { hfFromJson, hfMiniLm, qwen3TokenizerJson } from './hf-reference';

const CORPUS = makeCorpus(3000);

/** The tokenizer as the worker hands it over: packed into one buffer, then unpacked (lib/tokenizers/packed.ts). */
function repacked(tokenizer: Tokenizer): Tokenizer {
  const packed = packTokenizer(tokenizer, { test: true });
  if (!packed) throw new Error(`a ${tokenizer.kind} tokenizer did not pack`);
  return unpackTokenizer(packed);
}

function firstMismatches(tok: Tokenizer, expected: number[][], opts: object): string[] {
  const bad: string[] = [];
  CORPUS.forEach((text, i) => {
    const got = tok.encode(text, opts);
    if (got.length !== expected[i].length || got.some((id, k) => id !== expected[i][k])) {
      bad.push(`${JSON.stringify(text).slice(0, 120)}\n  ours ${JSON.stringify(got).slice(0, 200)}\n  hf   ${JSON.stringify(expected[i]).slice(0, 200)}`);
    }
  });
  return bad.slice(0, 5);
}

describe('Qwen3 byte-level BPE vs HF tokenizers', () => {
  const json = qwen3TokenizerJson();
  const hf = hfFromJson(json);
  let hfIds: number[][];
  beforeAll(async () => {
    hfIds = (await hf.encodeBatch(CORPUS, { addSpecialTokens: false })).map((e) => e.getIds());
  });
  it('the corpus has a few thousand strings, long words included', () => {
    expect(CORPUS.length).toBe(3000);
    expect(Math.max(...CORPUS.map((s) => s.length))).toBeGreaterThan(2000);
  });
  it.each([
    ['tokenizer.json', () => tokenizerFromJson(json, 'qwen3 tokenizer.json')],
    // (vocab.json + merges.txt builds the same tables as tokenizer.json; the vector tests cover it)
    ['ajc1 .tokenizer alone', () => loadTokenizerSync(fixture('ajc1-qwen3-tiny', 'model.bin.tokenizer'))],
  ])('encode from %s: identical ids', (_n, load) => {
    expect(firstMismatches(load(), hfIds, { addSpecialTokens: false })).toEqual([]);
  });
  it('decode: identical text, with and without special tokens', async () => {
    const ours = tokenizerFromJson(json, 'qwen3 tokenizer.json');
    const sample = CORPUS.map((_, i) => hfIds[i]).filter((_, i) => i % 5 === 0);
    sample.push([151644, 872, 198, 9707, 151645, 151667, 14990, 151668], [11162, 99], [99, 247], [151643, 220]);
    for (const skip of [false, true]) {
      const expected = await hf.decodeBatch(sample, skip);
      sample.forEach((ids, i) => expect({ ids, text: ours.decode(ids, { skipSpecialTokens: skip }) }).toEqual({ ids, text: expected[i] }));
    }
  });
});

describe('MiniLM WordPiece vs HF tokenizers', () => {
  const hf = hfMiniLm();
  let hfIds: number[][];
  beforeAll(async () => {
    hfIds = (await hf.encodeBatch(CORPUS, { addSpecialTokens: true })).map((e) => e.getIds());
  });
  it.each([
    ['tokenizer.json', () => loadTokenizerSync(fixture('tokenizers', 'minilm', 'tokenizer.json'))],
    ['vocab.txt', () => loadTokenizerSync(fixture('tokenizers', 'minilm', 'vocab.txt'))],
    ['tokenizer.json, packed as the tokenizer worker packs it', () => repacked(loadTokenizerSync(fixture('tokenizers', 'minilm', 'tokenizer.json')))],
  ])('encode from %s: identical ids', (_n, load) => {
    expect(firstMismatches(load(), hfIds, { maxLength: Infinity })).toEqual([]);
  });
  it.each([
    ['tokenizer.json', () => loadTokenizerSync(fixture('tokenizers', 'minilm', 'tokenizer.json'))],
    ['tokenizer.json, packed', () => repacked(loadTokenizerSync(fixture('tokenizers', 'minilm', 'tokenizer.json')))],
  ])('decode from %s: identical text, with and without special tokens', async (_n, load) => {
    const ours = load();
    const sample = hfIds.filter((_, i) => i % 5 === 0);
    for (const skip of [false, true]) {
      const expected = await hf.decodeBatch(sample, skip);
      sample.forEach((ids, i) => expect({ ids, text: ours.decode(ids, { skipSpecialTokens: skip }) }).toEqual({ ids, text: expected[i] }));
    }
  });
});
