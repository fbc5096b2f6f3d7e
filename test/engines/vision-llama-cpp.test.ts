/**
 * A Gemma 3 vision pair against llama.cpp's mtmd (llama-mtmd-cli built from the peer cache), on
 * the tiny random-weight pair of scripts/interop/gemma3-vision-gguf.py and its test image, which
 * is already at the encoder's size (a PPM for llama.cpp, raw RGB here: no resampling to compare):
 *
 *   - the image embeddings equal llama.cpp's (MTMD_DEBUG_EMBEDDINGS dumps them) within 2e-3 of
 *     their largest magnitude (measured 5e-4: llama.cpp's GELU goes through an f16 table; ours is
 *     4e-7 from a float64 reference, test/engines/vision-encoder.test.ts);
 *   - the logits after the prompt [turn text, image, text] equal those of a tiny driver over libmtmd
 *     (scripts/interop/mtmd-logits.cpp, compiled here; f32 KV cache) within 1e-3 of their largest
 *     magnitude (measured 8e-5; with the image rows causal instead of bidirectional the gap is 4e-2);
 *   - the resize path on its own: an 80×48 PNG letterboxed (bilinear, black pad) by sharp as
 *     clip.cpp does it, embeddings within 3e-2 of llama.cpp's (measured 1e-2; stretched: 1.4);
 *   - chat() with [image, text] generates llama-mtmd-cli's greedy reply byte for byte (its chat
 *     template rendered by --jinja, the image's 16 rows attending to each other as mtmd decodes
 *     Gemma 3's), every step's top-2 logprob gap above 0.05 so no tie decides it; and so does
 *     `weightmap answer LM IMAGE.png QUESTION --mmproj MMPROJ`.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import sharp from 'sharp';
import { loadModel } from '../../lib/models/model';
import { runCli } from '../helpers/cli';
import type { VisionModel } from '../../lib/models/vision-model';
import { testWorkspace } from '../helpers/workspace';
import { LLAMA_CPP } from './gptoss-models';
import { mtmdCliReply, mtmdLogitsDriver, relativeMaxError, replyBytes } from './mtmd-helpers';
import { gemma3VisionPair, visionPairUsable } from './vision-models';

const BIN = path.join(LLAMA_CPP, 'build', 'bin');
const MTMD_CLI = path.join(BIN, 'llama-mtmd-cli');
const ws = testWorkspace('vision-llama-cpp-');
const maybe = visionPairUsable && fs.existsSync(MTMD_CLI) ? describe : describe.skip;
const PROMPT = 'describe this';
const STEPS = 16;

maybe('Gemma 3 vision pair against llama.cpp mtmd', () => {
  let dir: string;
  let pair: { lm: string; mmproj: string };
  let llama: { embeddings: Float32Array; reply: Buffer };

  beforeAll(() => {
    dir = ws.fresh('pair');
    pair = gemma3VisionPair(dir);
    const dump = path.join(dir, 'llama-embeddings.bin');
    const args = ['-m', pair.lm, '--mmproj', pair.mmproj, '--image', path.join(dir, 'image.ppm'), '-p', PROMPT, '-n', String(STEPS), '--temp', '0', '-t', '2', '-c', '256', '--jinja', '-fa', 'off'];
    const reply = mtmdCliReply(MTMD_CLI, args, { MTMD_DEBUG_EMBEDDINGS: dump });
    const bytes = fs.readFileSync(dump);
    const [n, d] = [bytes.readInt32LE(0), bytes.readInt32LE(4)];
    expect([n, d]).toEqual([16, 64]);
    llama = { embeddings: new Float32Array(new Uint8Array(bytes.subarray(8)).buffer), reply };
  });

  test('logits after a prompt with the image', async () => {
    const driver = mtmdLogitsDriver(dir);
    const model = (await loadModel(pair.lm, { mmproj: pair.mmproj, threads: 2, contextLength: 256 })) as VisionModel;
    try {
      const prompt = model.renderChat([{ role: 'user', content: `<__media__>${PROMPT}` }]);
      const out = path.join(dir, 'llama-logits.bin');
      const run = spawnSync(driver, [pair.lm, pair.mmproj, path.join(dir, 'image.rgb'), '64', prompt, out], { encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`mtmd-logits failed: ${run.stderr}`);
      const want = new Float32Array(new Uint8Array(fs.readFileSync(out)).buffer);
      const image = { data: new Uint8Array(fs.readFileSync(path.join(dir, 'image.rgb'))), width: 64, height: 64, channels: 3 as const };
      const got = await model.chatLogits([{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: PROMPT }] }]);
      expect(got.length).toBe(want.length);
      // 46 positions: the turn's text, <start_of_image>, 16 image rows, <end_of_image>, past layer 0's window of 24.
      expect(run.stdout.trim()).toBe('46');
      expect(relativeMaxError(got, want)).toBeLessThan(1e-3);
    } finally {
      model.dispose();
    }
  });

  test('image embeddings and greedy reply', async () => {
    const model = (await loadModel(pair.lm, { mmproj: pair.mmproj, threads: 2, contextLength: 256 })) as VisionModel;
    try {
      const image = { data: new Uint8Array(fs.readFileSync(path.join(dir, 'image.rgb'))), width: 64, height: 64, channels: 3 as const };
      const embeddings = await model.encodeImage(image);
      expect(relativeMaxError(embeddings, llama.embeddings)).toBeLessThan(2e-3);

      const generation = model.chat([{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: PROMPT }] }], { temperature: 0, maxTokens: STEPS, logprobs: 2 });
      let margin = Infinity;
      for await (const piece of generation) margin = Math.min(margin, piece.logprob!.top[0].logprob - piece.logprob!.top[1].logprob);
      expect(generation.tokens.length).toBe(STEPS);
      // A tie would make the comparison a coin flip.
      expect(margin).toBeGreaterThan(0.05);
      expect(replyBytes(model.tokenizer, generation.tokens).toString('hex')).toBe(llama.reply.toString('hex'));

      // The CLI, from a PNG of the same pixels (decoded by sharp): the same tokens.
      const png = path.join(dir, 'image.png');
      await sharp(Buffer.from(image.data), { raw: { width: 64, height: 64, channels: 3 } }).png().toFile(png);
      const cli = await runCli(['answer', pair.lm, png, PROMPT, '--mmproj', pair.mmproj, '--temperature', '0', '--max-tokens', String(STEPS), '--threads', '2', '--context', '256', '--ids']);
      expect(cli.exitCode).toBe(0);
      expect(replyBytes(model.tokenizer, cli.stdout.trim().split(' ').map(Number)).toString('hex')).toBe(llama.reply.toString('hex'));
    } finally {
      model.dispose();
    }
  });

  test('the resize path: an 80×48 image letterboxed as llama.cpp does', async () => {
    // The first 80×48 pixels of the test image as a PNG (lossless: stb_image and sharp decode the same pixels).
    const [w, h] = [80, 48];
    const pixels = new Uint8Array(fs.readFileSync(path.join(dir, 'image.rgb'))).subarray(0, w * h * 3);
    const png = await sharp(Buffer.from(pixels), { raw: { width: w, height: h, channels: 3 } }).png().toBuffer();
    const file = path.join(dir, 'wide.png');
    fs.writeFileSync(file, png);
    const dump = path.join(dir, 'wide-embeddings.bin');
    const args = ['-m', pair.lm, '--mmproj', pair.mmproj, '--image', file, '-p', PROMPT, '-n', '1', '--temp', '0', '-t', '2', '-c', '256', '--jinja', '-fa', 'off'];
    const run = spawnSync(MTMD_CLI, args, { env: { ...process.env, MTMD_DEBUG_EMBEDDINGS: dump }, timeout: 600_000 });
    if (run.status !== 0) throw new Error(`llama-mtmd-cli failed: ${run.stderr}`);
    const want = new Float32Array(new Uint8Array(fs.readFileSync(dump).subarray(8)).buffer);
    const model = (await loadModel(pair.lm, { mmproj: pair.mmproj, threads: 2, contextLength: 256 })) as VisionModel;
    try {
      const got = await model.encodeImage(new Uint8Array(png));
      // Measured 1e-2 (two bilinear resamplers rounding to 8 bits); stretched instead of letterboxed: 1.4.
      expect(relativeMaxError(got, want)).toBeLessThan(3e-2);
    } finally {
      model.dispose();
    }
  });
});
