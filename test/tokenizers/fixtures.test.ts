/** Token ids and texts of the model fixtures (ajc1 prompt and cases, EMBD sentences, stories260K). */
import * as fs from 'node:fs';
import { fixture, readJson } from '../helpers/fixtures';
import { tokenizerFromData, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizerSync } from '../../lib/tokenizer-loading';
import type { TokenizerData } from '../../lib/addon/weights';

/** Loads once per file: the Qwen3 vocabulary takes a second or two to build. */
function memo<T>(make: () => T): () => T {
  let value: T | undefined;
  return () => (value ??= make());
}
const qwen3 = memo(() => loadTokenizerSync(fixture('tokenizers', 'qwen3')));
const ajc1 = memo(() => loadTokenizerSync(fixture('ajc1-qwen3-tiny', 'model.bin.tokenizer')));

describe('ajc1-qwen3-tiny: HF ids from vocab.json + merges.txt and from the .tokenizer alone', () => {
  const expected = readJson('ajc1-qwen3-tiny', 'expected.json');
  const prompt = expected.cases[0].prompt;
  const sources: [string, () => Tokenizer][] = [
    ['tokenizers/qwen3', qwen3],
    ['model.bin.tokenizer', ajc1],
  ];
  it.each(sources)('%s: the chat prompt encodes to its 28 ids and decodes back', (_n, load) => {
    const tok = load();
    expect(prompt.ids).toHaveLength(28);
    expect(tok.encode(prompt.text)).toEqual(prompt.ids);
    expect(tok.decode(prompt.ids)).toBe(prompt.text);
    expect(tok.decode(prompt.ids, { skipSpecialTokens: true })).toBe(prompt.text.replace(/<\|im_(start|end)\|>/g, ''));
  });
  it.each(sources)('%s: the 14 tokenizer_cases give the HF ids (not runq encode ids)', (_n, load) => {
    const tok = load();
    expect(expected.tokenizer_cases).toHaveLength(14);
    for (const c of expected.tokenizer_cases) {
      expect({ text: c.text, ids: tok.encode(c.text) }).toEqual({ text: c.text, ids: c.ids });
      expect(tok.decode(c.ids)).toBe(c.text);
    }
    // the cases where runq's score-based encode differs are really different ids
    expect(expected.tokenizer_cases.filter((c: any) => !c.runq_encode_equals_hf).length).toBeGreaterThan(0);
  });
  it('special ids and sizes', () => {
    const a = qwen3();
    const b = ajc1();
    expect(a.vocabSize).toBe(151669);
    expect(b.vocabSize).toBe(151669);
    expect(a.specialIds).toMatchObject({ eos: 151645, pad: 151643 });
    expect(b.specialIds).toEqual({ bos: 151643, eos: 151645 });
    for (const id of [0, 220, 9707, 151643, 151645, 151667]) expect(b.idToToken(id)).toBe(a.idToToken(id));
    expect(a.tokenToId('<think>')).toBe(151667);
    expect(a.isSpecial(151645)).toBe(true);
    expect(a.isSpecial(151667)).toBe(false); // <think> is an added token but not special
  });
});

/** The vocabulary section of an EMBD file (FORMATS.md §3.4), read independently of lib/formats. */
function embeddedVocab(file: string, vocabOffset: number): TokenizerData {
  const b = fs.readFileSync(file);
  const count = b.readUInt32LE(vocabOffset);
  const specialAt = b.readUInt32LE(vocabOffset + 8);
  const tokens: string[] = [];
  let at = vocabOffset + 12;
  for (let i = 0; i < count; i++) {
    const len = b.readUInt16LE(at);
    tokens.push(b.toString('utf8', at + 2, at + 2 + len));
    at += 2 + len;
  }
  const [pad, unk, cls, sep, mask] = [0, 1, 2, 3, 4].map((i) => b.readUInt32LE(specialAt + 4 * i));
  return { kind: 'wordpiece', tokens, specialIds: { pad, unk, cls, sep, mask }, doLowerCase: true };
}

