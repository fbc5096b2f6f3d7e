import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WeightFormatError } from '../../lib/base/errors';
import { ajc1Format, chooseGroupSize, MISSING_TOKEN_SCORE } from '../../lib/formats/containers/ajc1';
import { decodeVocabularySteps } from '../../lib/tokenizers/deferred-vocabulary';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, numel, type ModelWeights } from '../../lib/addon/weights';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { blobWeights, corruptCopy, f32Bytes } from './synthetic';

const DIR = fixture('ajc1-qwen3-tiny');
const MODEL = fixture('ajc1-qwen3-tiny', 'model.bin');
const expected = readJson('ajc1-qwen3-tiny', 'expected.json');
const X = expected.config;

/** FORMATS.md §5.4: the four Qwen3 templates. */
const SPEC_TEMPLATES = {
  default: '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  withThinking: '<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n',
  withSystem: '<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n<think>\n\n</think>\n\n',
  withSystemAndThinking: '<|im_start|>system\n%s<|im_end|>\n<|im_start|>user\n%s<|im_end|>\n<|im_start|>assistant\n',
};

/** The payload order of FORMATS.md §5.2, from expected.json's config. */
function documentedLayout(): { name: string; shape: number[]; q8: boolean }[] {
  const L = X.n_layers, d = X.dim, hd = X.head_dim, hidden = X.hidden_dim;
  const out: { name: string; shape: number[]; q8: boolean }[] = [];
  const each = (fn: (l: number) => string, shape: number[], q8: boolean) => {
    for (let l = 0; l < L; l++) out.push({ name: fn(l), shape, q8 });
  };
  each((l) => `model.layers.${l}.input_layernorm.weight`, [d], false);
  each((l) => `model.layers.${l}.post_attention_layernorm.weight`, [d], false);
  out.push({ name: 'model.norm.weight', shape: [d], q8: false });
  each((l) => `model.layers.${l}.self_attn.q_norm.weight`, [hd], false);
  each((l) => `model.layers.${l}.self_attn.k_norm.weight`, [hd], false);
  out.push({ name: 'model.embed_tokens.weight', shape: [X.vocab_size, d], q8: true });
  each((l) => `model.layers.${l}.self_attn.q_proj.weight`, [X.n_heads * hd, d], true);
  each((l) => `model.layers.${l}.self_attn.k_proj.weight`, [X.n_kv_heads * hd, d], true);
  each((l) => `model.layers.${l}.self_attn.v_proj.weight`, [X.n_kv_heads * hd, d], true);
  each((l) => `model.layers.${l}.self_attn.o_proj.weight`, [d, X.n_heads * hd], true);
  each((l) => `model.layers.${l}.mlp.gate_proj.weight`, [hidden, d], true);
  each((l) => `model.layers.${l}.mlp.down_proj.weight`, [d, hidden], true);
  each((l) => `model.layers.${l}.mlp.up_proj.weight`, [hidden, d], true);
  return out;
}

function raw(w: ModelWeights, name: string): Buffer {
  const t = w.tensors.find((x) => x.name === name)!;
  const b = t.source.bytes;
  const values = b.subarray(t.byteOffset, t.byteOffset + t.byteLength);
  return t.scales ? Buffer.concat([values, b.subarray(t.scales.byteOffset, t.scales.byteOffset + t.scales.byteLength)]) : Buffer.from(values);
}

