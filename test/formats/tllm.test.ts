import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WeightFormatError } from '../../lib/base/errors';
import { tllmFormat } from '../../lib/formats/containers/tllm';
import { f16ToF32, f32ToF16 } from '../../lib/formats/quantization/dtype-convert';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, numel, type ModelWeights } from '../../lib/addon/weights';
import type { TllmConfig } from '../../lib/architectures/tllm';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { blobWeights, corruptCopy, f32Bytes, transpose } from './synthetic';

const MODEL = fixture('tllm-tiny', 'model.tllm');
const expected = readJson('tllm-tiny', 'expected.json');

/** The documented record order (fixtures README §2 / FORMATS.md §1.2) with stored shapes. */
function documentedRecords(d: number, L: number, f: number, S: number, V: number): { name: string; stored: number[] }[] {
  const r: { name: string; stored: number[] }[] = [
    { name: 'model.embed_tokens.weight', stored: [V, d] },
    { name: 'model.embed_positions.weight', stored: [S, d] },
  ];
  for (let l = 0; l < L; l++) {
    const p = `model.layers.${l}.`;
    r.push(
      { name: `${p}self_attn.q_proj.weight`, stored: [d, d] },
      { name: `${p}self_attn.k_proj.weight`, stored: [d, d] },
      { name: `${p}self_attn.v_proj.weight`, stored: [d, d] },
      { name: `${p}self_attn.o_proj.weight`, stored: [d, d] },
      { name: `${p}mlp.fc1.weight`, stored: [d, f] },
      { name: `${p}mlp.fc1.bias`, stored: [f] },
      { name: `${p}mlp.fc2.weight`, stored: [f, d] },
      { name: `${p}mlp.fc2.bias`, stored: [d] },
      { name: `${p}input_layernorm.weight`, stored: [d] },
      { name: `${p}input_layernorm.bias`, stored: [d] },
      { name: `${p}post_attention_layernorm.weight`, stored: [d] },
      { name: `${p}post_attention_layernorm.bias`, stored: [d] },
    );
  }
  r.push({ name: 'lm_head.weight', stored: [d, V] });
  return r;
}

function tensorBytes(w: ModelWeights, name: string): Buffer {
  const t = w.tensors.find((x) => x.name === name)!;
  return t.source.bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength);
}

describe('TLLM reader', () => {
  let w: ModelWeights;
  beforeAll(async () => {
    w = await tllmFormat.read(MODEL);
  });
  afterAll(() => closeWeights(w));

  test('fixture file is the documented one', () => {
    const bytes = fs.readFileSync(MODEL);
    expect(bytes.length).toBe(expected.files.model.bytes);
    expect(crypto.createHash('sha256').update(bytes).digest('hex')).toBe(expected.files.model.sha256);
    expect([...bytes.subarray(0, 4)]).toEqual([0x4d, 0x4c, 0x4c, 0x54]);
  });

  test('config matches expected.json', () => {
    const c = expected.config;
    expect(w.architecture).toBe('tllm');
    expect(w.format).toBe('tllm');
    expect(w.config).toEqual({
      architecture: 'tllm',
      hiddenSize: c.d,
      numLayers: c.L,
      numHeads: c.H,
      intermediateSize: c.f,
      maxSeqLen: c.S,
      vocabSize: c.V,
      dropout: Math.fround(c.dropout),
      layerNormEps: c.layer_norm_eps,
    });
  });

  test('tensor names, shapes, dtypes, orientation and offsets follow the documented layout', () => {
    const c = expected.config;
    const records = documentedRecords(c.d, c.L, c.f, c.S, c.V);
    expect(w.tensors.map((t) => t.name)).toEqual(records.map((r) => r.name));
    let offset = 36;
    records.forEach((r, i) => {
      const t = w.tensors[i];
      offset += 8 * r.stored.length;
      expect(t.shape).toEqual(r.stored);
      expect(t.dtype).toBe('f32');
      expect(t.byteOffset).toBe(offset);
      expect(t.byteLength).toBe(4 * numel(r.stored));
      expect(t.transposed ?? false).toBe(r.stored.length === 2 && !r.name.includes('embed_'));
      offset += t.byteLength;
    });
    expect(offset).toBe(expected.files.model.bytes);
  });

  test('views point at the record data (first value after the first prefix)', () => {
    const raw = fs.readFileSync(MODEL);
    const first = readF32(w.tensors[0], 0, 1)[0];
    expect(first).toBe(raw.readFloatLE(36 + 16));
    const last = w.tensors[w.tensors.length - 1];
    expect(readF32(last, numel(last.shape) - 1, 1)[0]).toBe(raw.readFloatLE(raw.length - 4));
  });
});