describe('embd-minilm-tiny sentences', () => {
  const expected = readJson('embd-minilm-tiny', 'expected.json');
  const sources: [string, () => Tokenizer][] = [
    ['the vocabulary embedded in model.weights', () =>
      tokenizerFromData(embeddedVocab(fixture('embd-minilm-tiny', 'model.weights'), expected.file_layout.vocab_offset))],
    ['tokenizers/minilm/vocab.txt', () => loadTokenizerSync(fixture('tokenizers', 'minilm', 'vocab.txt'))],
    ['tokenizers/minilm/tokenizer.json', () => loadTokenizerSync(fixture('tokenizers', 'minilm', 'tokenizer.json'))],
  ];
  it.each(sources)('%s: ids of all 12 sentences ([CLS] ... [SEP], max 256)', (_n, load) => {
    const tok = load();
    expect(expected.sentences).toHaveLength(12);
    for (const s of expected.sentences) expect({ text: s.text, ids: tok.encode(s.text, { maxLength: 256 }) }).toEqual({ text: s.text, ids: s.ids });
  });
  it('truncation keeps [CLS] and [SEP] and cuts the pieces', () => {
    const tok = loadTokenizerSync(fixture('tokenizers', 'minilm', 'vocab.txt'));
    const ids = tok.encode('a b c d e f', { maxLength: 5 });
    expect(ids).toEqual([101, 1037, 1038, 1039, 102]);
    // tokenizer.json sets truncation 128, applied by default
    const json = loadTokenizerSync(fixture('tokenizers', 'minilm', 'tokenizer.json'));
    expect(json.truncation).toBe(128);
    expect(json.encode('word '.repeat(300))).toHaveLength(128);
    expect(json.encode('word '.repeat(300), { maxLength: Infinity })).toHaveLength(302);
  });
  it('decodes like HF WordPiece (## joined; cleanup is per token, so " ." joins but " \' s" stays)', () => {
    const tok = loadTokenizerSync(fixture('tokenizers', 'minilm', 'vocab.txt'));
    const s = expected.sentences[9]; // "unaffable UNBELIEVABLE tokenization's wordpiece"
    // strings as Hugging Face's tokenizers (Rust) decodes these ids
    expect(tok.decode(s.ids, { skipSpecialTokens: true })).toBe("unaffable unbelievable tokenization ' s wordpiece");
    expect(tok.decode(s.ids)).toBe("[CLS] unaffable unbelievable tokenization ' s wordpiece [SEP]");
    expect(tok.decode([2123, 1005, 1056, 2644, 999, 1029, 1010, 1012])).toBe("don ' t stop!?,.");
  });
});

describe('llama-stories260k', () => {
  const expected = readJson('llama-stories260k', 'expected.json');
  const golden = fs.readFileSync(fixture('llama-stories260k', 'expected_greedy_200steps.txt'), 'utf8');
  it('the 200 greedy ids decode to llama2.c golden text (leading space after BOS dropped)', () => {
    const tok = loadTokenizerSync(fixture('llama-stories260k', 'tok512.bin'));
    expect(expected.greedy.text).toBe(golden);
    expect(tok.decode([1, ...expected.greedy.tokens], { skipSpecialTokens: true })).toBe(golden);
    expect(tok.decode(expected.greedy.tokens)).toBe(golden);
    const stream = tok.createStreamDecoder({ skipSpecialTokens: true });
    let text = '';
    for (const id of [1, ...expected.greedy.tokens]) text += stream.push(id);
    expect(text + stream.flush()).toBe(golden);
  });
  it('encodes its own text back to ids that decode to the same text', () => {
    const tok = loadTokenizerSync(fixture('llama-stories260k', 'tok512.bin'));
    const ids = tok.encode(golden);
    expect(ids[0]).toBe(1);
    expect(tok.decode(ids, { skipSpecialTokens: true })).toBe(golden);
    expect(tok.vocabSize).toBe(512);
  });
});
