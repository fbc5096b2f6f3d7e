/**
 * Hostile Unigram input is a typed error, never a crash, a hang or an out-of-range read:
 * tokenizer.json Unigram models (scores that are not numbers, an empty vocabulary, unk_id out of
 * range, piece counts too large, checked before anything is built per piece), malformed
 * `precompiled_charsmap` blobs (every size and offset checked against the blob, and random damage
 * to a valid one), and damaged SentencePiece `.model` protobufs.
 */
import { tokenizerFromJson } from '../../lib/tokenizers';
import { PrecompiledCharsmap } from '../../lib/tokenizers/precompiled-charsmap';
import { readSentencePieceModel } from '../../lib/tokenizers/sentencepiece-model';
import { MAX_TOKEN_ID } from '../../lib/tokenizers/validate-json';
import { mulberry32 } from '../helpers/rng';
import { makeCorpus } from './corpus';
import { buildCharsmap, charsmapRules, unigramTokenizerJson } from './unigram-generator';

const vocab = [['<unk>', 0], ['a', -1], ['b', -2], ['▁', -3]];

function errorOf(fn: () => unknown): any {
  try {
    fn();
  } catch (error) {
    return error;
  }
  return undefined;
}

const badHeader = (fn: () => unknown) => expect(errorOf(fn)).toEqual(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER', path: 'x' }));

describe('tokenizer.json Unigram models', () => {
  const model = (m: object) => () => tokenizerFromJson({ pre_tokenizer: { type: 'Metaspace', replacement: '▁' }, model: { type: 'Unigram', unk_id: 0, vocab, ...m } }, 'x');

  it('builds from a minimal valid model', () => {
    expect(model({})().encode('ab a')).toEqual([3, 1, 2, 3, 1]);
  });
  it.each([
    ['a score that is a string', { vocab: [['<unk>', 0], ['a', '-1']] }],
    ['a score that is null', { vocab: [['<unk>', 0], ['a', null]] }],
    ['a score that is infinite', { vocab: [['<unk>', 0], ['a', -Infinity]] }],
    ['a piece that is a number', { vocab: [['<unk>', 0], [7, -1]] }],
    ['a piece with a lone surrogate', { vocab: [['<unk>', 0], ['\ud800', -1]] }],
    ['an entry that is no pair', { vocab: [['<unk>', 0], ['a', -1, 3]] }],
    ['a vocabulary that is an object', { vocab: { a: 0 } }],
    ['an empty vocabulary', { vocab: [] }],
    ['an unk_id past the vocabulary', { unk_id: 4 }],
    ['a negative unk_id', { unk_id: -1 }],
    ['a fractional unk_id', { unk_id: 0.5 }],
    ['a byte_fallback that is no boolean', { byte_fallback: 'yes' }],
  ])('%s is a BAD_HEADER error naming the file', (_what, m) => badHeader(model(m)));

  it('a piece count past the limit is refused before any piece is read', () => {
    const huge: unknown[] = [];
    huge.length = MAX_TOKEN_ID + 1; // sparse: nothing is allocated per entry
    badHeader(model({ vocab: huge }));
  });
});

describe('precompiled_charsmap', () => {
  const valid = buildCharsmap(charsmapRules());
  const withCharsmap = (blob: Buffer | string) => () =>
    tokenizerFromJson({ ...unigramTokenizerJson(), normalizer: { type: 'Precompiled', precompiled_charsmap: Buffer.isBuffer(blob) ? blob.toString('base64') : blob } }, 'x');
  const u32 = (blob: Buffer, at: number, v: number) => {
    const b = Buffer.from(blob);
    b.writeUInt32LE(v >>> 0, at);
    return b;
  };
  const trieUnits = valid.readUInt32LE(0) / 4;

  it('a valid blob normalizes as its rules say', () => {
    const map = PrecompiledCharsmap.parse(valid, 'x');
    expect(map.normalize('ＡＢ\tc\u200bd ﬁ e\u0301')).toBe('AB cd fi é');
    // HF's rule: a grapheme under 6 bytes takes the rule of its shortest prefix that has one.
    expect(map.normalize('ｆ\u0301')).toBe('f');
  });
  it.each([
    ['no base64', '!!!!'],
    ['null', null as unknown as string],
    ['an empty blob', Buffer.alloc(0)],
    ['a blob shorter than its size field', Buffer.of(1, 0)],
    ['a trie size past the blob', u32(valid, 0, valid.length)],
    ['a trie size that is no multiple of 4', u32(valid, 0, valid.readUInt32LE(0) - 2)],
    ['a trie size of 0', u32(valid, 0, 0)],
    ['normalized strings that are not UTF-8', Buffer.concat([valid, Buffer.of(0xff, 0xfe)])],
    ['a root whose children lie past the array', u32(valid, 4, (trieUnits + 5) << 10)],
    ['a rule past the normalized strings', (() => {
      // the first value unit (bit 31 set) pointed past the end
      for (let i = 0; i < trieUnits; i++) if (valid.readUInt32LE(4 + 4 * i) >>> 31) return u32(valid, 4 + 4 * i, 0x80000000 | 0x7fffff);
      throw new Error('no value unit');
    })()],
  ])('%s is a BAD_HEADER error', (_what, blob) => badHeader(withCharsmap(blob)));

  it('random damage to a valid blob is a typed error or a charsmap that normalizes without reading out of range', () => {
    const r = mulberry32(3);
    const texts = makeCorpus(60, 8);
    let refused = 0;
    for (let k = 0; k < 300; k++) {
      const b = Buffer.from(valid);
      for (let f = 0; f < 1 + Math.floor(r() * 4); f++) b[4 + Math.floor(r() * (b.length - 4))] ^= 1 << Math.floor(r() * 8);
      let map: PrecompiledCharsmap;
      try {
        map = PrecompiledCharsmap.parse(b, 'x');
      } catch (e) {
        expect(e).toEqual(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER' }));
        refused++;
        continue;
      }
      for (const t of texts) expect(typeof map.normalize(t)).toBe('string');
    }
    expect(refused).toBeGreaterThan(0);
  });
});

describe('SentencePiece .model protobufs', () => {
  /** A minimal ModelProto: pieces <unk> (type 2) and "a", a trainer spec saying unigram. */
  const piece = (text: string, score: number, type: number) => {
    const s = Buffer.from(text, 'utf8');
    const f = Buffer.alloc(4);
    f.writeFloatLE(score);
    const body = Buffer.concat([Buffer.of(0x0a, s.length), s, Buffer.of(0x15), f, Buffer.of(0x18, type)]);
    return Buffer.concat([Buffer.of(0x0a, body.length), body]);
  };
  const valid = Buffer.concat([piece('<unk>', 0, 2), piece('a', -1, 1), Buffer.of(0x12, 2, 0x18, 1)]);
  const bad = (bytes: Uint8Array) => expect(errorOf(() => readSentencePieceModel(bytes, 'x'))).toEqual(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER', path: 'x' }));

  it('reads a minimal model', () => {
    const m = readSentencePieceModel(valid, 'x');
    expect(m.pieces).toEqual([{ piece: '<unk>', score: 0, type: 2 }, { piece: 'a', score: -1, type: 1 }]);
    expect(m.algorithm).toBe(1);
  });
  it('a truncated file, a length past its message, a group wire type and no pieces are BAD_HEADER errors', () => {
    bad(valid.subarray(0, valid.length - 3));
    bad(Buffer.concat([valid, Buffer.of(0x0a, 0x7f)]));
    bad(Buffer.concat([valid, Buffer.of(0x0b)]));
    bad(Buffer.of(0x12, 2, 0x18, 1));
    bad(Buffer.concat([valid, Buffer.of(0x08, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x01)]));
  });
  it('random damage is a typed error or a model that reads', () => {
    const r = mulberry32(5);
    for (let k = 0; k < 500; k++) {
      const b = Buffer.from(valid);
      b[Math.floor(r() * b.length)] = Math.floor(r() * 256);
      const e = errorOf(() => readSentencePieceModel(b, 'x'));
      if (e !== undefined) expect(e).toEqual(expect.objectContaining({ name: 'WeightFormatError' }));
    }
  });
});
