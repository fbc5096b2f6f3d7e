/**
 * Hostile GGUF UGM ("t5") vocabularies are typed errors, never a crash or an allocation the file
 * did not pay for: missing scores, token types outside llama.cpp's, non-finite scores, an unknown
 * id past the vocabulary, a charsmap key of the wrong type or too large (bounded before it is
 * kept), and a damaged charsmap blob; and a small valid one tokenizes as llama.cpp's rules say.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { loadTokenizerSync } from '../../lib/tokenizer-loading';
import { tokenizerFromData } from '../../lib/tokenizers';
import { MAX_CHARSMAP_BYTES } from '../../lib/tokenizers/precompiled-charsmap';
import type { TokenizerData } from '../../lib/addon/weights';
import { tempDir } from '../helpers/fixtures';
import { writeVocabGguf, type VocabKv } from '../helpers/gguf-vocab-file';
import { buildCharsmap } from './unigram-generator';

type Gguf = Extract<TokenizerData, { kind: 'gguf' }>;

// <pad> <s> </s> <unk> (XLM-R's order), then pieces; '▁ab' scores better than '▁a' + 'b'.
const TOKENS = ['<pad>', '<s>', '</s>', '<unk>', '▁', 'a', 'b', '▁a', '▁ab', 'c', '<mask>'];
const TYPES = [3, 3, 3, 2, 1, 1, 1, 1, 1, 1, 4];
const SCORES = [0, 0, 0, 0, -5, -3, -3, -2, -1, -4, 0];

function vocab(extra: Partial<Gguf> = {}): Gguf {
  return {
    kind: 'gguf', model: 't5', tokens: TOKENS, scores: Float32Array.from(SCORES), tokenTypes: Int32Array.from(TYPES),
    bosId: 1, eosId: 2, unkId: 3, padId: 0, addBos: true, addEos: true, addSpacePrefix: true, removeExtraWhitespaces: true, ...extra,
  };
}

const errorOf = (fn: () => unknown): any => {
  try {
    fn();
  } catch (e) {
    return e;
  }
  return undefined;
};

describe('GGUF UGM vocabularies', () => {
  it('tokenizes by llama.cpp rules: ▁ before each word, Viterbi over the fragment, unknown runs as one id, user-defined cut first', () => {
    const tok = tokenizerFromData(vocab(), 'x');
    expect(tok.encode('ab  a')).toEqual([1, 8, 7, 2]);
    expect(tok.encode('ab zzz c', { addSpecialTokens: false })).toEqual([8, 4, 3, 4, 9]);
    expect(tok.encode('a<mask>b', { addSpecialTokens: false })).toEqual([7, 10, 4, 6]);
    expect(tok.encode('a</s>', { addSpecialTokens: false })).toEqual([7, 2]);
    expect(tok.encode('a</s>', { addSpecialTokens: false, parseSpecialTokens: false })).not.toContain(2);
    expect(tok.decode([1, 8, 7, 2], { skipSpecialTokens: true })).toBe(' ab a');
    expect(tok.decode([8, 7])).toBe('ab a');
    expect(tok.decode([1, 8, 2])).toBe('<s> ab</s>');
  });
  it.each([
    ['no scores', { scores: undefined }],
    ['a token type outside 1..6', { tokenTypes: Int32Array.from(TYPES.map((t, i) => (i === 5 ? 9 : t))) }],
    ['a score that is not finite', { scores: Float32Array.from(SCORES.map((s, i) => (i === 6 ? NaN : s))) }],
    ['a damaged charsmap', { precompiledCharsmap: Uint8Array.of(0xff, 0xff, 0xff, 0x7f, 1, 2, 3) }],
    ['add_bos_token without a BOS token', { bosId: undefined }],
  ])('%s is a WeightFormatError', (_name, extra) => {
    expect(errorOf(() => tokenizerFromData(vocab(extra as Partial<Gguf>), 'x'))).toEqual(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER' }));
  });
  it('an unknown id past the vocabulary is refused', () => {
    expect(errorOf(() => tokenizerFromData(vocab({ unkId: undefined, tokens: TOKENS.slice(0, 2), scores: Float32Array.of(0, 0), tokenTypes: Int32Array.of(3, 3), bosId: 1, eosId: 1 }), 'x'))?.name).toBe('UnsupportedError');
  });
  it('applies a charsmap by its longest rule (sentencepiece), not HF\'s grapheme rule', () => {
    const charsmap = buildCharsmap([['Ａ', 'a'], ['Ａ\u0301', 'b']]);
    const tok = tokenizerFromData(vocab({ precompiledCharsmap: new Uint8Array(charsmap) }), 'x');
    expect(tok.encode('Ａ Ａ\u0301', { addSpecialTokens: false })).toEqual([7, 4, 6]);
  });

  describe('from GGUF files', () => {
    let tmp: ReturnType<typeof tempDir>;
    beforeAll(() => (tmp = tempDir('weightmap-ugm-errors-')));
    afterAll(() => tmp.cleanup());
    const file = (name: string, kvs: VocabKv[]) => {
      const path = nodePath.join(tmp.dir, name);
      writeVocabGguf(path, [
        ['tokenizer.ggml.model', 'string', 't5'],
        ['tokenizer.ggml.tokens', 'array<string>', TOKENS],
        ['tokenizer.ggml.scores', 'array<f32>', Float32Array.from(SCORES)],
        ['tokenizer.ggml.token_type', 'array<i32>', Int32Array.from(TYPES)],
        ...kvs,
      ]);
      return path;
    };
    it('reads the UGM keys (charsmap, remove_extra_whitespaces, add_space_prefix)', () => {
      const tok = loadTokenizerSync(file('ok.gguf', [['tokenizer.ggml.add_space_prefix', 'bool', true], ['tokenizer.ggml.remove_extra_whitespaces', 'bool', true], ['tokenizer.ggml.precompiled_charsmap', 'array<u8>', new Uint8Array(buildCharsmap([['Ａ', 'a']]))], ['tokenizer.ggml.unknown_token_id', 'u32', 3], ['tokenizer.ggml.eos_token_id', 'u32', 2]]));
      expect(tok.encode('Ａb  a')).toEqual([8, 7, 2]);
    });
    it('refuses a charsmap that is no byte array, or larger than the bound, before keeping it', () => {
      const wrong = file('wrong.gguf', [['tokenizer.ggml.precompiled_charsmap', 'array<i32>', Int32Array.of(1, 2)] as unknown as VocabKv]);
      expect(errorOf(() => loadTokenizerSync(wrong))).toEqual(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER' }));
      const big = file('big.gguf', [['tokenizer.ggml.precompiled_charsmap', 'array<u8>', new Uint8Array(MAX_CHARSMAP_BYTES + 1)]]);
      expect(errorOf(() => loadTokenizerSync(big))).toEqual(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER' }));
      fs.rmSync(big);
    });
  });
});
