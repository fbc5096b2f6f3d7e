/** Stream decoding across byte tokens, and HF's added-token flags, checked against HF tokenizers. */
import { fixture } from '../helpers/fixtures';
import { tokenizerFromJson } from '../../lib/tokenizers';
import { loadTokenizerSync } from '../../lib/tokenizer-loading';
import { hfFromJson } from './hf-reference';

describe('stream decoder', () => {
  const qwen = loadTokenizerSync(fixture('tokenizers', 'qwen3'));

  it('holds back a character split across byte-level tokens until it is complete', () => {
    // " 🦙" is 20 F0 9F A6 99: Qwen3 spells it 11162 (20 F0 9F) + 99 (A6) + 247 (99)
    const ids = qwen.encode(' 🦙');
    expect(ids).toEqual([11162, 99, 247]);
    const s = qwen.createStreamDecoder();
    expect(s.push(ids[0])).toBe(' ');
    expect(s.push(ids[1])).toBe('');
    expect(s.push(ids[2])).toBe('🦙');
    expect(s.flush()).toBe('');
  });

  it('pieces concatenate to decode() for every prefix of a mixed text', () => {
    const text = 'naïve café 東京 👩‍💻 <|im_end|> 🦙.cpp\n';
    const ids = qwen.encode(text);
    const s = qwen.createStreamDecoder();
    let out = '';
    for (const id of ids) {
      const piece = s.push(id);
      expect(piece).not.toContain('\ufffd');
      out += piece;
    }
    expect(out + s.flush()).toBe(text);
    expect(qwen.decode(ids)).toBe(text);
  });

  it('an incomplete character at the end becomes U+FFFD on flush, like decode()', () => {
    const s = qwen.createStreamDecoder();
    expect(s.push(11162)).toBe(' ');
    expect(s.push(99)).toBe('');
    expect(s.flush()).toBe('\ufffd');
    expect(qwen.decode([11162, 99])).toBe(' \ufffd');
  });

  it('SentencePiece byte-fallback tokens (<0xXX>) stream the same way', () => {
    const spm = loadTokenizerSync(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-llama-spm.gguf'));
    const ids = spm.encode('a 🦙 b', { addSpecialTokens: false });
    expect(ids.some((id) => /^<0x[0-9A-F]{2}>$/.test(spm.idToToken(id)!))).toBe(true);
    const s = spm.createStreamDecoder();
    const pieces = ids.map((id) => s.push(id));
    expect(pieces.join('') + s.flush()).toBe('a 🦙 b');
    expect(pieces.every((p) => !p.includes('\ufffd'))).toBe(true);
  });

  it('skips special tokens when asked', () => {
    const s = qwen.createStreamDecoder({ skipSpecialTokens: true });
    expect([151644, 872, 151645].map((id) => s.push(id)).join('')).toBe('user');
  });
});

describe('added tokens: single_word / lstrip / rstrip / normalized, as HF tokenizers', () => {
  // A small byte-level BPE (all 256 byte tokens, no merges) with added tokens using every flag.
  function tinyJson(): any {
    const vocab: Record<string, number> = {};
    const chars: string[] = [];
    for (let b = 0; b < 256; b++) {
      const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
      chars.push(printable ? String.fromCharCode(b) : '');
    }
    let n = 256;
    for (let b = 0; b < 256; b++) if (chars[b] === '') chars[b] = String.fromCharCode(n++);
    chars.forEach((c, i) => (vocab[c] = i));
    const bl = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: true };
    const tok = (id: number, content: string, flags: object) => ({
      id, content, single_word: false, lstrip: false, rstrip: false, normalized: false, special: false, ...flags,
    });
    return {
      version: '1.0',
      added_tokens: [
        tok(256, '<mask>', { lstrip: true, special: true }),
        tok(257, '[SEP]', { rstrip: true, special: true }),
        tok(258, 'ony', { single_word: true, normalized: true }),
        tok(259, 'name', { normalized: true }),
        tok(260, '<both>', { lstrip: true, rstrip: true }),
        tok(261, '<mask>x', { special: true }), // longest match wins
      ],
      normalizer: { type: 'Lowercase' },
      pre_tokenizer: bl,
      post_processor: null,
      decoder: bl,
      model: { type: 'BPE', dropout: null, unk_token: null, vocab, merges: [] },
    };
  }
  const texts = [
    'I saw a   <mask> here',
    'a<mask>x b <mask>xy',
    '[SEP]   next\t[SEP]\n\nend',
    'My NAME is Anthony, ony lony ony_ ony. Ony',
    'x  <both>  y <both><both>',
    '',
    '<mask>',
    'pony ony\u00e9 \u00e9ony ony',
  ];
  it('gives identical ids and decodes identically', async () => {
    const json = tinyJson();
    const ours = tokenizerFromJson(json, 'tiny');
    const hf = hfFromJson(json);
    for (const text of texts) {
      const expected = (await hf.encode(text, null, { addSpecialTokens: false })).getIds();
      expect({ text, ids: ours.encode(text) }).toEqual({ text, ids: expected });
      for (const skip of [false, true]) expect(ours.decode(expected, { skipSpecialTokens: skip })).toBe(await hf.decode(expected, skip));
    }
  });
});