describe('ajc1 reader', () => {
  let w: ModelWeights;
  beforeAll(async () => {
    w = await ajc1Format.read(MODEL);
  });
  afterAll(() => closeWeights(w));

  test('fixture file is the documented one', () => {
    const bytes = fs.readFileSync(MODEL);
    expect(bytes.length).toBe(expected.files.checkpoint.bytes);
    expect(crypto.createHash('sha256').update(bytes).digest('hex')).toBe(expected.files.checkpoint.sha256);
    expect([...bytes.subarray(0, 4)]).toEqual([0x31, 0x63, 0x6a, 0x61]);
  });

  test('config: header values plus the Qwen3 constants', () => {
    expect(w.architecture).toBe('qwen3');
    expect(w.config).toEqual({
      architecture: 'qwen3',
      hiddenSize: X.dim,
      intermediateSize: X.hidden_dim,
      numLayers: X.n_layers,
      numHeads: X.n_heads,
      numKvHeads: X.n_kv_heads,
      headDim: X.head_dim,
      vocabSize: X.vocab_size,
      maxSeqLen: X.max_seq_len,
      rmsNormEps: X.rms_norm_eps,
      ropeTheta: X.rope_theta,
      ropePairing: 'half',
      tieWordEmbeddings: X.shared_classifier === 1,
      qkNorm: true,
      groupSize: X.group_size,
      bosTokenId: X.bos_token_id,
      eosTokenIds: [X.eos_token_id],
    });
  });

  test('views: names, shapes, dtypes, offsets and scales follow §5.2', () => {
    const gs = X.group_size;
    let offset = 256;
    const want = documentedLayout().map((t) => {
      const n = numel(t.shape);
      const v: Record<string, unknown> = { name: t.name, shape: t.shape, dtype: t.q8 ? 'q8_0' : 'f32', byteOffset: offset, byteLength: t.q8 ? n : 4 * n };
      offset += t.q8 ? n : 4 * n;
      if (t.q8) {
        v.scales = { byteOffset: offset, byteLength: (4 * n) / gs, groupSize: gs };
        offset += (4 * n) / gs;
      }
      return v;
    });
    expect(offset).toBe(expected.files.checkpoint.bytes);
    expect(w.tensors.map((t) => ({ name: t.name, shape: t.shape, dtype: t.dtype, byteOffset: t.byteOffset, byteLength: t.byteLength, ...(t.scales ? { scales: t.scales } : {}) }))).toEqual(want);
    expect(w.tensors.some((t) => t.name === 'lm_head.weight')).toBe(false);
  });

  test('dequantised values are int8 * f32 scale', () => {
    const emb = w.tensors.find((t) => t.name === 'model.embed_tokens.weight')!;
    const b = emb.source.bytes;
    const i = 12345 * 64 + 40; // group (i / 32)
    const want = Math.fround(b.readInt8(emb.byteOffset + i) * b.readFloatLE(emb.scales!.byteOffset + 4 * Math.floor(i / 32)));
    expect(readF32(emb, i, 1)[0]).toBe(want);
  });

  test('tokenizer sidecar: header, real byte strings, scores, tail filled up to vocab_size', () => {
    const tok = w.tokenizer!;
    if (tok.kind !== 'scored') throw new Error('expected a scored tokenizer');
    expect(tok.style).toBe('ajc1');
    expect(tok.maxTokenLength).toBe(X.tokenizer_max_token_length);
    expect(tok.bosId).toBe(X.bos_token_id);
    expect(tok.eosId).toBe(X.eos_token_id);
    expect(tok.tokens.length).toBe(X.vocab_size);
    expect(tok.scores.length).toBe(X.vocab_size);
    const prompt = expected.cases[0].prompt;
    prompt.ids.forEach((id: number, i: number) => expect(Buffer.from(tok.tokens[id]).toString('utf8')).toBe(prompt.tokens[i]));
    expect([...tok.tokens[220]]).toEqual([0x20]); // "Ġ" -> a raw space byte
    expect(tok.scores[16]).toBe(-1e6); // "1": a byte token
    expect(tok.scores[151644]).toBe(-1e6); // <|im_start|>: an added token
    expect(tok.scores[271]).toBeLessThan(0); // "\n\n": a merge, -ln(rank+1)
    expect(tok.scores[271]).toBeGreaterThan(-20);
    expect(tok.tokens[X.tokenizer_entries - 1].length).toBeGreaterThan(0);
    for (let id = X.tokenizer_entries; id < X.vocab_size; id++) {
      expect(tok.tokens[id].length).toBe(0);
      expect(tok.scores[id]).toBe(MISSING_TOKEN_SCORE);
    }
  });

  test("the tokenizer's 151k views are made on first need, in slices: decodeVocabularySteps stops at checkpoints, then leaves the getters nothing to do", async () => {
    const fresh = await ajc1Format.read(MODEL);
    try {
      const tok = fresh.tokenizer!;
      let checkpoints = 0;
      for (const steps = decodeVocabularySteps(tok); !steps.next().done; ) checkpoints++;
      expect(checkpoints).toBeGreaterThan(X.tokenizer_entries / 4096); // a checkpoint every few thousand entries
      expect(decodeVocabularySteps(tok).next().done).toBe(true); // done once for all
      expect(tok.kind === 'scored' && [tok.tokens.length, [...tok.tokens[220]]]).toEqual([X.vocab_size, [0x20]]);
    } finally {
      closeWeights(fresh);
    }
  });

  test('templates sidecars land in metadata.templates', () => {
    expect(w.metadata.templates).toEqual(SPEC_TEMPLATES);
  });
});

