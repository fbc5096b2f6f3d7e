/**
 * Image content parts through the openai client (issue #25 item 3): a chat request with an
 * `image_url` part, served by a Moondream model (the moon-tiny fixture, with a byte-level GPT-2
 * tokenizer.json written beside a copy in a temp folder so that the question can be text), is
 * answered as the library's `model.answer(pixels, question)` answers the fixture's raw pixels: the
 * image as a PNG data URL (lossless: sharp decodes the same pixels) and as a local file under an
 * allowed folder, and as the Responses API's input_image; the prompt tokens are BOS + the patches + the question. The rest are one-line
 * 400s naming the part: a URL to fetch, a file outside the allowed folders, a second image, a
 * conversation Moondream does not read.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { pathToFileURL } from 'node:url';
import sharp from 'sharp';
import type OpenAI from 'openai';
import { loadMoondream, questionIds, type MoondreamModel } from '../../lib/models/moondream';
import { fixture, tempDir } from '../helpers/fixtures';
import { rawRequest, startServer, type Running } from './server-helpers';

const QUESTION = 'What is in it?';
const SIZE = 56;
const pixels = { data: new Uint8Array(fs.readFileSync(fixture('moon-tiny', 'image.rgb'))), width: SIZE, height: SIZE, channels: 3 as const };

/** GPT-2's byte-level BPE over the 256 bytes (ids 0-255, no merges), EOS 511: a tokenizer for the 512-token fixture. */
function byteTokenizerJson(): string {
  const bs: number[] = [];
  for (let i = 33; i <= 126; i++) bs.push(i);
  for (let i = 161; i <= 172; i++) bs.push(i);
  for (let i = 174; i <= 255; i++) bs.push(i);
  const cs = [...bs];
  let n = 0;
  for (let b = 0; b < 256; b++) if (!bs.includes(b)) (bs.push(b), cs.push(256 + n++));
  const vocab: Record<string, number> = {};
  bs.forEach((b, i) => (vocab[String.fromCodePoint(cs[i])] = b));
  const byteLevel = { add_prefix_space: false, trim_offsets: true, use_regex: true };
  return JSON.stringify({
    version: '1.0',
    added_tokens: [{ id: 511, content: '<|endoftext|>', single_word: false, lstrip: false, rstrip: false, normalized: false, special: true }],
    normalizer: null,
    pre_tokenizer: { type: 'ByteLevel', ...byteLevel },
    post_processor: null,
    decoder: { type: 'ByteLevel', ...byteLevel },
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges: [] },
  });
}

let tmp: { dir: string; cleanup: () => void };
let images: { dir: string; cleanup: () => void };
let moon: MoondreamModel;
let running: Running;
let client: OpenAI;
let dataUrl: string;
let pngFile: string;

beforeAll(async () => {
  tmp = tempDir('weightmap-vision-');
  images = tempDir('weightmap-images-');
  for (const file of ['model.moon', 'config.json']) fs.copyFileSync(fixture('moon-tiny', file), path.join(tmp.dir, file));
  fs.writeFileSync(path.join(tmp.dir, 'tokenizer.json'), byteTokenizerJson());
  moon = await loadMoondream(path.join(tmp.dir, 'model.moon'), { threads: 1 });
  const png = await sharp(Buffer.from(pixels.data), { raw: { width: SIZE, height: SIZE, channels: 3 } }).png().toBuffer();
  dataUrl = `data:image/png;base64,${png.toString('base64')}`;
  pngFile = path.join(images.dir, 'image.png');
  fs.writeFileSync(pngFile, png);
  running = await startServer({ model: moon, modelId: 'moon', imageDirs: [images.dir] });
  client = running.client();
});
afterAll(async () => {
  await running.stop();
  moon.dispose();
  tmp.cleanup();
  images.cleanup();
});

const ask = (url: string, extra: Partial<OpenAI.ChatCompletionCreateParamsNonStreaming> = {}) =>
  client.chat.completions.create({
    model: 'moon',
    messages: [{ role: 'user', content: [{ type: 'text', text: QUESTION }, { type: 'image_url', image_url: { url } }] }],
    max_tokens: 8,
    temperature: 0,
    ...extra,
  });

describe('image parts for a Moondream model', () => {
  it("a PNG data URL and an allowed local file: the library's answer about the raw pixels; usage BOS + patches + question", async () => {
    const reply = moon.answer(pixels, QUESTION, { maxTokens: 8, temperature: 0 });
    const expected = await reply.text();
    expect(reply.tokens.length).toBeGreaterThan(0);
    const patches = (SIZE / 14) ** 2;
    for (const url of [dataUrl, pathToFileURL(pngFile).href, pngFile]) {
      const completion = await ask(url);
      expect(completion.choices[0].message.content).toBe(expected);
      expect(completion.usage?.prompt_tokens).toBe(1 + patches + questionIds(moon.tokenizer, QUESTION).length);
      expect(completion.usage?.completion_tokens).toBe(reply.tokens.length);
    }
    // Streamed: the same text.
    const stream = await client.chat.completions.create({ model: 'moon', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl } }, { type: 'text', text: QUESTION }] }], max_tokens: 8, temperature: 0, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(expected);
    // The Responses API's input_image part: the same answer.
    const response = await client.responses.create({
      model: 'moon',
      input: [{ role: 'user', content: [{ type: 'input_text', text: QUESTION }, { type: 'input_image', image_url: dataUrl, detail: 'auto' }] }],
      max_output_tokens: 8,
      temperature: 0,
    });
    expect(response.output_text).toBe(expected);
  });

  const post = (messages: unknown[]) =>
    rawRequest(running.origin, '/v1/chat/completions', { method: 'POST', headers: { 'content-type': 'application/json' }, body: JSON.stringify({ model: 'moon', messages, max_tokens: 2 }) });
  const part = (url: string) => ({ type: 'image_url', image_url: { url } });

  it.each([
    ['a URL to fetch', () => [{ role: 'user', content: [{ type: 'text', text: 'q' }, part('https://example.com/a.png')] }], 'messages[0].content[1].image_url.url'],
    ['a file outside the allowed folders', () => [{ role: 'user', content: [{ type: 'text', text: 'q' }, part(fixture('moon-tiny', 'image.rgb'))] }], 'messages[0].content[1].image_url.url'],
    ['a relative path', () => [{ role: 'user', content: [{ type: 'text', text: 'q' }, part('image.png')] }], 'messages[0].content[1].image_url.url'],
    ['a second image', () => [{ role: 'user', content: [{ type: 'text', text: 'q' }, part(dataUrl), part(dataUrl)] }], 'messages[0].content[2].image_url'],
    ['the image before a later turn', () => [{ role: 'user', content: [{ type: 'text', text: 'q' }, part(dataUrl)] }, { role: 'assistant', content: 'a' }, { role: 'user', content: 'more' }], 'messages'],
    ['no question', () => [{ role: 'user', content: [part(dataUrl)] }], 'messages[0].content'],
  ])('%s: a one-line 400 naming it', async (_label, messages, param) => {
    const reply = await post(messages());
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({ type: 'invalid_request_error', param });
    expect(reply.body.error.message).not.toMatch(/\n/);
  });
});
