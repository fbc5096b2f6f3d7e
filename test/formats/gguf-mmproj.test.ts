/**
 * llama.cpp's mmproj GGUF (general.architecture "clip"), as its own gguf-py writes it
 * (scripts/interop/gemma3-vision-gguf.py): the config from the clip.* keys the file holds, the
 * tensors under llama.cpp's names, `weightmap inspect`'s report; and the same file with one key or
 * tensor made hostile refused with a typed WeightFormatError naming it.
 */
import * as fs from 'node:fs';
import { readWeights } from '../../lib/formats';
import { closeWeights } from '../../lib/addon/weights';
import { WeightFormatError } from '../../lib/base/errors';
import { inspectReport } from '../../lib/cli/inspect';
import { testWorkspace } from '../helpers/workspace';
import { gemma3VisionPair, visionPairUsable } from '../engines/vision-models';

const ws = testWorkspace('gguf-mmproj-');
const maybe = visionPairUsable ? describe : describe.skip;

maybe('mmproj GGUF', () => {
  let mmproj: string;
  let idefics3: string;
  beforeAll(() => {
    ({ mmproj, idefics3 } = gemma3VisionPair(ws.fresh('pair')));
  });

  test('config and tensors of a Gemma 3 mmproj', async () => {
    const w = await ws.read(mmproj);
    expect(w.architecture).toBe('clip');
    // The values the script wrote (64 px, 8 px patches, width 64, 4 heads, FFN 96, 2 layers, 2×2 pooling).
    expect(w.config).toEqual({
      architecture: 'clip', projectorType: 'gemma3', imageSize: 64, patchSize: 8, numPatches: 64, hiddenSize: 64,
      intermediateSize: 96, numLayers: 2, numHeads: 4, headDim: 16, layerNormEps: 1e-6, projectionDim: 64,
      imageMean: [0.5, 0.5, 0.5], imageStd: [0.5, 0.5, 0.5], merge: 2, activation: 'gelu_tanh', ffnSwapped: false,
    });
    const byName = new Map(w.tensors.map((t) => [t.name, t]));
    expect(byName.get('v.patch_embd.weight')).toMatchObject({ dtype: 'f32', shape: [64, 3, 8, 8] });
    expect(byName.get('v.blk.1.ffn_up.weight')).toMatchObject({ dtype: 'f16', shape: [96, 64] });
    expect(byName.get('mm.input_projection.weight')).toMatchObject({ dtype: 'f16', shape: [64, 64] });
    expect(w.tensors).toHaveLength(7 + 2 * 16);
    const report = inspectReport(w);
    expect(report.architecture).toBe('clip');
    expect(report.tensorCount).toBe(39);
  });

  /** The file with `edit` applied to a copy of its bytes, read: the error it gives. */
  async function hostile(edit: (b: Buffer) => void, source = mmproj): Promise<WeightFormatError> {
    const bytes = Buffer.from(fs.readFileSync(source));
    edit(bytes);
    const file = ws.fresh('hostile.gguf');
    fs.writeFileSync(file, bytes);
    try {
      const w = await readWeights(file);
      closeWeights(w);
    } catch (error) {
      expect(error).toBeInstanceOf(WeightFormatError);
      return error as WeightFormatError;
    }
    throw new Error('the hostile file was read');
  }

  /** The u32 value of metadata `key` (GGUF: key string, u32 type, value) set to `value`. */
  const setU32 = (key: string, value: number) => (b: Buffer) => {
    const at = b.indexOf(Buffer.from(key, 'latin1'));
    expect(at).toBeGreaterThan(0);
    expect(b.readUInt32LE(at + key.length)).toBe(4); // GGUF_TYPE_UINT32
    b.writeUInt32LE(value, at + key.length + 4);
  };
  const rename = (from: string, to: string) => (b: Buffer) => {
    expect(to.length).toBe(from.length);
    const at = b.indexOf(Buffer.from(from, 'latin1'));
    expect(at).toBeGreaterThan(0);
    b.write(to, at, 'latin1');
  };

  test.each([
    ['a block count past the tensors', setU32('clip.vision.block_count', 1_000_000), 'CONFIG_MISMATCH', /block_count/],
    ['one layer fewer than the tensors hold', setU32('clip.vision.block_count', 1), 'CONFIG_MISMATCH', /past block_count/],
    ['an image size past the bound', setU32('clip.vision.image_size', 0x7fff0000), 'CONFIG_MISMATCH', /image_size/],
    ['a patch size that does not divide the image', setU32('clip.vision.patch_size', 7), 'CONFIG_MISMATCH', /multiple/],
    ['more patches than the bound', setU32('clip.vision.image_size', 8192), 'CONFIG_MISMATCH', /more patches/],
    ['a head count that does not divide the width', setU32('clip.vision.attention.head_count', 5), 'CONFIG_MISMATCH', /head count/],
    ['a zero head count', setU32('clip.vision.attention.head_count', 0), 'CONFIG_MISMATCH', /head_count/],
    ['a merge factor that does not divide the grid', setU32('clip.vision.projector.scale_factor', 3), 'CONFIG_MISMATCH', /scale_factor/],
    ['a width the tensors do not have', setU32('clip.vision.embedding_length', 128), 'SHAPE_MISMATCH', /disagrees/],
    ['a projector type weightmap does not run', rename('gemma3', 'gemma9'), 'UNSUPPORTED', /gemma9/],
    ['a missing tensor', rename('v.post_ln.bias', 'v.post_ln.bia_'), 'MISSING_TENSOR', /v\.post_ln\.bias/],
  ])('%s is a typed error', async (_what, edit, code, message) => {
    const error = await hostile(edit);
    expect(error.code).toBe(code);
    expect(error.message).toMatch(message);
    expect(error.path).toContain('hostile.gguf');
  });

  test("an Idefics3 mmproj's preprocessor edge: read, and bounded", async () => {
    const w = await ws.read(idefics3);
    // The script's 2·64 px (SmolVLM's tiles of the encoder's size).
    expect(w.config).toMatchObject({ projectorType: 'idefics3', imageSize: 64, preprocImageSize: 128 });
    const error = await hostile(setU32('clip.vision.preproc_image_size', 0x7fff0000), idefics3);
    expect(error.code).toBe('CONFIG_MISMATCH');
    expect(error.message).toMatch(/preproc_image_size/);
  });
});