describe('ajc1 writer', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir('weightmap-ajc1-');
  });
  afterEach(() => tmp.cleanup());

  test('read(write(read(x))) gives byte-identical checkpoint, tokenizer and templates', async () => {
    const w = await ajc1Format.read(MODEL);
    const out = path.join(tmp.dir, 'model.bin');
    await ajc1Format.write!(w, out);
    for (const suffix of ['', '.tokenizer', '.template', '.template.with-thinking', '.template.with-system', '.template.with-system-and-thinking']) {
      expect([suffix, fs.readFileSync(out + suffix).equals(fs.readFileSync(path.join(DIR, `model.bin${suffix}`)))]).toEqual([suffix, true]);
    }
    const back = await ajc1Format.read(out);
    expect(back.config).toEqual(w.config);
    for (const t of w.tensors) expect(raw(back, t.name).equals(raw(w, t.name))).toBe(true);
    closeWeights(back);
    closeWeights(w);
  });

  test('a checkpoint without sidecars reads with no tokenizer and no templates', async () => {
    const copy = path.join(tmp.dir, 'bare.bin');
    fs.copyFileSync(MODEL, copy);
    const w = await ajc1Format.read(copy);
    expect(w.tokenizer).toBeUndefined();
    expect(w.metadata.templates).toBeUndefined();
    expect((w.config as DecoderConfig).bosTokenId).toBeUndefined();
    closeWeights(w);
  });

  test('Q8_0 quantization of f32 sources: scale = max|w|/127, round half to even, zero groups', async () => {
    // A 1-layer decoder, dim 8, hidden 8, 2 heads of 4, 1 kv head, vocab 4; group size 4.
    const config: DecoderConfig = {
      architecture: 'qwen3', hiddenSize: 8, intermediateSize: 8, numLayers: 1, numHeads: 2, numKvHeads: 1, headDim: 4,
      vocabSize: 4, maxSeqLen: 16, rmsNormEps: 1e-6, ropeTheta: 1e6, ropePairing: 'half', tieWordEmbeddings: false, qkNorm: true,
    };
    // Groups with max 127 have scale 1 exactly: halves round to even. A group with max 12.7 has scale 0.1.
    const emb = new Float32Array([127, 2.5, -2.5, 3.5, /**/ -127, 0.5, 1.5, -0.5, /**/ 0, 0, 0, 0, /**/ 12.7, -6.35, 1, 0,
      ...new Array(16).fill(0).map((_, i) => i - 8)]);
    const embQ = [127, 2, -2, 4, -127, 0, 2, 0, 0, 0, 0, 0, 127, -64, 10, 0];
    const ramp = (n: number, k: number) => new Float32Array(n).map((_, i) => ((i * k) % 17) - 8);
    const tensors = [
      { name: 'model.embed_tokens.weight', shape: [4, 8], data: emb },
      { name: 'model.layers.0.input_layernorm.weight', shape: [8], data: ramp(8, 1) },
      { name: 'model.layers.0.self_attn.q_proj.weight', shape: [8, 8], data: ramp(64, 3) },
      { name: 'model.layers.0.self_attn.k_proj.weight', shape: [4, 8], data: ramp(32, 5) },
      { name: 'model.layers.0.self_attn.v_proj.weight', shape: [4, 8], data: ramp(32, 7) },
      { name: 'model.layers.0.self_attn.o_proj.weight', shape: [8, 8], data: ramp(64, 2) },
      { name: 'model.layers.0.self_attn.q_norm.weight', shape: [4], data: ramp(4, 1) },
      { name: 'model.layers.0.self_attn.k_norm.weight', shape: [4], data: ramp(4, 2) },
      { name: 'model.layers.0.post_attention_layernorm.weight', shape: [8], data: ramp(8, 3) },
      { name: 'model.layers.0.mlp.gate_proj.weight', shape: [8, 8], data: ramp(64, 4) },
      { name: 'model.layers.0.mlp.up_proj.weight', shape: [8, 8], data: ramp(64, 6) },
      { name: 'model.layers.0.mlp.down_proj.weight', shape: [8, 8], data: ramp(64, 8) },
      { name: 'model.norm.weight', shape: [8], data: ramp(8, 5) },
      { name: 'lm_head.weight', shape: [4, 8], data: ramp(32, 9) },
    ];
    const src = blobWeights(tmp.dir, 'src.bin', 'safetensors', config, tensors.map((t) => ({ name: t.name, dtype: 'f32', shape: t.shape, bytes: f32Bytes(t.data) })));
    expect(chooseGroupSize(config, undefined, undefined)).toBe(8);
    const out = path.join(tmp.dir, 'q.bin');
    await ajc1Format.write!(src, out, { groupSize: 4 });
    const back = await ajc1Format.read(out);
    expect(back.config).toMatchObject({ groupSize: 4, tieWordEmbeddings: false });
    const e = back.tensors.find((t) => t.name === 'model.embed_tokens.weight')!;
    const b = e.source.bytes;
    expect(Array.from(new Int8Array(b.buffer, b.byteOffset + e.byteOffset, 16))).toEqual(embQ);
    const scales = Array.from({ length: 8 }, (_, g) => b.readFloatLE(e.scales!.byteOffset + 4 * g));
    expect(scales.slice(0, 4)).toEqual([1, 1, 0, Math.fround(Math.fround(12.7) / 127)]);
    // Every stored value dequantises to within half a step of the source.
    for (const t of tensors) {
      const v = back.tensors.find((x) => x.name === t.name)!;
      const got = readF32(v, 0, t.data.length);
      for (let i = 0; i < t.data.length; i++) {
        const step = v.dtype === 'q8_0' ? b.readFloatLE(v.scales!.byteOffset + 4 * Math.floor(i / 4)) : 0;
        expect(Math.abs(got[i] - t.data[i])).toBeLessThanOrEqual(step / 2 + 1e-6);
      }
    }
    expect(() => chooseGroupSize(config, 3, undefined)).toThrow(RangeError);
    closeWeights(back);
    closeWeights(src);
  });

  test('dequantised f32 weights quantize back to the identical checkpoint (export rounding reproduced)', async () => {
    const w = await ajc1Format.read(MODEL);
    const f32 = blobWeights(
      tmp.dir,
      'dequantised.bin',
      'safetensors',
      { ...(w.config as DecoderConfig), groupSize: undefined },
      w.tensors.map((t) => ({ name: t.name, dtype: 'f32' as const, shape: t.shape, bytes: f32Bytes(readF32(t, 0, numel(t.shape))) })),
    );
    const out = path.join(tmp.dir, 'requantised.bin');
    await ajc1Format.write!(f32, out, { groupSize: X.group_size });
    expect(fs.readFileSync(out).equals(fs.readFileSync(MODEL))).toBe(true);
    closeWeights(f32);
    closeWeights(w);
  });

  test('requantizing to another group size stays within half a step', async () => {
    const w = await ajc1Format.read(MODEL);
    const out = path.join(tmp.dir, 'gs64.bin');
    await ajc1Format.write!(w, out, { groupSize: 64 });
    const back = await ajc1Format.read(out);
    expect((back.config as DecoderConfig).groupSize).toBe(64);
    const name = 'model.layers.1.mlp.down_proj.weight';
    const a = w.tensors.find((t) => t.name === name)!;
    const z = back.tensors.find((t) => t.name === name)!;
    const n = numel(a.shape);
    const va = readF32(a, 0, n);
    const vz = readF32(z, 0, n);
    for (let i = 0; i < n; i++) {
      const step = z.source.bytes.readFloatLE(z.scales!.byteOffset + 4 * Math.floor(i / 64));
      expect(Math.abs(va[i] - vz[i])).toBeLessThanOrEqual(step * (0.5 + 1e-4));
    }
    closeWeights(back);
    closeWeights(w);
  });

  test('models ajc1 cannot describe are refused', async () => {
    const w = await ajc1Format.read(MODEL);
    const llama = { ...w, config: { ...(w.config as DecoderConfig), qkNorm: false, ropeTheta: 10000 } };
    await expect(ajc1Format.write!(llama, path.join(tmp.dir, 'x.bin'))).rejects.toThrow(/QK-norm/);
    closeWeights(w);
  });
});

