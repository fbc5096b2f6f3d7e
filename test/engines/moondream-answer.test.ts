/**
 * answer() and encodeImage() on moon-tiny: the image given as raw RGB, as a PNG file and as raw
 * pixels of another size (sharp), BOS + image + question assembled as the fixture's combined
 * case, greedy tokens equal to its reference. moon-tiny ships no tokenizer, so the question is
 * mapped to the fixture's prompt ids by a stand-in tokenizer that knows only that one text.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import sharp from 'sharp';
import { moonFormat } from '../../lib/formats/containers/moon';
import { MoondreamEngine } from '../../lib/engines/moondream';
import { AbortError, UnsupportedError } from '../../lib/base/errors';
import { answer, encodeImage, loadMoondream, MoondreamModel, questionIds } from '../../lib/models/moondream';
import { loadModel } from '../../lib/models/model';
import type { StreamDecoder, Tokenizer } from '../../lib/tokenizers';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readF32, readJson, tempDir } from '../helpers/fixtures';

const expected = readJson('moon-tiny', 'expected.json');
const combined = expected.combined_case;
const BOS = expected.config.bos_token_id as number;
const QUESTION = 'what is on the test card?';
const PROMPT_IDS: number[] = combined.sequence[2].ids;

/** Knows one text: the Moondream question prompt of QUESTION, encoded as the fixture's ids. */
function standInTokenizer(): Tokenizer {
  const piece = (id: number) => `<${id}>`;
  return {
    kind: 'byte-level-bpe',
    vocabSize: 512,
    specialIds: { bos: BOS, eos: BOS },
    truncation: undefined,
    encode(text: string) {
      if (text !== `\n\nQuestion: ${QUESTION}\n\nAnswer:`) throw new Error(`unexpected prompt text ${JSON.stringify(text)}`);
      return PROMPT_IDS.slice();
    },
    decode: (ids) => Array.from(ids, piece).join(''),
    idToToken: piece,
    tokenToId: () => undefined,
    isSpecial: (id) => id === BOS,
    createStreamDecoder(options): StreamDecoder {
      return { push: (id) => (options?.skipSpecialTokens && id === BOS ? '' : piece(id)), flush: () => '' };
    },
  };
}

function maxAbsDiff(a: Float32Array, b: Float32Array): number {
  expect(a.length).toBe(b.length);
  let m = 0;
  for (let i = 0; i < a.length; i++) m = Math.max(m, Math.abs(a[i] - b[i]));
  return m;
}

