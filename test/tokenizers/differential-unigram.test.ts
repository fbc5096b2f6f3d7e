/**
 * Differential test of the Unigram tokenizer (tokenizer.json `Unigram` model, `Precompiled`
 * charsmap, Replace / Strip / NFKC normalizers, Metaspace, XLM-R's post-processors) against Hugging
 * Face's Rust tokenizers on the same tokenizer.json, made here from a seed (unigram-generator.ts:
 * no sentencepiece needed): ids with and without special tokens over the shared corpus plus
 * multilingual text, decode with and without skipping special tokens, stream decoding; and
 * loadTokenizer on the file (built and packed in the worker, then read packed from the cache).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { makeCorpus } from './corpus';
import { compareDecode, compareEncode, useTempTokenizerCache } from './family-compare';
import { multilingualLines } from './multilingual';
import { unigramTokenizerJson, type UnigramJsonOptions } from './unigram-generator';

const corpus = [...makeCorpus(2000), ...multilingualLines(1000), 'Ａ\u0301 ｆ\u0301 e\u0301 <mask> x', ' <mask> a', 'a  <mask>  b', '<s>x</s>', '▁▁ ▁a',
  // graphemes across the cut before a space: a space and a mark, a Prepend character before a space, CR LF
  ' \u0301a', 'a \u0301 b', 'Ａ \u0301', '\u0600 x', 'a\u0600 \u0301', '\u{110bd} y', 'x\r\ny', '\r\n\r\n', 'ｆ\u0301\u0301'];

const cacheDir = useTempTokenizerCache();

const VARIANTS: [string, UnigramJsonOptions][] = [
  ['XLM-R (Precompiled + Replace, Metaspace always, TemplateProcessing)', {}],
  ['byte fallback, the ByteFallback decoder, RobertaProcessing', { byteFallback: true, decoder: 'sequence', postProcessor: 'roberta', seed: 5 }],
  ["transformers' SpmConverter normalizer (Strip right, runs of spaces -> ▁), prepend first", { normalizer: 'spm', prependScheme: 'first', seed: 9 }],
  ['NFKC + Strip + Replace, prepend never, no post-processor', { normalizer: 'nfkc', prependScheme: 'never', postProcessor: 'none', seed: 11 }],
  ['no normalizer, Metaspace without split', { normalizer: 'none', split: false, seed: 13 }],
  ['Metaspace as older files write it (add_prefix_space, str_rep)', { legacyMetaspace: true, seed: 15 }],
  ['Metaspace as older files write it, add_prefix_space false (with prepend_scheme never)', { legacyMetaspace: true, prependScheme: 'never', seed: 19 }],
];

describe.each(VARIANTS)('Unigram tokenizer.json vs HF tokenizers: %s', (_name, options) => {
  const json = unigramTokenizerJson(options);
  const hf = HfTokenizer.fromString(JSON.stringify(json));
  let ours: Tokenizer;
  beforeAll(() => {
    ours = tokenizerFromJson(json, 'generated tokenizer.json');
  });

  it('has HF\'s vocabulary size and lookups', () => {
    expect(ours.kind).toBe('unigram');
    // One past the largest id: the model's list; HF's binding counts distinct strings, and one piece repeats.
    expect(ours.vocabSize).toBe(json.model.vocab.length);
    expect(hf.getVocabSize(true)).toBe(ours.vocabSize - 1);
    expect(ours.tokenToId('<mask>')).toBe(json.model.vocab.length - 1);
    // '▁the' is listed twice: HF finds it by its last id.
    const ids = json.model.vocab.flatMap((p: [string, number], i: number) => (p[0] === '▁the' ? [i] : []));
    expect(ids.length).toBe(2);
    expect(ours.tokenToId('▁the')).toBe(ids[1]);
    expect(ours.idToToken(ids[0])).toBe('▁the');
  });
  it.each([true, false])('encode with addSpecialTokens=%s: identical ids over the corpus', async (add) => {
    const { total, bad } = await compareEncode(ours, hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(corpus.length);
  });
  it('decode: identical text, with and without skipping special tokens', async () => {
    const { total, bad } = await compareDecode(ours, hf, corpus.slice(0, 1500));
    expect(bad).toEqual([]);
    expect(total).toBeGreaterThan(1500);
  });
  it("stream decoding gives decode's text", async () => {
    const idLists = (await hf.encodeBatch(corpus.slice(0, 400), { addSpecialTokens: true })).map((e) => e.getIds());
    for (const skip of [false, true]) {
      const expected = await hf.decodeBatch(idLists, skip);
      idLists.forEach((ids, i) => {
        const stream = ours.createStreamDecoder({ skipSpecialTokens: skip });
        let text = '';
        for (const id of ids) text += stream.push(id);
        expect(text + stream.flush()).toBe(expected[i]);
      });
    }
  });
});

test('without unk_id, a character outside the pieces is an error in both', async () => {
  const json = unigramTokenizerJson({ noUnk: true, seed: 21 });
  const hf = HfTokenizer.fromString(JSON.stringify(json));
  const ours = tokenizerFromJson(json, 'generated');
  const known = multilingualLines(200, 21);
  const { bad } = await compareEncode(ours, hf, known, true);
  expect(bad).toEqual([]);
  await expect(hf.encode('\u{10ffff}', null)).rejects.toThrow();
  expect(() => ours.encode('\u{10ffff}')).toThrow(expect.objectContaining({ name: 'UnsupportedError' }));
});

test('loadTokenizer builds it in the worker, caches it packed, and both loads encode and decode like HF', async () => {
  const json = unigramTokenizerJson({ byteFallback: true, decoder: 'sequence', seed: 5 });
  const hf = HfTokenizer.fromString(JSON.stringify(json));
  const dir = fs.mkdtempSync(nodePath.join(cacheDir(), 'model-'));
  const path = nodePath.join(dir, 'tokenizer.json');
  fs.writeFileSync(path, JSON.stringify(json));
  for (let round = 0; round < 2; round++) {
    const loaded = await loadTokenizer(path);
    expect(loaded.kind).toBe('unigram');
    expect((await compareEncode(loaded, hf, corpus.slice(0, 600), true)).bad).toEqual([]);
    expect((await compareDecode(loaded, hf, corpus.slice(0, 200))).bad).toEqual([]);
  }
  const files = fs.readdirSync(nodePath.join(cacheDir(), 'tokenizers'));
  expect(files.filter((f) => f.endsWith('.wmtok'))).toHaveLength(1);
  expect(files.filter((f) => f.endsWith('.none'))).toEqual([]);
});

test('Metaspace add_prefix_space false without prepend_scheme never is refused, as HF refuses it', () => {
  const json = unigramTokenizerJson({ seed: 3 });
  json.pre_tokenizer = { type: 'Metaspace', replacement: '▁', add_prefix_space: false };
  expect(() => HfTokenizer.fromString(JSON.stringify(json))).toThrow(/add_prefix_space/);
  expect(() => tokenizerFromJson(json, 'x')).toThrow(expect.objectContaining({ name: 'UnsupportedError' }));
});
