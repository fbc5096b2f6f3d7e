/** Every llama.cpp test vector, through every source of the same vocabulary. */
import { fixture } from '../helpers/fixtures';
import { loadTokenizerSync } from '../../lib/tokenizer-loading';
import { llamaCppVectors } from './vectors';

const noSpecials = { addSpecialTokens: false, maxLength: Infinity };

describe('llama.cpp vectors: qwen2 (= Qwen3 vocab.json + merges.txt)', () => {
  const cases = llamaCppVectors('qwen2');
  it('has the 46 cases', () => expect(cases).toHaveLength(46));
  it.each([
    ['vocab.json + merges.txt', () => loadTokenizerSync(fixture('tokenizers', 'qwen3'))],
    ['ajc1 .tokenizer alone', () => loadTokenizerSync(fixture('ajc1-qwen3-tiny', 'model.bin.tokenizer'))],
  ])('%s', (_name, load) => {
    const tok = load();
    for (const c of cases) expect({ text: c.text, ids: tok.encode(c.text, noSpecials) }).toEqual(c);
  });
});

describe('llama.cpp vectors: llama-spm', () => {
  const cases = llamaCppVectors('llama-spm');
  it.each([
    ['ggml-vocab-llama-spm.gguf', () => loadTokenizerSync(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-llama-spm.gguf'))],
    ['llama2.c tokenizer.bin', () => loadTokenizerSync(fixture('tokenizers', 'llama2c', 'tokenizer.bin'))],
  ])('%s', (_name, load) => {
    const tok = load();
    for (const c of cases) expect({ text: c.text, ids: tok.encode(c.text, noSpecials) }).toEqual(c);
  });
  it('adds BOS by default (GGUF add_bos_token) and decodes back to the text', () => {
    const tok = loadTokenizerSync(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-llama-spm.gguf'));
    const ids = tok.encode('Hello world');
    expect(ids[0]).toBe(1);
    expect(ids.slice(1)).toEqual(tok.encode('Hello world', { addSpecialTokens: false }));
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe('Hello world');
  });
});

describe('llama.cpp vectors: bert-bge (= MiniLM vocab)', () => {
  const cases = llamaCppVectors('bert-bge');
  it.each([
    ['ggml-vocab-bert-bge.gguf', () => loadTokenizerSync(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf'))],
    ['minilm/vocab.txt', () => loadTokenizerSync(fixture('tokenizers', 'minilm', 'vocab.txt'))],
    ['minilm/tokenizer.json', () => loadTokenizerSync(fixture('tokenizers', 'minilm', 'tokenizer.json'))],
  ])('%s', (_name, load) => {
    const tok = load();
    for (const c of cases) expect({ text: c.text, ids: tok.encode(c.text, noSpecials) }).toEqual(c);
  });
  it('the GGUF vocabulary equals vocab.txt once its U+2581 word starts are undone', () => {
    const a = loadTokenizerSync(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf'));
    const b = loadTokenizerSync(fixture('tokenizers', 'minilm', 'vocab.txt'));
    expect(a.vocabSize).toBe(30522);
    for (let id = 0; id < a.vocabSize; id++) expect(a.idToToken(id)).toBe(b.idToToken(id));
    expect(a.specialIds).toEqual({ pad: 0, unk: 100, cls: 101, sep: 102, mask: 103 });
  });
});
