import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WeightFormatError } from '../../lib/base/errors';
import { moonFormat } from '../../lib/formats/containers/moon';
import { f16ToF32, f32ToF16 } from '../../lib/formats/quantization/dtype-convert';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { MOONDREAM2_CONFIG, type MoondreamConfig } from '../../lib/architectures/moondream';
import { closeWeights, numel, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { blobWeights, corruptCopy, f32Bytes, transpose } from './synthetic';

const DIR = fixture('moon-tiny');
const MODEL = fixture('moon-tiny', 'model.moon');
const expected = readJson('moon-tiny', 'expected.json');
const cfg = readJson('moon-tiny', 'config.json');

/**
 * The documented records (FORMATS.md §2.3 table, shapes from moon-tiny/config.json), the
 * canonical name prefix of their per-layer views, the layer count and whether stored [in,out].
 */
function documented(): { file: string; stored: number[]; names: string[]; transposed: boolean }[] {
  const d = cfg.text_dim, L = cfg.text_layers, f = cfg.text_ffn, V = cfg.vocab_size;
  const D = cfg.vision_dim, Lv = cfg.vision_layers, fv = cfg.vision_ffn, P = 3 * cfg.patch_size ** 2, n = cfg.n_patches, ph = cfg.proj_hidden;
  const t = (l: number, s: string) => `model.text.blocks.${l}.${s}`;
  const v = (l: number, s: string) => `model.vision.blocks.${l}.${s}`;
  const per = (count: number, fn: (l: number) => string) => Array.from({ length: count }, (_, l) => fn(l));
  const r = (file: string, stored: number[], names: string[], transposed = false) => ({ file, stored, names, transposed });
  return [
    r('word_token_embedding', [V, d], ['model.text.wte']),
    r('t_ln_w', [L, d], per(L, (l) => t(l, 'ln.weight'))),
    r('t_ln_b', [L, d], per(L, (l) => t(l, 'ln.bias'))),
    r('t_Wqkv_w', [L, 3 * d, d], per(L, (l) => t(l, 'attn.qkv.weight'))),
    r('t_Wqkv_b', [L, 3 * d], per(L, (l) => t(l, 'attn.qkv.bias'))),
    r('t_out_proj_w', [L, d, d], per(L, (l) => t(l, 'attn.proj.weight'))),
    r('t_out_proj_bias', [L, d], per(L, (l) => t(l, 'attn.proj.bias'))),
    r('t_fc1_w', [L, f, d], per(L, (l) => t(l, 'mlp.fc1.weight'))),
    r('t_fc1_b', [L, f], per(L, (l) => t(l, 'mlp.fc1.bias'))),
    r('t_fc2_w', [L, d, f], per(L, (l) => t(l, 'mlp.fc2.weight'))),
    r('t_fc2_b', [L, d], per(L, (l) => t(l, 'mlp.fc2.bias'))),
    r('t_linear_w', [V, d], ['model.text.lm_head.weight']),
    r('t_linear_b', [V], ['model.text.lm_head.bias']),
    r('t_ln_out_w', [d], ['model.text.post_ln.weight']),
    r('t_ln_out_b', [d], ['model.text.post_ln.bias']),
    r('v_patch_embedding_linear_w', [P, D], ['model.vision.patch_emb.weight'], true),
    r('v_patch_embedding_linear_b', [D], ['model.vision.patch_emb.bias']),
    r('v_pos_embedding', [1, n, D], ['model.vision.pos_emb']),
    r('v_Wqkv_w', [Lv, D, 3 * D], per(Lv, (l) => v(l, 'attn.qkv.weight')), true),
    r('v_Wqkv_b', [Lv, 3 * D], per(Lv, (l) => v(l, 'attn.qkv.bias'))),
    r('v_out_proj_w', [Lv, D, D], per(Lv, (l) => v(l, 'attn.proj.weight')), true),
    r('v_out_proj_b', [Lv, D], per(Lv, (l) => v(l, 'attn.proj.bias'))),
    r('v_fc1_w', [Lv, D, fv], per(Lv, (l) => v(l, 'mlp.fc1.weight')), true),
    r('v_fc1_b', [Lv, fv], per(Lv, (l) => v(l, 'mlp.fc1.bias'))),
    r('v_fc2_w', [Lv, fv, D], per(Lv, (l) => v(l, 'mlp.fc2.weight')), true),
    r('v_fc2_b', [Lv, D], per(Lv, (l) => v(l, 'mlp.fc2.bias'))),
    r('v_norm1_w', [Lv, D], per(Lv, (l) => v(l, 'ln1.weight'))),
    r('v_norm1_b', [Lv, D], per(Lv, (l) => v(l, 'ln1.bias'))),
    r('v_norm2_w', [Lv, D], per(Lv, (l) => v(l, 'ln2.weight'))),
    r('v_norm2_b', [Lv, D], per(Lv, (l) => v(l, 'ln2.bias'))),
    r('v_norm_out_w', [D], ['model.vision.post_ln.weight']),
    r('v_norm_out_b', [D], ['model.vision.post_ln.bias']),
    r('v_proj_fc1_w', [2 * D, ph], ['model.vision.proj_mlp.fc1.weight'], true),
    r('v_proj_fc1_b', [ph], ['model.vision.proj_mlp.fc1.bias']),
    r('v_proj_fc2_w', [ph, d], ['model.vision.proj_mlp.fc2.weight'], true),
    r('v_proj_fc2_b', [d], ['model.vision.proj_mlp.fc2.bias']),
  ];
}

function bytesOf(w: ModelWeights, name: string): Buffer {
  const t = w.tensors.find((x) => x.name === name)!;
  return t.source.bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength);
}

