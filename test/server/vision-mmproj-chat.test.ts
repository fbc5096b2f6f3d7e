/**
 * `image_url` parts through the openai client to a model served with its mmproj (the tiny Gemma 3
 * pair of scripts/interop/gemma3-vision-gguf.py): a PNG data URL of the test image is answered as
 * the library's chat() answers the raw pixels (which test/engines/vision-llama-cpp.test.ts holds
 * equal to llama-mtmd-cli's reply), streamed and whole, with usage.prompt_tokens 46, the positions
 * llama.cpp's mtmd fills for the same turn; images past the per-request bound and a model without
 * an mmproj are one-line 400s naming the part.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import sharp from 'sharp';
import type OpenAI from 'openai';
import { loadModel } from '../../lib/models/model';
import type { VisionModel } from '../../lib/models/vision-model';
import { MAX_IMAGES } from '../../lib/server/image-parts';
import { testWorkspace } from '../helpers/workspace';
import { gemma3VisionPair, visionPairUsable } from '../engines/vision-models';
import { rawRequest, startServer, type Running } from './server-helpers';

const ws = testWorkspace('vision-mmproj-chat-');
const maybe = visionPairUsable ? describe : describe.skip;
const PROMPT = 'describe this';

maybe('image_url parts for a model with an mmproj', () => {
  let model: VisionModel;
  let running: Running;
  let client: OpenAI;
  let dataUrl: string;
  let pixels: { data: Uint8Array; width: number; height: number; channels: 3 };

  beforeAll(async () => {
    const dir = ws.fresh('pair');
    const pair = gemma3VisionPair(dir);
    pixels = { data: new Uint8Array(fs.readFileSync(path.join(dir, 'image.rgb'))), width: 64, height: 64, channels: 3 };
    dataUrl = `data:image/png;base64,${(await sharp(Buffer.from(pixels.data), { raw: { width: 64, height: 64, channels: 3 } }).png().toBuffer()).toString('base64')}`;
    model = (await loadModel(pair.lm, { mmproj: pair.mmproj, threads: 2, contextLength: 256 })) as VisionModel;
    running = await startServer({ model, modelId: 'gemma' });
    client = running.client();
  });
  afterAll(async () => {
    await running?.stop();
    model?.dispose();
  });

  test("a PNG data URL: the library's reply about the raw pixels, whole and streamed", async () => {
    const reply = model.chat([{ role: 'user', content: [{ type: 'image', image: pixels }, { type: 'text', text: PROMPT }] }], { maxTokens: 8, temperature: 0 });
    const expected = await reply.text();
    expect(reply.tokens.length).toBe(8);
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl } }, { type: 'text', text: PROMPT }] }];
    const completion = await client.chat.completions.create({ model: 'gemma', messages, max_tokens: 8, temperature: 0 });
    expect(completion.choices[0].message.content).toBe(expected);
    expect(completion.usage).toMatchObject({ prompt_tokens: 46, completion_tokens: 8 });
    const stream = await client.chat.completions.create({ model: 'gemma', messages, max_tokens: 8, temperature: 0, stream: true });
    let text = '';
    for await (const chunk of stream) text += chunk.choices[0]?.delta.content ?? '';
    expect(text).toBe(expected);
  });

  test('two requests at once (their decode steps batched together): each the reply it gets alone', async () => {
    const messages: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: [{ type: 'image_url', image_url: { url: dataUrl } }, { type: 'text', text: PROMPT }] }];
    const other: OpenAI.ChatCompletionMessageParam[] = [{ role: 'user', content: [{ type: 'text', text: 'and this ' }, { type: 'image_url', image_url: { url: dataUrl } }] }];
    const alone: (string | null)[] = [];
    for (const m of [messages, other]) alone.push((await client.chat.completions.create({ model: 'gemma', messages: m, max_tokens: 8, temperature: 0 })).choices[0].message.content);
    const together = await Promise.all([messages, other, messages].map((m) => client.chat.completions.create({ model: 'gemma', messages: m, max_tokens: 8, temperature: 0 })));
    expect(together.map((c) => c.choices[0].message.content)).toEqual([alone[0], alone[1], alone[0]]);
  });

  test('more images than the bound: a 400 naming the first one past it', async () => {
    const parts = Array.from({ length: MAX_IMAGES + 1 }, () => ({ type: 'image_url', image_url: { url: dataUrl } }));
    const reply = await rawRequest(running.origin, '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gemma', messages: [{ role: 'user', content: [...parts, { type: 'text', text: 'q' }] }], max_tokens: 1 }),
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error).toMatchObject({ type: 'invalid_request_error', param: `messages[0].content[${MAX_IMAGES}].image_url` });
  });

  test('an image that does not decode: a 400 on messages', async () => {
    const reply = await rawRequest(running.origin, '/v1/chat/completions', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ model: 'gemma', messages: [{ role: 'user', content: [{ type: 'image_url', image_url: { url: 'data:image/png;base64,AAAA' } }, { type: 'text', text: 'q' }] }], max_tokens: 1 }),
    });
    expect(reply.status).toBe(400);
    expect(reply.body.error.message).toMatch(/decode/);
    expect(reply.body.error.message).not.toMatch(/\n/);
  });
});