describe('Moondream answer() on moon-tiny', () => {
  let weights: ModelWeights;
  let engine: MoondreamEngine;
  const tokenizer = standInTokenizer();
  const rgb = new Uint8Array(fs.readFileSync(fixture('moon-tiny', 'image.rgb')));
  const raw = { data: rgb, width: 56, height: 56, channels: 3 as const };
  const tmp = tempDir('weightmap-moondream-');

  beforeAll(async () => {
    weights = await moonFormat.read(fixture('moon-tiny', 'model.moon'));
    engine = await MoondreamEngine.load(weights, { threads: 2 });
  });
  afterAll(() => {
    engine.dispose();
    closeWeights(weights);
    tmp.cleanup();
  });

  test('the question prompt is assembled as upstream: "\\n\\nQuestion: q\\n\\nAnswer:"', () => {
    expect(questionIds(tokenizer, QUESTION)).toEqual(PROMPT_IDS);
  });

  test('greedy answer tokens equal the combined case (BOS + image + prompt, causal)', async () => {
    const generation = answer(engine, tokenizer, raw, QUESTION, { maxTokens: combined.greedy.max_new_tokens });
    const pieces: string[] = [];
    for await (const piece of generation) pieces.push(piece.text);
    expect(generation.tokens).toEqual(combined.greedy.tokens);
    expect(pieces.join('')).toBe(combined.greedy.tokens.map((t: number) => `<${t}>`).join(''));
    expect(generation.stopReason).toBe('max-tokens');
  });

  test('a lossless PNG of the image gives the same embeddings and answer', async () => {
    const png = path.join(tmp.dir, 'card.png');
    await sharp(Buffer.from(rgb), { raw: { width: 56, height: 56, channels: 3 } }).png().toFile(png);
    const embeddings = await encodeImage(engine, png);
    expect(maxAbsDiff(embeddings, readF32('moon-tiny', 'image_embeddings.f32'))).toBeLessThanOrEqual(1e-4);
    const text = await answer(engine, tokenizer, fs.readFileSync(png), QUESTION, { maxTokens: 3 }).text();
    expect(text).toBe(combined.greedy.tokens.slice(0, 3).map((t: number) => `<${t}>`).join(''));
  });

  test('raw pixels of another size are resized to the encoder size (a flat image stays flat)', async () => {
    const rgba = new Uint8Array(100 * 80 * 4).map((_, i) => (i % 4 === 3 ? 255 : 200));
    const flat = { data: rgba, width: 100, height: 80, channels: 4 as const };
    const same = { data: new Uint8Array(56 * 56 * 3).fill(200), width: 56, height: 56, channels: 3 as const };
    expect(maxAbsDiff(await encodeImage(engine, flat), await encodeImage(engine, same))).toBeLessThanOrEqual(1e-6);
  });

  test('prefixAttention: true runs through answer() (its numerics: moondream-prefix.test.ts); bad values are RangeErrors', async () => {
    const causal = answer(engine, tokenizer, raw, QUESTION, { maxTokens: 4 });
    const prefixed = answer(engine, tokenizer, raw, QUESTION, { maxTokens: 4, prefixAttention: true });
    await causal.text();
    await prefixed.text();
    expect(prefixed.tokens).toHaveLength(4);
    expect(() => answer(engine, tokenizer, raw, QUESTION, { prefixAttention: -1 })).toThrow(RangeError);
  });

  test('bad images and aborts are typed errors', async () => {
    await expect(encodeImage(engine, Buffer.from('not an image'))).rejects.toThrow(UnsupportedError);
    await expect(encodeImage(engine, { data: new Uint8Array(5), width: 2, height: 2, channels: 3 })).rejects.toThrow(RangeError);
    await expect(encodeImage(engine, path.join(tmp.dir, 'missing.png'))).rejects.toThrow(expect.objectContaining({ code: 'ENOENT' }));
    const controller = new AbortController();
    controller.abort();
    await expect(answer(engine, tokenizer, raw, QUESTION, { signal: controller.signal }).text()).rejects.toThrow(AbortError);
  });

  test('loadModel gives a MoondreamModel: text generation, encodeImage and answer', async () => {
    const model = await loadModel(fixture('moon-tiny', 'model.moon'), { tokenizer, threads: 2 });
    try {
      expect(model).toBeInstanceOf(MoondreamModel);
      const moondream = model as MoondreamModel;
      const textCase = expected.cases[0];
      const text = moondream.generate(textCase.prompt.ids, { maxTokens: textCase.greedy.max_new_tokens });
      await text.text();
      expect(text.tokens).toEqual(textCase.greedy.tokens);
      const embeddings = await moondream.encodeImage(raw);
      expect(maxAbsDiff(embeddings, readF32('moon-tiny', 'image_embeddings.f32'))).toBeLessThanOrEqual(1e-4);
      const reply = moondream.answer(raw, QUESTION, { maxTokens: combined.greedy.max_new_tokens });
      await reply.text();
      expect(reply.tokens).toEqual(combined.greedy.tokens);
    } finally {
      model.dispose();
    }
    expect(() => (model as MoondreamModel).answer(raw, QUESTION)).toThrow(expect.objectContaining({ name: 'DisposedError' }));
  });

  test('without a tokenizer (the bare MOON file) the question is given as token ids; text is refused', async () => {
    const model = await loadMoondream(fixture('moon-tiny', 'model.moon'), { threads: 2 });
    try {
      const reply = model.answer(raw, PROMPT_IDS, { maxTokens: combined.greedy.max_new_tokens, temperature: 0 });
      for await (const piece of reply) expect(piece.text).toBe('');
      expect(reply.tokens).toEqual(combined.greedy.tokens);
      await expect(model.answer(raw, QUESTION).text()).rejects.toThrow(expect.objectContaining({ code: 'ERR_WEIGHTMAP_NO_TOKENIZER', message: expect.stringContaining('give token ids') }));
      expect(() => model.answer(raw, 42 as unknown as string)).toThrow(TypeError);
      await expect(model.answer(raw, [1, 512]).text()).rejects.toThrow(/question ids: 512 is not a token id/);
      await expect(model.answer(raw, []).text()).rejects.toThrow(/no token ids/);
    } finally {
      model.dispose();
    }
  });

  test('loadMoondream refuses other architectures', async () => {
    await expect(loadMoondream(fixture('tllm-tiny', 'model.tllm'))).rejects.toThrow(UnsupportedError);
  });
});