describe('MOON reader', () => {
  let w: ModelWeights;
  beforeAll(async () => {
    w = await moonFormat.read(MODEL);
  });
  afterAll(() => closeWeights(w));

  test('fixture file is the documented one', () => {
    const bytes = fs.readFileSync(MODEL);
    expect(bytes.length).toBe(expected.files.model.bytes);
    expect(crypto.createHash('sha256').update(bytes).digest('hex')).toBe(expected.files.model.sha256);
    expect([...bytes.subarray(0, 4)]).toEqual([0x4e, 0x4f, 0x4f, 0x4d]);
  });

  test('config comes from config.json', () => {
    const c = w.config as MoondreamConfig;
    expect(w.architecture).toBe('moondream');
    expect(c.text).toEqual({
      hiddenSize: cfg.text_dim, numLayers: cfg.text_layers, numHeads: cfg.text_heads, headDim: cfg.text_head_dim,
      rotaryDim: cfg.rotary_dim, ropeTheta: cfg.rope_theta, intermediateSize: cfg.text_ffn, vocabSize: cfg.vocab_size,
      maxSeqLen: cfg.max_seq_len, layerNormEps: cfg.layer_norm_eps, bosTokenId: cfg.bos_token_id, eosTokenId: cfg.eos_token_id,
    });
    expect(c.vision).toEqual({
      hiddenSize: cfg.vision_dim, numLayers: cfg.vision_layers, numHeads: cfg.vision_heads, headDim: cfg.vision_head_dim,
      intermediateSize: cfg.vision_ffn, patchSize: cfg.patch_size, imageSize: cfg.image_size, numPatches: cfg.n_patches,
      layerNormEps: cfg.layer_norm_eps, projHidden: cfg.proj_hidden,
    });
  });

  test('per-layer views with HF names, f16, stored shapes and offsets of the documented layout', () => {
    let offset = 8;
    const want: { name: string; shape: number[]; byteOffset: number; transposed: boolean }[] = [];
    for (const r of documented()) {
      offset += 12 + r.file.length + 8 * r.stored.length;
      // The fixture has 2 text and 2 vision layers: stacked records are exactly those with 2 names.
      const perLayer = r.names.length > 1 ? r.stored.slice(1) : r.stored;
      const bytes = 2 * numel(perLayer);
      r.names.forEach((name, l) => want.push({ name, shape: perLayer, byteOffset: offset + l * bytes, transposed: r.transposed }));
      offset += 2 * numel(r.stored);
    }
    expect(offset).toBe(expected.files.model.bytes);
    expect(w.tensors.map((t) => ({ name: t.name, shape: t.shape, byteOffset: t.byteOffset, transposed: t.transposed ?? false }))).toEqual(want);
    for (const t of w.tensors) {
      expect(t.dtype).toBe('f16');
      expect(t.byteLength).toBe(2 * numel(t.shape));
    }
  });

  test('without config.json the Moondream2 configuration applies (and the tiny file then fails its shape check)', async () => {
    const tmp = tempDir('weightmap-moon-nocfg-');
    try {
      const copy = path.join(tmp.dir, 'model.moon');
      fs.copyFileSync(MODEL, copy);
      await expect(moonFormat.read(copy)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH', expected: [MOONDREAM2_CONFIG.text.vocabSize, MOONDREAM2_CONFIG.text.hiddenSize] });
    } finally {
      tmp.cleanup();
    }
  });
});

describe('MOON writer', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir('weightmap-moon-');
  });
  afterEach(() => tmp.cleanup());

  test('read(write(read(x))) is byte-identical and writes a config.json that reads back', async () => {
    const w = await moonFormat.read(MODEL);
    const out = path.join(tmp.dir, 'model.moon');
    let last = 0;
    await moonFormat.write!(w, out, { onProgress: (p) => (last = p.bytesWritten) });
    expect(fs.readFileSync(out).equals(fs.readFileSync(MODEL))).toBe(true);
    expect(last).toBe(expected.files.model.bytes);
    const back = await moonFormat.read(out);
    expect(back.config).toEqual(w.config);
    expect(back.tensors.map((t) => t.name)).toEqual(w.tensors.map((t) => t.name));
    for (const t of w.tensors) expect(bytesOf(back, t.name).equals(bytesOf(w, t.name))).toBe(true);
    closeWeights(back);
    closeWeights(w);
  });

  test('HF-layout sources ([out,in] vision matrices, f32, any order) stack and transpose to the identical file', async () => {
    const w = await moonFormat.read(MODEL);
    const hf = blobWeights(
      tmp.dir,
      'hf.bin',
      'safetensors',
      w.config,
      [...w.tensors].reverse().map((t) => {
        const data = readF32(t, 0, numel(t.shape));
        return t.transposed
          ? { name: t.name, dtype: 'f32' as const, shape: [t.shape[1], t.shape[0]], bytes: f32Bytes(transpose(data, t.shape[0], t.shape[1])) }
          : { name: t.name, dtype: 'f32' as const, shape: t.shape, bytes: f32Bytes(data) };
      }),
      { misalign: true },
    );
    const out = path.join(tmp.dir, 'out', 'model.moon');
    fs.mkdirSync(path.dirname(out));
    await moonFormat.write!(hf, out);
    expect(fs.readFileSync(out).equals(fs.readFileSync(MODEL))).toBe(true);
    // f32 values that are not f16-exact round to nearest even.
    const first = w.tensors[0];
    const bumped = readF32(first, 0, numel(first.shape)).map((x) => x * 1.0001);
    const hf2 = blobWeights(tmp.dir, 'hf2.bin', 'safetensors', w.config, [
      { name: first.name, dtype: 'f32', shape: first.shape, bytes: f32Bytes(bumped) },
      ...w.tensors.slice(1).map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, transposed: t.transposed, bytes: bytesOf(w, t.name) })),
    ]);
    await moonFormat.write!(hf2, out);
    const back = await moonFormat.read(out);
    expect(Array.from(readF32(back.tensors[0], 0, numel(first.shape)))).toEqual(Array.from(bumped, (x) => f16ToF32(f32ToF16(x))));
    [w, hf, hf2, back].forEach(closeWeights);
  });

  test('a foreign config.json beside the output is never replaced', async () => {
    const w = await moonFormat.read(MODEL);
    fs.writeFileSync(path.join(tmp.dir, 'config.json'), '{"model_type": "moondream1"}');
    await expect(moonFormat.write!(w, path.join(tmp.dir, 'model.moon'))).rejects.toThrow(/not a MOON config.json/);
    expect(fs.readFileSync(path.join(tmp.dir, 'config.json'), 'utf8')).toBe('{"model_type": "moondream1"}');
    expect(fs.existsSync(path.join(tmp.dir, 'model.moon'))).toBe(false);
    closeWeights(w);
  });
});

