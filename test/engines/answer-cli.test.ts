/**
 * `weightmap answer MODEL IMAGE QUESTION` on moon-tiny, with a byte-level BPE tokenizer.json of
 * the 256 byte tokens (id = byte value) plus <|endoftext|> = 511 (moon-tiny's BOS/EOS): the
 * question encodes to its UTF-8 bytes, and the CLI prints the tokens answer() generates.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import sharp from 'sharp';
import { loadMoondream, questionIds } from '../../lib/models/moondream';
import { BYTE_TO_CHAR } from '../../lib/tokenizers/byte-level';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { runCli } from '../helpers/cli';
import { fixture, tempDir } from '../helpers/fixtures';

const QUESTION = 'What is shown?';

function byteTokenizerJson(): unknown {
  const vocab: Record<string, number> = {};
  for (let b = 0; b < 256; b++) vocab[String.fromCharCode(BYTE_TO_CHAR[b])] = b;
  return {
    version: '1.0',
    added_tokens: [{ id: 511, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', add_prefix_space: false, trim_offsets: true, use_regex: true },
    post_processor: null,
    decoder: { type: 'ByteLevel', add_prefix_space: true, trim_offsets: true, use_regex: true },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, vocab, merges: [] },
  };
}

describe('weightmap answer', () => {
  const tmp = tempDir('weightmap-answer-cli-');
  const tokenizerPath = path.join(tmp.dir, 'tokenizer.json');
  const imagePath = path.join(tmp.dir, 'card.png');

  beforeAll(async () => {
    fs.writeFileSync(tokenizerPath, JSON.stringify(byteTokenizerJson()));
    const rgb = fs.readFileSync(fixture('moon-tiny', 'image.rgb'));
    await sharp(rgb, { raw: { width: 56, height: 56, channels: 3 } }).png().toFile(imagePath);
  });
  afterAll(() => tmp.cleanup());

  test('the question prompt of the byte tokenizer is the UTF-8 bytes of "\\n\\nQuestion: q\\n\\nAnswer:"', async () => {
    const tokenizer = await loadTokenizer(tokenizerPath);
    expect(questionIds(tokenizer, QUESTION)).toEqual([...Buffer.from(`\n\nQuestion: ${QUESTION}\n\nAnswer:`)]);
  });

  test('prints the ids answer() generates for the PNG (causal and with --prefix-attention image)', async () => {
    const model = await loadMoondream(fixture('moon-tiny', 'model.moon'), { tokenizer: tokenizerPath, threads: 1 });
    try {
      for (const prefix of [undefined, 'image']) {
        const generation = model.answer(imagePath, QUESTION, { maxTokens: 6, ...(prefix ? { prefixAttention: true } : {}) });
        await generation.text();
        const args = ['answer', fixture('moon-tiny', 'model.moon'), imagePath, QUESTION, '--tokenizer', tokenizerPath];
        const result = await runCli([...args, '--max-tokens', '6', '--ids', '--threads', '1', ...(prefix ? ['--prefix-attention', prefix] : [])]);
        expect(result.stderr).toBe('');
        expect(result.exitCode).toBe(0);
        expect(result.stdout).toBe(`${generation.tokens.join(' ')}\n`);
      }
    } finally {
      model.dispose();
    }
  });

  test('a model that is not Moondream, or an unreadable image, is bad input: exit code 2', async () => {
    const notMoon = await runCli(['answer', fixture('tllm-tiny', 'model.tllm'), imagePath, QUESTION]);
    expect(notMoon.exitCode).toBe(2);
    expect(notMoon.stderr).toMatch(/not a Moondream model/);
    const garbage = path.join(tmp.dir, 'garbage.png');
    fs.writeFileSync(garbage, 'not an image');
    const bad = await runCli(['answer', fixture('moon-tiny', 'model.moon'), garbage, QUESTION, '--tokenizer', tokenizerPath, '--threads', '1']);
    expect(bad.exitCode).toBe(2);
    expect(bad.stderr).toMatch(/cannot decode the image/);
    expect(bad.stdout).toBe('');
  });

  test('text prompts of a MoondreamModel start with BOS', async () => {
    const model = await loadMoondream(fixture('moon-tiny', 'model.moon'), { tokenizer: tokenizerPath, threads: 1 });
    try {
      expect(model.encode('Hi!')).toEqual([511, 72, 105, 33]);
      const fromText = model.generate('Hi!', { maxTokens: 3 });
      const fromIds = model.generate([511, 72, 105, 33], { maxTokens: 3 });
      await fromText.text();
      await fromIds.text();
      expect(fromText.tokens).toEqual(fromIds.tokens);
    } finally {
      model.dispose();
    }
  });
});
