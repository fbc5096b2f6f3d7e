/**
 * A SmolVLM-shaped pair (Idefics3 projector) against llama.cpp's mtmd, on the tiny random-weight
 * models of scripts/interop/gemma3-vision-gguf.py: idefics3-lm.gguf (llama, SmolVLM's image tokens
 * in its vocabulary) and idefics3-mmproj.gguf (64 px tiles, preproc_image_size 128), with a random
 * 128×128 image, which mtmd cuts into 2×2 tiles with no resampling plus a Lanczos overview:
 *
 *   - the logits after [turn text, image, text] equal those of the libmtmd driver
 *     (scripts/interop/mtmd-logits.cpp; f32 KV cache) within 1e-3 of their largest magnitude, with
 *     the same position count (the tiles' and overview's texts and rows laid out as mtmd does);
 *   - images of other sizes, which mtmd resamples (Pillow's Lanczos, its fixed-point weights, to a
 *     128 px longest edge, then to whole tiles, then the overview): wide 100×60 (2×2 tiles), tall
 *     50×90 (upscaled, 2×2), 200×64 (2×1), the same logits within 1e-3 and the same position
 *     count; the 100×60 one also as a PNG (decoded by sharp: the same pixels);
 *   - chat() generates llama-mtmd-cli's greedy reply byte for byte, every step's top-2 logprob gap
 *     above 0.05 so no tie decides it (measured 0.15); so does `weightmap answer` on a PNG of it.
 *
 * Measured: 7e-5 for the 128×128 image (its overview resized bilinearly instead: 2e-2); 1.3e-4 for
 * the resampled ones (with a Lanczos-2 kernel instead of Pillow's Lanczos-3: 3e-2).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import sharp from 'sharp';
import { loadModel } from '../../lib/models/model';
import type { VisionModel } from '../../lib/models/vision-model';
import { runCli } from '../helpers/cli';
import { testWorkspace } from '../helpers/workspace';
import { LLAMA_CPP } from './gptoss-models';
import { gemma3VisionPair, visionPairUsable } from './vision-models';
import { mtmdCliReply, mtmdLogitsDriver, relativeMaxError, replyBytes } from './mtmd-helpers';

const BIN = path.join(LLAMA_CPP, 'build', 'bin');
const MTMD_CLI = path.join(BIN, 'llama-mtmd-cli');
const ws = testWorkspace('vision-idefics3-llama-cpp-');
const maybe = visionPairUsable && fs.existsSync(MTMD_CLI) ? describe : describe.skip;
const PROMPT = 'describe this';
const STEPS = 16;

maybe('Idefics3 (SmolVLM) vision pair against llama.cpp mtmd', () => {
  let dir: string;
  let pair: { lm: string; mmproj: string };
  let image: { data: Uint8Array; width: number; height: number; channels: 3 };

  beforeAll(() => {
    dir = ws.fresh('pair');
    const made = gemma3VisionPair(dir);
    pair = { lm: made.idefics3Lm, mmproj: made.idefics3 };
    image = { data: new Uint8Array(fs.readFileSync(path.join(dir, 'tiles.rgb'))), width: 128, height: 128, channels: 3 };
  });

  test('logits after a prompt with a 2×2-tile image', async () => {
    const driver = mtmdLogitsDriver(dir);
    const model = (await loadModel(pair.lm, { mmproj: pair.mmproj, threads: 2, contextLength: 256 })) as VisionModel;
    try {
      const prompt = model.renderChat([{ role: 'user', content: `<__media__>${PROMPT}` }]);
      const out = path.join(dir, 'llama-logits.bin');
      const run = spawnSync(driver, [pair.lm, pair.mmproj, path.join(dir, 'tiles.rgb'), '128', prompt, out], { encoding: 'utf8' });
      if (run.status !== 0) throw new Error(`mtmd-logits failed: ${run.stderr}`);
      const want = new Float32Array(new Uint8Array(fs.readFileSync(out)).buffer);
      const messages = [{ role: 'user' as const, content: [{ type: 'image' as const, image }, { type: 'text' as const, text: PROMPT }] }];
      const got = await model.chatLogits(messages);
      expect(got.length).toBe(want.length);
      // 5 pictures of 16 rows, 4 tiles' 2-token openings, a row end, the overview's 3 + 1, and the turn's text.
      const positions = await model.chatPromptTokens(messages);
      expect(String(positions)).toBe(run.stdout.trim());
      expect(relativeMaxError(got, want)).toBeLessThan(1e-3);
    } finally {
      model.dispose();
    }
  });

  test('images mtmd resamples: wide, tall (upscaled), one row of tiles', async () => {
    const driver = mtmdLogitsDriver(dir);
    const model = (await loadModel(pair.lm, { mmproj: pair.mmproj, threads: 2, contextLength: 256 })) as VisionModel;
    try {
      const prompt = model.renderChat([{ role: 'user', content: `<__media__>${PROMPT}` }]);
      for (const [width, height] of [
        [100, 60],
        [50, 90],
        [200, 64],
      ]) {
        const pixels = image.data.slice(0, width * height * 3);
        const file = path.join(dir, `image-${width}x${height}.rgb`);
        fs.writeFileSync(file, pixels);
        const out = path.join(dir, `llama-logits-${width}x${height}.bin`);
        const run = spawnSync(driver, [pair.lm, pair.mmproj, file, `${width}x${height}`, prompt, out], { encoding: 'utf8' });
        if (run.status !== 0) throw new Error(`mtmd-logits failed: ${run.stderr}`);
        const want = new Float32Array(new Uint8Array(fs.readFileSync(out)).buffer);
        const raw = { data: pixels, width, height, channels: 3 as const };
        const inputs = width === 100 ? [raw, new Uint8Array(await sharp(Buffer.from(pixels), { raw: { width, height, channels: 3 } }).png().toBuffer())] : [raw];
        for (const input of inputs) {
          const messages = [{ role: 'user' as const, content: [{ type: 'image' as const, image: input }, { type: 'text' as const, text: PROMPT }] }];
          expect(String(await model.chatPromptTokens(messages))).toBe(run.stdout.trim());
          expect(relativeMaxError(await model.chatLogits(messages), want)).toBeLessThan(1e-3);
        }
      }
    } finally {
      model.dispose();
    }
  });

  test('greedy reply', async () => {
    const reply = mtmdCliReply(MTMD_CLI, ['-m', pair.lm, '--mmproj', pair.mmproj, '--image', path.join(dir, 'tiles.ppm'), '-p', PROMPT, '-n', String(STEPS), '--temp', '0', '-t', '2', '-c', '512', '--jinja', '-fa', 'off']);
    const model = (await loadModel(pair.lm, { mmproj: pair.mmproj, threads: 2, contextLength: 512 })) as VisionModel;
    try {
      const generation = model.chat([{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: PROMPT }] }], { temperature: 0, maxTokens: STEPS, logprobs: 2 });
      let margin = Infinity;
      for await (const piece of generation) margin = Math.min(margin, piece.logprob!.top[0].logprob - piece.logprob!.top[1].logprob);
      expect(generation.tokens.length).toBe(STEPS);
      expect(margin).toBeGreaterThan(0.05);
      expect(replyBytes(model.tokenizer, generation.tokens).toString('hex')).toBe(reply.toString('hex'));

      // The CLI, from a PNG of the same pixels: the same tokens.
      const png = path.join(dir, 'tiles.png');
      await sharp(Buffer.from(image.data), { raw: { width: 128, height: 128, channels: 3 } }).png().toFile(png);
      const cli = await runCli(['answer', pair.lm, png, PROMPT, '--mmproj', pair.mmproj, '--temperature', '0', '--max-tokens', String(STEPS), '--threads', '2', '--context', '512', '--ids']);
      expect(cli.exitCode).toBe(0);
      expect(replyBytes(model.tokenizer, cli.stdout.trim().split(' ').map(Number)).toString('hex')).toBe(reply.toString('hex'));
    } finally {
      model.dispose();
    }
  });
});
