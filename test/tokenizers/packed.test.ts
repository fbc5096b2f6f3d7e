/**
 * Packed tokenizers (lib/tokenizers/packed.ts): a round trip keeps every id, of a byte-level BPE,
 * of a byte-fallback BPE (Gemma 3), of WordPiece (MiniLM) and of Unigram (a seeded XLM-R-style tokenizer.json), and a packed file is input like any other: damage, truncation and out-of-range ids or offsets are typed errors, even
 * when the checksum has been made to match; checkPackedOffThread (the element loops in C++) finds the same errors.
 */
import * as fs from 'node:fs';
import * as zlib from 'node:zlib';
import { tokenizerFromData, tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import { loadTokenizerSync } from '../../lib/tokenizer-loading';
import { checkPacked, checkPackedOffThread, packTokenizer, unpackTokenizer } from '../../lib/tokenizers/packed';
import { fixture } from '../helpers/fixtures';
import { makeCorpus } from './corpus';
import { familyJson } from './family-reference';
import { multilingualLines } from './multilingual';
import { unigramTokenizerJson } from './unigram-generator';

const GGUF = fixture('gguf-quants', 'qwen2-bias', 'qwen2-bias.Q4_1.gguf');
const source = loadTokenizerSync(GGUF);
const packed = new Uint8Array(packTokenizer(source, { test: true })!);

/** Header, array offsets and lengths, as the layout comment of packed.ts gives them. */
function layout(bytes: Uint8Array) {
  const buf = Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
  const headerLength = buf.readUInt32LE(8);
  const header = JSON.parse(buf.toString('utf8', 16, 16 + headerLength));
  const sizes: Record<string, number> = { bytes: 1, offsets: 4, ids: 4, byId: 4, index: 4, keys: 4, ranks: 4, merged: 4, scores: 8, trieFirst: 4, trieTerm: 4, edgeLabel: 2, edgeNext: 4 };
  let at = (16 + headerLength + 7) & ~7;
  const arrays: Record<string, number> = {};
  for (const name of Object.keys(sizes)) {
    arrays[name] = at;
    at = (at + header.lengths[name] * sizes[name] + 7) & ~7;
  }
  return { header, arrays, end: at };
}

/** A copy of the packed bytes after `edit`, its checksum made to match again (SharedArrayBuffer-free, 8-aligned). */
function tampered(edit: (buf: Buffer) => unknown, from: Uint8Array = packed): Uint8Array {
  let buf: Buffer = Buffer.from(new Uint8Array(from));
  const replaced = edit(buf);
  if (Buffer.isBuffer(replaced)) buf = replaced;
  const out = new Uint8Array(new ArrayBuffer(buf.length));
  out.set(buf);
  Buffer.from(out.buffer).writeUInt32LE(zlib.crc32(out.subarray(16)), 12);
  return out;
}

/** The buffer with the header JSON replaced (arrays moved to keep their alignment). */
function withHeader(change: (header: any) => void, from: Uint8Array = packed): Uint8Array {
  return tampered((buf) => {
    const { header, arrays } = layout(buf);
    change(header);
    const json = Buffer.from(JSON.stringify(header));
    const start = (16 + json.length + 7) & ~7;
    const out = Buffer.alloc(start + buf.length - arrays.bytes);
    buf.copy(out, 0, 0, 16);
    out.writeUInt32LE(json.length, 8);
    json.copy(out, 16);
    buf.copy(out, start, arrays.bytes);
    return out;
  }, from);
}

test('the layout fills the buffer exactly, and unpacking gives the same tokenizer', () => {
  expect(layout(packed).end).toBe(packed.length);
  expect(() => checkPacked(packed, 'packed')).not.toThrow();
  const back = unpackTokenizer(packed);
  expect(back.vocabSize).toBe(source.vocabSize);
  for (const text of makeCorpus(80, 3)) {
    expect(back.encode(text)).toEqual(source.encode(text));
    expect(back.decode(source.encode(text))).toBe(source.decode(source.encode(text)));
  }
  for (let id = 0; id < source.vocabSize; id++) {
    expect(back.idToToken(id)).toBe(source.idToToken(id));
    expect(back.tokenToId(source.idToToken(id)!)).toBe(source.tokenToId(source.idToToken(id)!));
  }
});

test('a flipped bit is a checksum mismatch; a foreign or cut file is named as such', () => {
  const flipped = new Uint8Array(packed);
  flipped[flipped.length - 3] ^= 1;
  expect(() => checkPacked(flipped, 'f')).toThrow(expect.objectContaining({ name: 'WeightFormatError', code: 'CHECKSUM_MISMATCH', path: 'f', offset: 12 }));
  const foreign = new Uint8Array(packed);
  foreign[0] = 0x58;
  expect(() => checkPacked(foreign, 'f')).toThrow(expect.objectContaining({ code: 'BAD_MAGIC' }));
  expect(() => checkPacked(packed.subarray(0, 10), 'f')).toThrow(expect.objectContaining({ code: 'BAD_MAGIC' }));
  const cut = tampered((buf) => buf.subarray(0, buf.length - 64));
  expect(() => checkPacked(cut, 'f')).toThrow(expect.objectContaining({ code: 'TRUNCATED' }));
  const longHeader = tampered((buf) => void buf.writeUInt32LE(buf.length, 8));
  expect(() => checkPacked(longHeader, 'f')).toThrow(expect.objectContaining({ code: 'TRUNCATED', offset: 8 }));
});

test.each([
  ['an entry id past the id table', (buf: Buffer) => buf.writeInt32LE(1 << 30, layout(buf).arrays.ids)],
  ['a negative byte offset step', (buf: Buffer) => buf.writeUInt32LE(0xffffff, layout(buf).arrays.offsets + 4)],
  ['an id naming an entry that is not its', (buf: Buffer) => buf.writeInt32LE(1, layout(buf).arrays.byId)],
  ['an index slot past the entries', (buf: Buffer) => {
    const { arrays, header } = layout(buf);
    for (let i = 0; i < header.lengths.index; i++) if (buf.readInt32LE(arrays.index + 4 * i) !== -1) return buf.writeInt32LE(1 << 29, arrays.index + 4 * i);
  }],
  ['a merge of an id outside the vocabulary', (buf: Buffer) => {
    const { arrays, header } = layout(buf);
    for (let i = 0; i < header.lengths.ranks; i++) if (buf.readInt32LE(arrays.keys + 8 * i) !== -1) return buf.writeInt32LE(1 << 29, arrays.keys + 8 * i + 4);
  }],
  ['a vocabulary index with no empty slot', (buf: Buffer) => {
    const { arrays, header } = layout(buf);
    for (let i = 0; i < header.lengths.index; i++) if (buf.readInt32LE(arrays.index + 4 * i) === -1) buf.writeInt32LE(0, arrays.index + 4 * i);
  }],
  ['a merge table with no empty slot', (buf: Buffer) => {
    const { arrays, header } = layout(buf);
    for (let i = 0; i < header.lengths.ranks; i++) if (buf.readInt32LE(arrays.keys + 8 * i) === -1) buf.writeInt32LE(3, arrays.keys + 8 * i);
  }],
])('%s is a typed error, checksum notwithstanding, on this thread and with the loops in C++ alike', async (_what, edit) => {
  const bad = tampered(edit);
  const thrown = errorOf(() => checkPacked(bad, 'f'));
  expect(thrown).toEqual(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER', path: 'f' }));
  await expect(checkPackedOffThread(bad, 'f', zlib.crc32(bad.subarray(16)))).rejects.toEqual(expect.objectContaining({ name: thrown.name, code: thrown.code, message: thrown.message }));
});

/** What `fn` throws (the test fails when it returns). */
function errorOf(fn: () => unknown): any {
  try {
    fn();
  } catch (error) {
    return error;
  }
  throw new Error('expected a throw');
}

test('the checks with their loops in C++ pass a valid buffer and take the checksum it was read with', async () => {
  await expect(checkPackedOffThread(packed, 'f', zlib.crc32(packed.subarray(16)))).resolves.toBeUndefined();
  await expect(checkPackedOffThread(packed, 'f', 0)).rejects.toEqual(expect.objectContaining({ code: 'CHECKSUM_MISMATCH' }));
});

test.each([
  ['an unknown kind', (h: any) => (h.kind = 'sentencepiece-bpe')],
  ['the options of another kind (WordPiece)', (h: any) => (h.kind = 'wordpiece')],
  ['a fractional added-token id', (h: any) => (h.addedTokens[0][0] = 1.5)],
  ['added-token flags past the five there are', (h: any) => (h.addedTokens[0][2] = 32)],
  ['a negative wrapping id', (h: any) => (h.wrapping.prefix = [-1])],
  ['a string special id', (h: any) => (h.specialIds.bos = 'x')],
  ['text steps of no known shape', (h: any) => (h.text = { normalizer: 'NFC', preTokenizer: 'qwen2' })],
  ['a merge count that disagrees with the table', (h: any) => (h.mergeCount += 1)],
  ['an array longer than the file', (h: any) => (h.lengths.merged = 2 ** 30)],
])('a header with %s is a typed error', async (_what, change) => {
  const bad = withHeader(change);
  const thrown = errorOf(() => checkPacked(bad, 'f'));
  expect(thrown).toEqual(expect.objectContaining({ name: 'WeightFormatError', path: 'f' }));
  await expect(checkPackedOffThread(bad, 'f', zlib.crc32(bad.subarray(16)))).rejects.toEqual(expect.objectContaining({ name: thrown.name, code: thrown.code, message: thrown.message }));
});

test('the header rewrite helper keeps a valid file valid (the cases above test what they say)', () => {
  expect(() => checkPacked(withHeader(() => undefined), 'f')).not.toThrow();
  expect(() => checkPacked(tampered(() => undefined), 'f')).not.toThrow();
});

describe('a byte-fallback BPE (Gemma 3: 262k tokens, 6k added tokens, a decoder of its own)', () => {
  const gemma = tokenizerFromJson(familyJson('gemma3', 'tokenizer.json'), 'gemma3', familyJson('gemma3', 'tokenizer_config.json'));
  const bytes = new Uint8Array(packTokenizer(gemma, { test: true })!);

  test('packs, passes the checks, and unpacks to a tokenizer with the same ids, tokens and decoding', async () => {
    expect(layout(bytes).end).toBe(bytes.length);
    expect(layout(bytes).header.kind).toBe('byte-fallback-bpe');
    expect(() => checkPacked(bytes, 'packed')).not.toThrow();
    await expect(checkPackedOffThread(bytes, 'packed', zlib.crc32(bytes.subarray(16)))).resolves.toBeUndefined();
    const back = unpackTokenizer(bytes);
    expect(back.kind).toBe('byte-fallback-bpe');
    expect([back.vocabSize, back.specialIds]).toEqual([gemma.vocabSize, gemma.specialIds]);
    for (const text of [...makeCorpus(80, 5), '<start_of_turn>user\n東京 🙂 naïve<end_of_turn>', '  two  spaces\t']) {
      const ids = gemma.encode(text);
      expect(back.encode(text)).toEqual(ids);
      expect(back.decode(ids)).toBe(gemma.decode(ids));
      expect(back.decode(ids, { skipSpecialTokens: true })).toBe(gemma.decode(ids, { skipSpecialTokens: true }));
    }
    for (let id = 0; id < gemma.vocabSize; id += 101) {
      const token = gemma.idToToken(id);
      expect(back.idToToken(id)).toBe(token);
      expect(back.isSpecial(id)).toBe(gemma.isSpecial(id));
      if (token !== undefined) expect(back.tokenToId(token)).toBe(gemma.tokenToId(token));
    }
  });

  test.each([
    ['byte_fallback that is no boolean', (h: any) => (h.byteFallback = 'yes')],
    ['an unknown-token id of -1', (h: any) => (h.unkId = -1)],
    ['a decoder step weightmap does not have', (h: any) => (h.decoder = { type: 'Metaspace' })],
    ['the options of the other kind', (h: any) => (h.kind = 'byte-level-bpe')],
  ])('a header with %s is a typed error', async (_what, change) => {
    expect(() => checkPacked(withHeader(() => undefined, bytes), 'f')).not.toThrow();
    const bad = withHeader(change, bytes);
    const thrown = errorOf(() => checkPacked(bad, 'f'));
    expect(thrown).toEqual(expect.objectContaining({ name: 'WeightFormatError', path: 'f' }));
    await expect(checkPackedOffThread(bad, 'f', zlib.crc32(bad.subarray(16)))).rejects.toEqual(expect.objectContaining({ name: thrown.name, code: thrown.code, message: thrown.message }));
  });
});

/** Every id's token, the ids of every token, and encode/decode of the corpus, as `expected` gives them. */
function expectSameWordPiece(back: Tokenizer, expected: Tokenizer): void {
  expect([back.kind, back.vocabSize, back.specialIds]).toEqual([expected.kind, expected.vocabSize, expected.specialIds]);
  for (const text of [...makeCorpus(80, 9), '[CLS] Hello [MASK] world [SEP]', 'naïve CAFÉ 東京 🙂', 'unaffable ' + 'x'.repeat(120)]) {
    const ids = expected.encode(text);
    expect(back.encode(text)).toEqual(ids);
    expect(back.encode(text, { addSpecialTokens: false })).toEqual(expected.encode(text, { addSpecialTokens: false }));
    expect(back.decode(ids)).toBe(expected.decode(ids));
    expect(back.decode(ids, { skipSpecialTokens: true })).toBe(expected.decode(ids, { skipSpecialTokens: true }));
  }
  for (let id = 0; id <= expected.vocabSize; id++) {
    const token = expected.idToToken(id);
    expect(back.idToToken(id)).toBe(token);
    expect(back.isSpecial(id)).toBe(expected.isSpecial(id));
    if (token !== undefined) expect(back.tokenToId(token)).toBe(expected.tokenToId(token));
  }
}

function packed8(tokenizer: Tokenizer): Uint8Array {
  return new Uint8Array(packTokenizer(tokenizer, { test: true })!);
}

describe('WordPiece (MiniLM)', () => {
  const json = loadTokenizerSync(fixture('tokenizers', 'minilm', 'tokenizer.json'));
  const bytes = packed8(json);

  test.each([
    ['tokenizer.json', json],
    ['vocab.txt', tokenizerFromData(vocabTxtData(fixture('tokenizers', 'minilm', 'vocab.txt')), 'vocab.txt')],
  ])('from %s: packs, passes the checks, and unpacks to the same ids, tokens and decoding', async (_name, source) => {
    const packedBytes = packed8(source);
    expect(layout(packedBytes).end).toBe(packedBytes.length);
    expect(layout(packedBytes).header.kind).toBe('wordpiece');
    expect(() => checkPacked(packedBytes, 'packed')).not.toThrow();
    await expect(checkPackedOffThread(packedBytes, 'packed', zlib.crc32(packedBytes.subarray(16)))).resolves.toBeUndefined();
    expectSameWordPiece(unpackTokenizer(packedBytes), source);
  });

  test('a vocab.txt line that repeats: the token maps to its last id, and the first id keeps its string', () => {
    const tokens = ['[PAD]', '[UNK]', '[CLS]', '[SEP]', '[MASK]', 'hello', '##lo', 'hel', 'hello', 'world'];
    const source = tokenizerFromData({ kind: 'wordpiece', tokens, specialIds: { pad: 0, unk: 1, cls: 2, sep: 3, mask: 4 }, doLowerCase: true }, 'dup');
    expect([source.tokenToId('hello'), source.idToToken(5)]).toEqual([8, 'hello']);
    const repacked = packed8(source);
    expect(() => checkPacked(repacked, 'packed')).not.toThrow();
    const back = unpackTokenizer(repacked);
    expect([back.tokenToId('hello'), back.idToToken(5), back.encode('hello world hello')]).toEqual([8, 'hello', [2, 8, 9, 8, 3]]);
    expectSameWordPiece(back, source);
  });

  test.each([
    ['an unknown token that is in neither the vocabulary nor the added tokens', (h: any) => (h.unkToken = '[NOPE]')],
    ['a normalizer weightmap does not have', (h: any) => (h.normalizer = { type: 'Precompiled' })],
    ['a negative word length limit', (h: any) => (h.maxChars = -1)],
    ['a cleanup flag that is no boolean', (h: any) => (h.cleanup = 'yes')],
    ['the options of a BPE kind', (h: any) => (h.kind = 'byte-level-bpe')],
  ])('a header with %s is a typed error', async (_what, change) => {
    expect(() => checkPacked(withHeader(() => undefined, bytes), 'f')).not.toThrow();
    const bad = withHeader(change, bytes);
    const thrown = errorOf(() => checkPacked(bad, 'f'));
    expect(thrown).toEqual(expect.objectContaining({ name: 'WeightFormatError', path: 'f' }));
    await expect(checkPackedOffThread(bad, 'f', zlib.crc32(bad.subarray(16)))).rejects.toEqual(expect.objectContaining({ name: thrown.name, code: thrown.code, message: thrown.message }));
  });
});

/** A vocab.txt as BertTokenizer reads it (one token a line, its index the id): written out here, not by the code under test. */
function vocabTxtData(path: string) {
  const tokens = fs.readFileSync(path, 'utf8').split('\n');
  if (tokens[tokens.length - 1] === '') tokens.pop();
  const at = (t: string) => tokens.indexOf(t);
  return { kind: 'wordpiece' as const, tokens, specialIds: { pad: at('[PAD]'), unk: at('[UNK]'), cls: at('[CLS]'), sep: at('[SEP]'), mask: at('[MASK]') }, doLowerCase: true };
}

describe('Unigram (seeded XLM-R-style tokenizer.json: Precompiled charsmap, Metaspace, byte fallback)', () => {
  const source = tokenizerFromJson(unigramTokenizerJson({ byteFallback: true, decoder: 'sequence' }), 'unigram');
  const bytes = packed8(source);

  test('packs, passes the checks, and unpacks to the same ids, tokens and decoding', async () => {
    expect(layout(bytes).end).toBe(bytes.length);
    expect(layout(bytes).header.kind).toBe('unigram');
    expect(() => checkPacked(bytes, 'packed')).not.toThrow();
    await expect(checkPackedOffThread(bytes, 'packed', zlib.crc32(bytes.subarray(16)))).resolves.toBeUndefined();
    const back = unpackTokenizer(bytes);
    expect([back.kind, back.vocabSize, back.specialIds]).toEqual([source.kind, source.vocabSize, source.specialIds]);
    for (const text of [...makeCorpus(80, 5), ...multilingualLines(80, 3)]) {
      const ids = source.encode(text);
      expect(back.encode(text)).toEqual(ids);
      expect(back.decode(ids)).toBe(source.decode(ids));
      expect(back.decode(ids, { skipSpecialTokens: true })).toBe(source.decode(ids, { skipSpecialTokens: true }));
    }
    for (let id = 0; id <= source.vocabSize; id++) {
      const token = source.idToToken(id);
      expect(back.idToToken(id)).toBe(token);
      if (token !== undefined) expect(back.tokenToId(token)).toBe(source.tokenToId(token));
    }
  });

  test.each([
    ['a score that is not finite', (buf: Buffer) => buf.writeDoubleLE(NaN, layout(buf).arrays.scores + 8 * 7)],
    ['a trie edge to a node past the trie', (buf: Buffer) => buf.writeInt32LE(1 << 29, layout(buf).arrays.edgeNext + 4 * 3)],
    ['a trie edge back to the root', (buf: Buffer) => buf.writeInt32LE(0, layout(buf).arrays.edgeNext)],
    ['a trie node naming a piece past the vocabulary', (buf: Buffer) => buf.writeInt32LE(1 << 28, layout(buf).arrays.trieTerm + 4 * 5)],
    ['trie edge ranges that run backwards', (buf: Buffer) => buf.writeInt32LE(1 << 20, layout(buf).arrays.trieFirst + 4 * 2)],
  ])('%s is a typed error, checksum notwithstanding', async (_what, edit) => {
    const bad = tampered(edit, bytes);
    const thrown = errorOf(() => checkPacked(bad, 'f'));
    expect(thrown).toEqual(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER', path: 'f' }));
    await expect(checkPackedOffThread(bad, 'f', zlib.crc32(bad.subarray(16)))).rejects.toEqual(expect.objectContaining({ name: thrown.name, code: thrown.code, message: thrown.message }));
  });

  test.each([
    ['an unknown id past the vocabulary', (h: any) => (h.unkId = 1 << 20)],
    ['byte_fallback that is no boolean', (h: any) => (h.byteFallback = 1)],
    ['a charsmap cut short', (h: any) => (h.normalizer.normalizers[0].precompiled_charsmap = h.normalizer.normalizers[0].precompiled_charsmap.slice(0, 400))],
    ['a pre-tokenizer Unigram does not take', (h: any) => (h.preTokenizer = { type: 'ByteLevel' })],
    ['Unigram arrays in a BPE buffer', (h: any) => (h.kind = 'byte-fallback-bpe')],
  ])('a header with %s is a typed error', async (_what, change) => {
    expect(() => checkPacked(withHeader(() => undefined, bytes), 'f')).not.toThrow();
    const bad = withHeader(change, bytes);
    const thrown = errorOf(() => checkPacked(bad, 'f'));
    expect(thrown).toEqual(expect.objectContaining({ name: 'WeightFormatError', path: 'f' }));
    await expect(checkPackedOffThread(bad, 'f', zlib.crc32(bad.subarray(16)))).rejects.toEqual(expect.objectContaining({ name: thrown.name, code: thrown.code, message: thrown.message }));
  });
});
