/** The TLLM tokenizer's quirks (FORMATS.md §1.6) and typed errors for bad tokenizer files. */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { UnsupportedError, WeightFormatError } from '../../lib/base/errors';
import { fixture, tempDir } from '../helpers/fixtures';
import { tokenizerFromJson } from '../../lib/tokenizers';
import { loadTokenizerSync } from '../../lib/tokenizer-loading';

describe('TLLM tokenizer (vocab.txt + merges.txt)', () => {
  let dir: string;
  let cleanup: () => void;
  beforeAll(() => {
    ({ dir, cleanup } = tempDir('wm-tllm-'));
    // line 5 is a lone space: an empty-string token (id 8), so " " itself is not in the vocabulary
    fs.writeFileSync(path.join(dir, 'vocab.txt'), 'h\ne\nl\no\n \n\nhe\nll\nllo\nhello 20\na\naa\n<bos>\n');
    fs.writeFileSync(path.join(dir, 'merges.txt'), '#version: 0.2\nh e\nl l\nll o\nhe llo\na a\n');
  });
  afterAll(() => cleanup());

  it('assigns ids: 4 specials first, empty lines skipped, explicit ids honoured, repeats are no-ops', () => {
    const tok = loadTokenizerSync(dir);
    expect(tok.kind).toBe('tllm');
    expect(tok.specialIds).toEqual({ unk: 0, pad: 1, bos: 2, eos: 3 });
    expect(['h', 'e', 'l', 'o', '', 'he', 'll', 'llo'].map((t) => tok.tokenToId(t))).toEqual([4, 5, 6, 7, 8, 9, 10, 11]);
    expect(tok.tokenToId('hello')).toBe(20);
    expect(tok.tokenToId('a')).toBe(21); // the next free id after the explicit 20
    expect(tok.tokenToId('aa')).toBe(22);
    expect(tok.tokenToId('<bos>')).toBe(2);
    expect(tok.vocabSize).toBe(23);
  });

  it('lowercases ASCII, maps tab/newline to spaces, emits each space as a word, merges by rank', () => {
    const tok = loadTokenizerSync(dir);
    // "hello" -> he l l o -> he ll o -> he llo -> hello; " " and "x" are <unk>
    expect(tok.encode('Hello\tHELLO x')).toEqual([20, 0, 20, 0, 0]);
    // the lowest-rank pair is merged at every occurrence at once: aaaaa -> aa aa a
    expect(tok.encode('aaaaa')).toEqual([22, 22, 21]);
    expect(tok.encode('')).toEqual([]);
  });

  it('decodes by concatenation; unknown ids read as <unk>', () => {
    const tok = loadTokenizerSync(dir);
    expect(tok.decode([20, 8, 4, 22])).toBe('hellohaa');
    expect(tok.decode([4, 999])).toBe('h<unk>');
    expect(tok.decode([2, 4, 3], { skipSpecialTokens: true })).toBe('h');
  });
});

describe('bad tokenizer files are typed errors', () => {
  let dir: string;
  let cleanup: () => void;
  beforeAll(() => ({ dir, cleanup } = tempDir('wm-tokerr-')));
  afterAll(() => cleanup());
  const write = (name: string, data: Buffer | string) => {
    const p = path.join(dir, name);
    fs.writeFileSync(p, data);
    return p;
  };
  const code = (fn: () => unknown) => {
    try {
      fn();
    } catch (e) {
      if (e instanceof WeightFormatError) return e.code;
      if (e instanceof UnsupportedError) return 'UnsupportedError';
      throw e;
    }
    return 'no error';
  };

  it('a truncated ajc1 .tokenizer', () => {
    const full = fs.readFileSync(fixture('ajc1-qwen3-tiny', 'model.bin.tokenizer'));
    expect(code(() => loadTokenizerSync(write('cut.tokenizer', full.subarray(0, 1000))))).toBe('TRUNCATED');
    expect(code(() => loadTokenizerSync(write('tiny.tokenizer', full.subarray(0, 6))))).toBe('TRUNCATED');
  });

  it('an ajc1 .tokenizer whose score is no merge rank', () => {
    const b = Buffer.alloc(12 + 3 * 10);
    b.writeUInt32LE(2, 0);
    let at = 12;
    for (const [score, tok] of [[-1e6, 'a'], [-1e6, 'b'], [0.5, 'ab']] as const) {
      b.writeFloatLE(score, at);
      b.writeUInt32LE(tok.length, at + 4);
      b.write(tok, at + 8, 'latin1');
      at += 8 + tok.length;
    }
    expect(code(() => loadTokenizerSync(write('bad.tokenizer', b.subarray(0, at))))).toBe('BAD_HEADER');
  });

  it('a GGUF-named file that is not GGUF, a truncated llama2.c tokenizer.bin', () => {
    const gguf = fs.readFileSync(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf'));
    expect(code(() => loadTokenizerSync(write('cut.gguf', gguf.subarray(0, 5000))))).toBe('TRUNCATED');
    const bin = fs.readFileSync(fixture('tokenizers', 'llama2c', 'tok512.bin'));
    expect(code(() => loadTokenizerSync(write('tokcut.bin', bin.subarray(0, 3))))).toBe('TRUNCATED');
  });

  it('tokenizer.json: merges over missing tokens, unknown model types, no model', () => {
    const bl = { type: 'ByteLevel' };
    expect(code(() => tokenizerFromJson({ model: { type: 'BPE', vocab: { a: 0 }, merges: ['a b'] }, pre_tokenizer: bl }, 'x'))).toBe('BAD_HEADER');
    expect(code(() => tokenizerFromJson({ model: { type: 'WordLevel', vocab: { a: 0 }, unk_token: 'a' } }, 'x'))).toBe('UnsupportedError');
    expect(code(() => tokenizerFromJson({ model: { type: 'Unigram', vocab: [] } }, 'x'))).toBe('BAD_HEADER');
    expect(code(() => tokenizerFromJson({}, 'x'))).toBe('BAD_HEADER');
    expect(code(() => loadTokenizerSync(write('broken.json', '{"model": ')))).toBe('BAD_HEADER');
  });

  it('a folder without tokenizer files', () => {
    const empty = path.join(dir, 'empty');
    fs.mkdirSync(empty);
    expect(code(() => loadTokenizerSync(empty))).toBe('BAD_HEADER');
  });
});
