/**
 * Differential test of the Llama 3 and Llama 3.1 tokenizers (byte-level BPE with the Llama 3
 * split and ignore_merges) against Hugging Face's Rust tokenizers reading the same real
 * tokenizer.json: ids with and without special tokens, and decode with and without skipping them;
 * loadTokenizer (worker, packed cache) on the same file, and the chat template of
 * tokenizer_config.json against Meta's documented prompt format.
 */
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import * as fs from 'node:fs';
import { UnsupportedError } from '../../lib/base/errors';
import { LLAMA3_PATTERN, tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { preTokenizerFromJson } from '../../lib/tokenizers/pretokenizers';
import { familyChatTemplate, familyCorpus, familyDir, familyJson, type Family } from './family-reference';
import { CHAT, compareDecode, compareEncode, useTempTokenizerCache } from './family-compare';

const cacheDir = useTempTokenizerCache();

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

  it('loadTokenizer (built and packed in the worker, then read from the cache) encodes like HF', async () => {
    const path = nodePath.join(familyDir(family), 'tokenizer.json');
    for (let round = 0; round < 2; round++) {
      const loaded = await loadTokenizer(path);
      expect(loaded.kind).toBe('byte-level-bpe');
      expect(loaded.specialIds).toEqual(ours.specialIds);
      const { bad } = await compareEncode(loaded, hf, corpus.slice(0, 400), true);
      expect(bad).toEqual([]);
    }
    expect(fs.readdirSync(nodePath.join(cacheDir(), 'tokenizers')).some((f) => f.endsWith('.wmtok'))).toBe(true);
  });
  it('the chat template renders Meta\'s Llama 3 prompt format, which both tokenizers encode alike', async () => {
    const template = familyChatTemplate(family);
    const header = (role: string) => `<|start_header_id|>${role}<|end_header_id|>\n\n`;
    const prompt = template.render(CHAT, { addGenerationPrompt: true });
    expect(prompt).toBe(
      `<|begin_of_text|>${header('system')}You are terse.<|eot_id|>${header('user')}Hi there<|eot_id|>` +
        `${header('assistant')}Hello.<|eot_id|>${header('user')}Count to 3.<|eot_id|>${header('assistant')}`,
    );
    expect(template.stopTokenTexts).toContain('<|eot_id|>');
    const ids = ours.encode(prompt, { addSpecialTokens: false });
    expect(ids).toEqual((await hf.encode(prompt, null, { addSpecialTokens: false })).getIds());
    expect(ids.slice(0, 4)).toEqual([128000, 128006, ours.tokenToId('system'), 128007]);
  });
});

describe('Oniguruma \\p{L} / \\p{N} in JS (letters and digits newer than HF\'s Unicode tables)', () => {
  const TEXT = 'ab\u{32416}:M \u{11db0}\u{11db1}x 7\u{16ff4}5 a\u{88f}b \u{11de0}12 \u{32416}\u{32417} q';
  it.each(['\\p{L}+', '\\P{L}+', '\\P{N}+', '[^\\s\\p{L}\\p{N}]+', '[\\p{L}\\p{N}]+', '[x\\p{N}]+'])('Split %s: the pieces HF makes', async (regex) => {
    const split = { type: 'Split', pattern: { Regex: regex }, behavior: 'Isolated', invert: false };
    // Each piece becomes one [UNK] of a one-entry WordLevel model: HF's pieces are its tokens' offsets.
    const hf = HfTokenizer.fromString(JSON.stringify({
      version: '1.0', added_tokens: [], normalizer: null, pre_tokenizer: split, post_processor: null, decoder: null,
      model: { type: 'WordLevel', vocab: { '[UNK]': 0 }, unk_token: '[UNK]' },
    }));
    const hfPieces = (await hf.encode(TEXT, null, { addSpecialTokens: false })).getOffsets().map(([a, b]) => Array.from(TEXT).slice(a, b).join(''));
    const ours: string[] = [];
    preTokenizerFromJson(split)(TEXT, ours);
    expect(ours).toEqual(hfPieces);
  });
  it('an unfinished \\p{ escape is refused, not looped on', () => {
    expect(() => preTokenizerFromJson({ type: 'Split', pattern: { Regex: 'a\\p{L' }, behavior: 'Isolated', invert: false })).toThrow(UnsupportedError);
  });
});