describe('MOON validation', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(() => {
    tmp = tempDir('weightmap-moon-bad-');
    fs.copyFileSync(path.join(DIR, 'config.json'), path.join(tmp.dir, 'config.json'));
  });
  afterAll(() => tmp.cleanup());

  const FIRST_NAME = 'word_token_embedding';
  const FIRST_SHAPE_AT = 8 + 12 + FIRST_NAME.length;

  async function codeOf(edit: (b: Buffer) => Buffer | void): Promise<string> {
    const file = corruptCopy(MODEL, tmp.dir, `c${Math.random().toString(36).slice(2)}.moon`, edit);
    try {
      closeWeights(await moonFormat.read(file));
      return 'no error';
    } catch (e) {
      expect(e).toBeInstanceOf(WeightFormatError);
      return (e as WeightFormatError).code;
    }
  }

  test('wrong magic and version', async () => {
    expect(await codeOf((b) => void b.write('MOON', 0, 'latin1'))).toBe('BAD_MAGIC');
    expect(await codeOf((b) => void b.writeUInt32LE(1, 4))).toBe('BAD_VERSION');
  });

  test('truncation at several points, partial record header after the last record', async () => {
    const size = expected.files.model.bytes;
    for (const at of [2, 7, 8 + 5, 8 + 12 + 3, FIRST_SHAPE_AT + 9, FIRST_SHAPE_AT + 16 + 100, size - 1]) {
      expect([at, await codeOf((b) => b.subarray(0, at))]).toEqual([at, 'TRUNCATED']);
    }
    for (const extra of [1, 11]) {
      expect([extra, await codeOf((b) => Buffer.concat([b, Buffer.alloc(extra)]))]).toEqual([extra, 'TRUNCATED']);
    }
  });

  test('a whole extra record header after the last record is an unknown or bad record', async () => {
    expect(await codeOf((b) => Buffer.concat([b, Buffer.alloc(12)]))).toBe('BAD_NAME');
  });

  test('names, ranks, data_length and dimensions', async () => {
    expect(await codeOf((b) => void b.writeUInt32LE(257, 8))).toBe('BAD_NAME'); // name > 256
    expect(await codeOf((b) => void b.writeUInt32LE(5, 12))).toBe('BAD_HEADER'); // rank 5
    expect(await codeOf((b) => void b.writeUInt32LE(7, 16))).toBe('BAD_HEADER'); // data_length != numel
    expect(await codeOf((b) => void b.write('X', 8 + 12, 'latin1'))).toBe('BAD_NAME'); // unknown name
    expect(await codeOf((b) => void b.writeUInt8(0xff, 8 + 12))).toBe('BAD_NAME'); // not UTF-8
    expect(await codeOf((b) => void b.writeBigUInt64LE(513n, FIRST_SHAPE_AT))).toBe('SHAPE_MISMATCH');
    expect(await codeOf((b) => void b.writeBigUInt64LE(1n << 60n, FIRST_SHAPE_AT))).toBe('OUT_OF_BOUNDS');
  });

  test('duplicate and missing records', async () => {
    // Repeat the last record (v_proj_fc2_b): duplicate name. Drop it: missing tensor.
    const b = fs.readFileSync(MODEL);
    const lastLen = 12 + 'v_proj_fc2_b'.length + 8 + 2 * cfg.text_dim;
    expect(await codeOf(() => Buffer.concat([b, b.subarray(b.length - lastLen)]))).toBe('BAD_NAME');
    expect(await codeOf(() => b.subarray(0, b.length - lastLen))).toBe('MISSING_TENSOR');
  });

  test('an inconsistent config.json', async () => {
    const dir = path.join(tmp.dir, 'badcfg');
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify({ ...cfg, text_heads: 5 }));
    fs.copyFileSync(MODEL, path.join(dir, 'model.moon'));
    await expect(moonFormat.read(path.join(dir, 'model.moon'))).rejects.toMatchObject({ code: 'CONFIG_MISMATCH' });
    fs.writeFileSync(path.join(dir, 'config.json'), '{ not json');
    await expect(moonFormat.read(path.join(dir, 'model.moon'))).rejects.toMatchObject({ code: 'BAD_HEADER' });
  });
});