describe('TLLM writer', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir('weightmap-tllm-');
  });
  afterEach(() => tmp.cleanup());

  test('read(write(read(x))) is byte-identical, with progress reported', async () => {
    const w = await tllmFormat.read(MODEL);
    const out = path.join(tmp.dir, 'copy.tllm');
    const progress: number[] = [];
    await tllmFormat.write!(w, out, { onProgress: (p) => progress.push(p.bytesWritten) });
    expect(fs.readFileSync(out).equals(fs.readFileSync(MODEL))).toBe(true);
    expect(progress[progress.length - 1]).toBe(expected.files.model.bytes);
    const back = await tllmFormat.read(out);
    expect(back.config).toEqual(w.config);
    for (const t of w.tensors) expect(tensorBytes(back, t.name).equals(tensorBytes(w, t.name))).toBe(true);
    closeWeights(back);
    closeWeights(w);
  });

  test('[out,in] f32 sources are transposed back to the identical file; f16 sources convert exactly', async () => {
    const w = await tllmFormat.read(MODEL);
    const outIn = blobWeights(
      tmp.dir,
      'hf.bin',
      'safetensors',
      w.config,
      w.tensors.map((t) => {
        const data = readF32(t, 0, numel(t.shape));
        return t.transposed
          ? { name: t.name, dtype: 'f32', shape: [t.shape[1], t.shape[0]], bytes: f32Bytes(transpose(data, t.shape[0], t.shape[1])) }
          : { name: t.name, dtype: 'f32', shape: t.shape, bytes: f32Bytes(data) };
      }),
      { misalign: true },
    );
    const out = path.join(tmp.dir, 'from-hf.tllm');
    await tllmFormat.write!(outIn, out);
    expect(fs.readFileSync(out).equals(fs.readFileSync(MODEL))).toBe(true);

    const half = blobWeights(
      tmp.dir,
      'half.bin',
      'safetensors',
      w.config,
      w.tensors.map((t) => {
        const data = readF32(t, 0, numel(t.shape));
        const h = Uint16Array.from(data, (x) => f32ToF16(x));
        return { name: t.name, dtype: 'f16', shape: t.shape, transposed: t.transposed, bytes: new Uint8Array(h.buffer) };
      }),
    );
    const out16 = path.join(tmp.dir, 'from-f16.tllm');
    await tllmFormat.write!(half, out16);
    const back = await tllmFormat.read(out16);
    for (const t of w.tensors) {
      const orig = readF32(t, 0, numel(t.shape));
      const got = readF32(back.tensors.find((x) => x.name === t.name)!, 0, numel(t.shape));
      expect(Array.from(got)).toEqual(Array.from(orig, (x) => f16ToF32(f32ToF16(x))));
    }
    [w, outIn, half, back].forEach(closeWeights);
  });

  test('a missing tensor or a wrong shape is refused and leaves no file', async () => {
    const w = await tllmFormat.read(MODEL);
    const out = path.join(tmp.dir, 'bad.tllm');
    const missing = { ...w, tensors: w.tensors.filter((t) => t.name !== 'lm_head.weight') };
    await expect(tllmFormat.write!(missing, out)).rejects.toMatchObject({ code: 'MISSING_TENSOR' });
    const wrong = { ...w, config: { ...(w.config as TllmConfig), intermediateSize: 64 } };
    await expect(tllmFormat.write!(wrong, out)).rejects.toMatchObject({ code: 'SHAPE_MISMATCH' });
    expect(fs.existsSync(out)).toBe(false);
    closeWeights(w);
  });

  test('an aborted write rejects with AbortError and removes the partial file', async () => {
    const w = await tllmFormat.read(MODEL);
    const out = path.join(tmp.dir, 'aborted.tllm');
    const ac = new AbortController();
    const p = tllmFormat.write!(w, out, { signal: ac.signal, onProgress: (pr) => pr.bytesWritten > 1000 && ac.abort() });
    await expect(p).rejects.toMatchObject({ name: 'AbortError' });
    expect(fs.existsSync(out)).toBe(false);
    closeWeights(w);
  });
});

describe('TLLM validation', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(() => {
    tmp = tempDir('weightmap-tllm-bad-');
  });
  afterAll(() => tmp.cleanup());

  async function codeOf(edit: (b: Buffer) => Buffer | void): Promise<string> {
    const file = corruptCopy(MODEL, tmp.dir, `c${Math.random().toString(36).slice(2)}.tllm`, edit);
    try {
      const w = await tllmFormat.read(file);
      closeWeights(w);
      return 'no error';
    } catch (e) {
      expect(e).toBeInstanceOf(WeightFormatError);
      expect((e as WeightFormatError).path).toBe(file);
      return (e as WeightFormatError).code;
    }
  }

  test('wrong magic and version', async () => {
    expect(await codeOf((b) => void b.write('LLMT', 0, 'latin1'))).toBe('BAD_MAGIC');
    expect(await codeOf((b) => void b.writeUInt32LE(2, 4))).toBe('BAD_VERSION');
  });

  test('truncation at several points', async () => {
    for (const at of [0, 3, 20, 36, 40, 52, 1000, 350068 - 4, 350068 - 1]) {
      expect([at, await codeOf((b) => b.subarray(0, at))]).toEqual([at, 'TRUNCATED']);
    }
  });

  test('one trailing byte', async () => {
    expect(await codeOf((b) => Buffer.concat([b, Buffer.of(0)]))).toBe('TRAILING_DATA');
  });

  test('header values that are not positive or not consistent', async () => {
    expect(await codeOf((b) => void b.writeInt32LE(0, 8))).toBe('CONFIG_MISMATCH'); // d = 0
    expect(await codeOf((b) => void b.writeInt32LE(-2, 12))).toBe('CONFIG_MISMATCH'); // L < 0
    expect(await codeOf((b) => void b.writeInt32LE(3, 16))).toBe('CONFIG_MISMATCH'); // 64 % 3 != 0
    expect(await codeOf((b) => void b.writeFloatLE(Number.NaN, 32))).toBe('CONFIG_MISMATCH');
  });

  test('record dimensions that disagree with the header, or are oversized', async () => {
    expect(await codeOf((b) => void b.writeBigUInt64LE(101n, 36))).toBe('SHAPE_MISMATCH'); // E rows
    expect(await codeOf((b) => void b.writeInt32LE(256, 20))).toBe('SHAPE_MISMATCH'); // f in header only
    expect(await codeOf((b) => void b.writeBigUInt64LE(1n << 62n, 36))).toBe('OUT_OF_BOUNDS'); // > 2^53
    expect(await codeOf((b) => void b.writeInt32LE(0x40000000, 28))).toBe('SHAPE_MISMATCH'); // V huge
  });
});
