/**
 * Differential test of the Gemma 3 tokenizer (BPE over U+2581-marked text with byte fallback,
 * 262k tokens) against Hugging Face's Rust tokenizers reading the same real tokenizer.json: ids
 * with and without special tokens, and decode with and without skipping them; loadTokenizer (worker,
 * packed cache) on the same file, and the chat template of tokenizer_config.json against Gemma's documented
 * prompt format.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { familyChatTemplate, familyCorpus, familyDir, familyJson } from './family-reference';
import { CHAT, compareDecode, compareEncode, useTempTokenizerCache } from './family-compare';

const cacheDir = useTempTokenizerCache();

describe('gemma3 tokenizer.json vs HF tokenizers', () => {
  const corpus = familyCorpus('gemma3');
  const hf = HfTokenizer.fromFile(nodePath.join(familyDir('gemma3'), 'tokenizer.json'));
  let ours: Tokenizer;
  beforeAll(() => {
    ours = tokenizerFromJson(familyJson('gemma3', 'tokenizer.json'), 'gemma3', familyJson('gemma3', 'tokenizer_config.json'));
  });

  it('is the byte-fallback BPE with HF\'s 262k ids (added tokens included), <end_of_turn> as EOS', () => {
    expect(ours.kind).toBe('byte-fallback-bpe');
    expect(ours.vocabSize).toBe(hf.getVocabSize(true));
    expect(ours.vocabSize).toBeGreaterThan(262_000);
    expect(ours.specialIds).toMatchObject({ bos: 2, eos: ours.tokenToId('<end_of_turn>'), pad: 0, unk: 3 });
  });
  it.each([false, true])('encode with addSpecialTokens=%s: identical ids over the corpus', async (add) => {
    const { total, bad } = await compareEncode(ours, hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(corpus.length);
  });
  it('decode: identical text, with and without skipping special tokens', async () => {
    // Byte tokens: a valid UTF-8 run, runs cut short before other tokens, stray continuation bytes.
    const b = (...bytes: number[]) => bytes.map((x) => ours.tokenToId(`<0x${x.toString(16).toUpperCase().padStart(2, '0')}>`)!);
    const word = ours.tokenToId('▁hello')!;
    const extra = [
      b(0xe6, 0x97, 0xa5),
      [...b(0xe6, 0x97), word, ...b(0xa5)],
      [2, ...b(0xf0, 0x9f, 0xa6), word, ...b(0x99, 0xff, 0x41), 1],
      [...b(0xc3), ...b(0xa9, 0xc3, 0xa9), word, 106, ...b(0x80)],
    ];
    const { total, bad } = await compareDecode(ours, hf, corpus, extra);
    expect(bad).toEqual([]);
    expect(total).toBeGreaterThan(corpus.length);
  });

  it('stream decoding gives decode\'s text (HF\'s) for the corpus, one id at a time', async () => {
    const idLists = (await hf.encodeBatch(corpus.slice(0, 500), { addSpecialTokens: true })).map((e) => e.getIds());
    const expected = await hf.decodeBatch(idLists, false);
    const stream = ours.createStreamDecoder();
    idLists.forEach((ids, i) => {
      let text = '';
      for (const id of ids) text += stream.push(id);
      expect(text + stream.flush()).toBe(expected[i]);
    });
  });
  it('loadTokenizer (built and packed in the worker, then read from the cache) encodes and decodes like HF', async () => {
    const path = nodePath.join(familyDir('gemma3'), 'tokenizer.json');
    for (let round = 0; round < 2; round++) {
      const loaded = await loadTokenizer(path);
      expect(loaded.kind).toBe('byte-fallback-bpe');
      expect(loaded.specialIds).toEqual(ours.specialIds);
      expect(loaded.vocabSize).toBe(ours.vocabSize);
      const { bad } = await compareEncode(loaded, hf, corpus.slice(0, 400), true);
      expect(bad).toEqual([]);
      const decoded = await compareDecode(loaded, hf, corpus.slice(0, 100), []);
      expect(decoded.bad).toEqual([]);
    }
    // The worker packed it (the cache file is its output), and nothing noted it as a kind that does not pack.
    const files = fs.readdirSync(nodePath.join(cacheDir(), 'tokenizers'));
    expect(files.filter((f) => f.endsWith('.wmtok'))).toHaveLength(1);
    expect(files.filter((f) => f.endsWith('.none'))).toEqual([]);
  });
  it('the chat template renders Gemma\'s turn format (system text folded into the first user turn), which both tokenizers encode alike', async () => {
    const template = familyChatTemplate('gemma3');
    const prompt = template.render(CHAT, { addGenerationPrompt: true });
    expect(prompt).toBe(
      '<bos><start_of_turn>user\nYou are terse.\n\nHi there<end_of_turn>\n<start_of_turn>model\nHello.<end_of_turn>\n' +
        '<start_of_turn>user\nCount to 3.<end_of_turn>\n<start_of_turn>model\n',
    );
    expect(template.stopTokenTexts).toContain('<end_of_turn>');
    const ids = ours.encode(prompt, { addSpecialTokens: false });
    expect(ids).toEqual((await hf.encode(prompt, null, { addSpecialTokens: false })).getIds());
    expect(ids.slice(0, 3)).toEqual([2, ours.tokenToId('<start_of_turn>'), ours.tokenToId('user')]);
  });
});
