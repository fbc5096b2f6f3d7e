/**
 * The ViT engine on an mmproj GGUF (native/engines/vit.h, layout 'gguf'): the image embeddings of
 * the tiny Gemma 3 pair's test image against a float64 numpy reference written from the published
 * semantics (SigLIP, Gemma3MultiModalProjector) over the stored weights
 * (scripts/interop/gemma3-vision-gguf.py), for f16, f32 and q8_0 encoder matrices; SmolVLM's
 * projector (Idefics3Connector's pixel shuffle and linear) over the same encoder; a chat with an
 * Idefics3 mmproj and a language model whose vocabulary lacks SmolVLM's image tokens refused; a
 * SmolVLM chat past the context and one with an mmproj lacking its preprocessor edge refused.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { VisionEngine } from '../../lib/engines/vision';
import { loadModel } from '../../lib/models/model';
import type { VisionModel } from '../../lib/models/vision-model';
import { testWorkspace } from '../helpers/workspace';
import { relativeMaxError as relativeError } from './mtmd-helpers';
import { gemma3VisionPair, visionPairUsable } from './vision-models';

const ws = testWorkspace('vision-encoder-');
const maybe = visionPairUsable ? describe : describe.skip;

maybe('Gemma 3 mmproj encoder', () => {
  // f16 and f32 matrices multiply exactly as stored (f32 accumulation); q8_0 quantizes the activations to 8 bits as llama.cpp does.
  test.each([
    ['f32', 1e-5],
    ['f16', 1e-5],
    ['q8_0', 3e-2],
  ] as const)('%s matrices: embeddings within %s of the reference', async (dtype, tolerance) => {
    const dir = ws.fresh(dtype);
    const { mmproj } = gemma3VisionPair(dir, dtype);
    const weights = await ws.read(mmproj);
    const engine = await VisionEngine.load(weights, { threads: 2 });
    try {
      expect(engine.imageTokens).toBe(16);
      const rgb = new Uint8Array(fs.readFileSync(path.join(dir, 'image.rgb')));
      const want = new Float32Array(new Uint8Array(fs.readFileSync(path.join(dir, 'embeddings.f32'))).buffer);
      const { embeddings } = await engine.encodeRgb(rgb);
      expect(embeddings.length).toBe(16 * 64);
      expect(want.length).toBe(16 * 64);
      expect(relativeError(embeddings, want)).toBeLessThan(tolerance);
      await expect(engine.encodeRgb(rgb.subarray(1))).rejects.toThrow(/64x64 RGB/);
    } finally {
      engine.dispose();
    }
  });

  test('Idefics3 projector: embeddings within 1e-5 of the reference; chat without its image tokens refused', async () => {
    const dir = ws.fresh('idefics3');
    const { lm, idefics3 } = gemma3VisionPair(dir);
    const weights = await ws.read(idefics3);
    expect(weights.config).toMatchObject({ projectorType: 'idefics3', merge: 2 });
    const engine = await VisionEngine.load(weights, { threads: 2 });
    try {
      const rgb = new Uint8Array(fs.readFileSync(path.join(dir, 'image.rgb')));
      const want = new Float32Array(new Uint8Array(fs.readFileSync(path.join(dir, 'idefics3-embeddings.f32'))).buffer);
      const { embeddings } = await engine.encodeRgb(rgb);
      expect(embeddings.length).toBe(16 * 64);
      expect(relativeError(embeddings, want)).toBeLessThan(1e-5);
    } finally {
      engine.dispose();
    }
    const model = (await loadModel(lm, { mmproj: idefics3, threads: 2, contextLength: 128 })) as VisionModel;
    try {
      const image = { data: new Uint8Array(fs.readFileSync(path.join(dir, 'image.rgb'))), width: 64, height: 64, channels: 3 as const };
      // Gemma 3's vocabulary: no '\n\n' piece for the overview's opening.
      await expect(model.chat([{ role: 'user', content: [{ type: 'image', image }, { type: 'text', text: 'hi' }] }]).text()).rejects.toThrow(/vocabulary has no token '\\n\\n'/);
      expect(model.sessions.busy).toBe(0);
    } finally {
      model.dispose();
    }
  });

  test('a chat whose image does not fit the context: a RangeError before the image is read', async () => {
    const dir = ws.fresh('context');
    const { lm, mmproj } = gemma3VisionPair(dir);
    const model = (await loadModel(lm, { mmproj, threads: 2, contextLength: 40 })) as VisionModel;
    try {
      // Not an image at all: reading it would fail otherwise.
      const chat = model.chat([{ role: 'user', content: [{ type: 'image', image: new Uint8Array([1, 2, 3]) }, { type: 'text', text: 'describe this' }] }]);
      await expect(chat.text()).rejects.toThrow(/needs 46 positions .* more than the context length 40/);
      expect(model.sessions.busy).toBe(0);
    } finally {
      model.dispose();
    }
    // An mmproj alone, or a language model as the mmproj: UnsupportedErrors that say which file is which.
    await expect(loadModel(mmproj)).rejects.toThrow(/is a vision encoder and projector .* loadModel\(languageModel, \{ mmproj \}\)/);
    await expect(loadModel(lm, { mmproj: lm })).rejects.toThrow(/is not an mmproj GGUF \(its architecture is gemma3\)/);
  });

  test('SmolVLM chat: a tiled image past the context, and an mmproj without its preprocessor edge, refused', async () => {
    const dir = ws.fresh('idefics3-context');
    const { idefics3Lm, idefics3 } = gemma3VisionPair(dir);
    const image = { data: new Uint8Array(fs.readFileSync(path.join(dir, 'tiles.rgb'))), width: 128, height: 128, channels: 3 as const };
    const content = [{ type: 'image' as const, image }, { type: 'text' as const, text: 'describe this' }];
    const model = (await loadModel(idefics3Lm, { mmproj: idefics3, threads: 2, contextLength: 100 })) as VisionModel;
    try {
      // 2×2 tiles and the overview: 5 pictures of 16 rows, 124 positions with their texts and the turn's.
      await expect(model.chat([{ role: 'user', content }]).text()).rejects.toThrow(/needs 124 positions \(1 images, 5 pictures of 16\), more than the context length 100/);
      expect(model.sessions.busy).toBe(0);
    } finally {
      model.dispose();
    }
    // An older converter's file (no clip.vision.preproc_image_size): its split is mtmd's other branch.
    const bytes = Buffer.from(fs.readFileSync(idefics3));
    const key = 'clip.vision.preproc_image_size';
    bytes.write(`${key.slice(0, -1)}X`, bytes.indexOf(Buffer.from(key, 'latin1')), 'latin1');
    const older = path.join(dir, 'older-mmproj.gguf');
    fs.writeFileSync(older, bytes);
    const old = (await loadModel(idefics3Lm, { mmproj: older, threads: 2, contextLength: 256 })) as VisionModel;
    try {
      await expect(old.chat([{ role: 'user', content }]).text()).rejects.toThrow(/without 'clip\.vision\.preproc_image_size'/);
    } finally {
      old.dispose();
    }
  });
});
