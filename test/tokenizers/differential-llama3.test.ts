/**
 * Differential test of the Llama 3 and Llama 3.1 tokenizers (byte-level BPE with the Llama 3
 * split and ignore_merges) against Hugging Face's Rust tokenizers reading the same real
 * tokenizer.json: ids with and without special tokens, and decode with and without skipping them.
 */
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { LLAMA3_PATTERN, tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { familyCorpus, familyDir, familyJson, type Family } from './family-reference';
import { compareDecode, compareEncode } from './family-compare';

describe.each<Family>(['llama3', 'llama3_1'])('%s tokenizer.json vs HF tokenizers', (family) => {
  const corpus = familyCorpus(family);
  const hf = HfTokenizer.fromFile(nodePath.join(familyDir(family), 'tokenizer.json'));
  let ours: Tokenizer;
  beforeAll(() => {
    ours = tokenizerFromJson(familyJson(family, 'tokenizer.json'), family, familyJson(family, 'tokenizer_config.json'));
  });

  it('its split pattern is the Llama 3 one weightmap knows (GGUF pre "llama-bpe")', () => {
    expect(familyJson(family, 'tokenizer.json').pre_tokenizer.pretokenizers[0].pattern.Regex).toBe(LLAMA3_PATTERN);
  });
  it.each([false, true])('encode with addSpecialTokens=%s: identical ids over the corpus', async (add) => {
    const { total, bad } = await compareEncode(ours, hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(corpus.length);
  });
  it('decode: identical text, with and without skipping special tokens', async () => {
    const { total, bad } = await compareDecode(ours, hf, corpus);
    expect(bad).toEqual([]);
    expect(total).toBeGreaterThan(corpus.length);
  });
});