describe('ajc1 validation', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(() => {
    tmp = tempDir('weightmap-ajc1-bad-');
  });
  afterAll(() => tmp.cleanup());

  async function codeOf(edit: (b: Buffer) => Buffer | void, sidecar?: (b: Buffer) => Buffer | void): Promise<string> {
    const name = `c${Math.random().toString(36).slice(2)}.bin`;
    const file = corruptCopy(MODEL, tmp.dir, name, edit);
    if (sidecar) corruptCopy(`${MODEL}.tokenizer`, tmp.dir, `${name}.tokenizer`, sidecar);
    try {
      closeWeights(await ajc1Format.read(file));
      return 'no error';
    } catch (e) {
      expect(e).toBeInstanceOf(WeightFormatError);
      return (e as WeightFormatError).code;
    }
  }

  test('wrong magic and version', async () => {
    expect(await codeOf((b) => void b.write('ajc1', 0, 'latin1'))).toBe('BAD_MAGIC');
    expect(await codeOf((b) => void b.writeInt32LE(2, 4))).toBe('BAD_VERSION');
  });

  test('truncation at several points and a trailing byte', async () => {
    const size = expected.files.checkpoint.bytes;
    for (const at of [0, 10, 0x2c, 255, 256, 256 + 1791, 2048 + 100, size - 1]) {
      expect([at, await codeOf((b) => b.subarray(0, at))]).toEqual([at, 'TRUNCATED']);
    }
    expect(await codeOf((b) => Buffer.concat([b, Buffer.of(0)]))).toBe('TRAILING_DATA');
  });

  test('header values out of range or inconsistent', async () => {
    expect(await codeOf((b) => void b.writeInt32LE(0, 8))).toBe('CONFIG_MISMATCH'); // dim 0
    expect(await codeOf((b) => void b.writeInt32LE(3, 0x18))).toBe('CONFIG_MISMATCH'); // 4 heads % 3 kv
    expect(await codeOf((b) => void b.writeInt32LE(2, 0x28))).toBe('CONFIG_MISMATCH'); // shared_classifier 2
    expect(await codeOf((b) => void b.writeInt32LE(48, 0x2c))).toBe('CONFIG_MISMATCH'); // GS 48 does not divide 64
    expect(await codeOf((b) => void b.writeInt32LE(-1, 0x2c))).toBe('CONFIG_MISMATCH');
    expect(await codeOf((b) => void b.writeUInt8(1, 0x80))).toBe('BAD_HEADER'); // padding not zero
  });

  test('an oversized dimension makes the payload run past the end', async () => {
    expect(await codeOf((b) => void b.writeInt32LE(0x40000000, 0x1c))).toBe('TRUNCATED'); // vocab 2^30
    expect(await codeOf((b) => void b.writeInt32LE(0, 0x28))).toBe('TRUNCATED'); // wcls expected but absent
    expect(await codeOf((b) => void b.writeInt32LE(16, 0x2c))).toBe('TRUNCATED'); // more scales than stored
    expect(await codeOf((b) => void b.writeInt32LE(64, 0x2c))).toBe('TRAILING_DATA'); // fewer scales than stored
  });

  test('a bad tokenizer sidecar', async () => {
    const id = (b: Buffer) => b;
    expect(await codeOf(id, (b) => b.subarray(0, 7))).toBe('TRUNCATED');
    expect(await codeOf(id, (b) => b.subarray(0, b.length - 1))).toBe('TRUNCATED');
    expect(await codeOf(id, (b) => void b.writeUInt32LE(151936, 4))).toBe('CONFIG_MISMATCH'); // bos out of range
    expect(await codeOf(id, (b) => void b.writeUInt32LE(0x7fffffff, 16))).toBe('TRUNCATED'); // first length huge
    const extra = (b: Buffer) => {
      const entry = Buffer.alloc(8);
      return Buffer.concat([b, ...new Array(151936 - 151669 + 1).fill(entry)]);
    };
    expect(await codeOf(id, extra)).toBe('CONFIG_MISMATCH'); // more entries than vocab_size
  });
});
