/**
 * The GGUF writer's Q8_0 (lib/formats/quantization/ggml-q8.ts, native/convert/quantize_q8.cc): the JavaScript
 * reference against closed forms (ties away from zero, the error bound, zero / NaN / Inf blocks),
 * the native quantizer against the reference on odd block counts from f32, f16, bf16 and
 * Float32Array sources, llama.cpp's own Q8_0 file (fixtures/gguf-quants) rebuilt byte for byte from
 * its float32 values, and conversions of the fixture models to Q8_0 GGUF that generate as their
 * sources do.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { dequantize } from '../../lib/formats/quantization/dequantize';
import { readWeights } from '../../lib/formats';
import { f16ToF32, f32ToBf16, f32ToF16 } from '../../lib/formats/quantization/dtype-convert';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { quantizeGgmlQ8_0 } from '../../lib/formats/quantization/ggml-q8';
import { mapFile, type MappedSource } from '../../lib/addon/mapping';
import { loadModel } from '../../lib/models/model';
import { native } from '../../lib/addon/native';
import { closeWeights, type FormatName } from '../../lib/addon/weights';
import { runCli } from '../helpers/cli';
import { watchEventLoop } from '../helpers/event-loop';
import { mulberry32 } from '../helpers/rng';
import { fixture } from '../helpers/fixtures';
import { testWorkspace } from '../helpers/workspace';

const { fresh } = testWorkspace('weightmap-gguf-q8-');
const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');
const sources: MappedSource[] = [];
afterAll(() => {
  for (const s of sources) s.close();
});

/** Blocks of 32: random values of mixed magnitudes, exact ties, zeros, NaN / Inf, subnormals. */
function testValues(blocks: number, seed: number): Float32Array {
  const next = mulberry32(seed);
  const out = new Float32Array(blocks * 32);
  for (let b = 0; b < blocks; b++) {
    const kind = b % 6;
    for (let i = 0; i < 32; i++) {
      let v: number;
      if (kind === 0) v = 0;
      else if (kind === 1) v = i === 0 ? 127 : Math.floor(next() * 253) - 126 + 0.5; // d = 1: every other value a tie
      else if (kind === 2) v = [NaN, 1.5, -0, -2.25][i % 4];
      else if (kind === 3) v = (next() - 0.5) * 2 ** -140;
      else v = (next() - 0.5) * 2 ** (next() * 40 - 20);
      out[b * 32 + i] = next() < 0.5 && kind === 1 ? -v : v;
    }
  }
  return out;
}

const d16Of = (blocks: Uint8Array, b: number) => f16ToF32(blocks[b * 34] | (blocks[b * 34 + 1] << 8));
const qOf = (blocks: Uint8Array, b: number, i: number) => (blocks[b * 34 + 2 + i] << 24) >> 24;

describe('the JavaScript reference', () => {
  test('d = max|x| / 127 as f16, ties rounded away from zero, NaN and zero blocks give 0', () => {
    const x = new Float32Array(64);
    x.set([127, 2.5, -2.5, 0.5, -0.5, 1.49, NaN, -126.5]);
    x[32] = NaN;
    const blocks = quantizeGgmlQ8_0(x);
    expect(d16Of(blocks, 0)).toBe(1);
    expect([0, 1, 2, 3, 4, 5, 6, 7, 8].map((i) => qOf(blocks, 0, i))).toEqual([127, 3, -3, 1, -1, 1, 0, -127, 0]);
    expect(d16Of(blocks, 1)).toBe(0);
    expect([...blocks.subarray(36, 68)].every((v) => v === 0)).toBe(true);
  });

  test('every element within d/2 + 127·|d - f16(d)| of q·f16(d) (d the float32 scale)', () => {
    const x = testValues(301, 5).map((v) => (Number.isFinite(v) ? v : 0));
    const blocks = quantizeGgmlQ8_0(x);
    for (let b = 0; b < 301; b++) {
      let amax = 0;
      for (let i = 0; i < 32; i++) amax = Math.max(amax, Math.abs(x[b * 32 + i]));
      const d = Math.fround(amax / 127);
      const d16 = d16Of(blocks, b);
      expect(Math.abs(d16 - d)).toBeLessThanOrEqual(d * 2 ** -11 + 2 ** -25); // f16 rounding (subnormal f16 steps are 2^-24)
      // 1e-6·d: float32 rounding of x·(1/d); 2^-148: two float32 subnormal steps.
      const bound = d / 2 + 127 * Math.abs(d - d16) + 1e-6 * d + 2 ** -148;
      for (let i = 0; i < 32; i++) expect(Math.abs(x[b * 32 + i] - qOf(blocks, b, i) * d16)).toBeLessThanOrEqual(bound);
    }
  });
});

describe('the native quantizer equals the reference', () => {
  /** The values stored as `dtype` at an odd offset of a file of their own. */
  function stored(values: Float32Array, dtype: 'f32' | 'f16' | 'bf16'): MappedSource {
    let bytes: Uint8Array;
    if (dtype === 'f32') bytes = new Uint8Array(values.buffer.slice(0));
    else bytes = new Uint8Array(Uint16Array.from(values, (v) => (dtype === 'f16' ? f32ToF16(v) : f32ToBf16(v))).buffer);
    const dir = fresh('src');
    fs.mkdirSync(dir, { recursive: true });
    const file = path.join(dir, `values.${dtype}`);
    fs.writeFileSync(file, Buffer.concat([Buffer.from([7, 7, 7]), Buffer.from(bytes)]));
    const source = mapFile(file);
    sources.push(source);
    return source;
  }
  /** What the file holds, widened to float32 (the reference's input). */
  const widened = (values: Float32Array, dtype: 'f32' | 'f16' | 'bf16') =>
    dtype === 'f32' ? values : values.map((v) => (dtype === 'f16' ? f16ToF32(f32ToF16(v)) : new Float32Array(new Uint32Array([f32ToBf16(v) << 16]).buffer)[0]));

  // 1, 3 and 7 blocks; 257 and 519 cross the native decode block of 256 blocks.
  test.each([1, 3, 7, 257, 519])('%d blocks, from f32, f16, bf16 and a Float32Array', async (blocks) => {
    const values = testValues(blocks, blocks);
    for (const dtype of ['f32', 'f16', 'bf16'] as const) {
      const src = stored(values, dtype);
      const out = new Uint8Array(blocks * 34);
      await native().quantizeGgmlQ8_0(src.file, 3, dtype, values.length, out);
      expect(Buffer.from(out).equals(Buffer.from(quantizeGgmlQ8_0(widened(values, dtype))))).toBe(true);
    }
    const out = new Uint8Array(blocks * 34);
    await native().quantizeGgmlQ8_0(values, out);
    expect(Buffer.from(out).equals(Buffer.from(quantizeGgmlQ8_0(values)))).toBe(true);
  });

  test('from q8_0 (ajc1: int8 and float32 scales per group) from odd block offsets, as dequantize-then-quantize', async () => {
    const w = await readWeights(AJC1);
    try {
      const view = w.tensors.find((t) => t.dtype === 'q8_0')!;
      expect(view.scales!.groupSize % 32).toBe(0);
      // Starts inside a group (5 blocks = 160 elements) and at 0; odd block counts.
      for (const [first, blocks] of [[0, 1], [160, 7], [32 * 301, 257]]) {
        const out = new Uint8Array(blocks * 34);
        const s = view.scales!;
        await native().quantizeGgmlQ8_0(view.source.file, view.byteOffset + first, 'q8_0', blocks * 32, out, s.byteOffset, s.groupSize, first);
        expect(Buffer.from(out).equals(Buffer.from(quantizeGgmlQ8_0(readF32(view, first, blocks * 32))))).toBe(true);
      }
      const s = view.scales!;
      const beyond = view.source.byteLength - s.byteOffset;
      expect(() => native().quantizeGgmlQ8_0(view.source.file, view.byteOffset, 'q8_0', 32, new Uint8Array(34), s.byteOffset + beyond, s.groupSize, 0)).toThrow(/outside the mapping/);
    } finally {
      closeWeights(w);
    }
  });

  test('the event loop turns while a large tensor is quantized', async () => {
    const values = testValues(1 << 18, 9); // 8 Mi elements
    const out = new Uint8Array((values.length / 32) * 34);
    const watch = watchEventLoop();
    await native().quantizeGgmlQ8_0(values, out);
    expect(watch.stop().ticks).toBeGreaterThan(0);
    expect(Buffer.from(out.subarray(0, 34 * 64)).equals(Buffer.from(quantizeGgmlQ8_0(values.subarray(0, 32 * 64))))).toBe(true);
  });

  test('bad arguments are refused before any work', () => {
    expect(() => native().quantizeGgmlQ8_0(new Float32Array(33), new Uint8Array(34))).toThrow(/multiple of 32/);
    expect(() => native().quantizeGgmlQ8_0(new Float32Array(32), new Uint8Array(33))).toThrow(/33 elements, expected 34/);
    const src = stored(new Float32Array(32), 'f32');
    expect(() => native().quantizeGgmlQ8_0(src.file, 8, 'f32', 32, new Uint8Array(34))).toThrow(/outside the mapping/);
  });
});

const LLAMA_Q8 = fixture('gguf-quants', 'llama-ropefreqs', 'llama-ropefreqs.Q8_0.gguf');

describe("llama.cpp's Q8_0 file (llama-quantize) rebuilt from its float32 values", () => {
  test('every Q8_0 tensor: quantizing its dequantized values gives the same blocks', async () => {
    const w = await readWeights(LLAMA_Q8);
    try {
      const q8 = w.tensors.filter((t) => t.dtype === 'ggml_q8_0');
      expect(q8.length).toBe(16);
      for (const view of q8) {
        const blocks = new Uint8Array(view.byteLength);
        await native().quantizeGgmlQ8_0(await dequantize(view), blocks);
        expect(Buffer.from(blocks).equals(view.source.bytes.subarray(view.byteOffset, view.byteOffset + view.byteLength))).toBe(true);
      }
    } finally {
      closeWeights(w);
    }
  });

  test('Q8_0 -> F32 GGUF -> `weightmap convert --quant q8_0` is the llama.cpp file byte for byte', async () => {
    const dir = fresh('roundtrip');
    const f32 = path.join(dir, 'f32.gguf');
    const q8 = path.join(dir, 'q8.gguf');
    await convert(LLAMA_Q8, f32, { to: 'gguf', dtype: 'f32' });
    const w = await readWeights(f32);
    try {
      expect(new Set(w.tensors.map((t) => t.dtype))).toEqual(new Set(['f32']));
    } finally {
      closeWeights(w);
    }
    const cli = await runCli(['convert', f32, q8, '--to', 'gguf', '--quant', 'q8_0', '--no-progress']);
    expect(cli.exitCode).toBe(0);
    expect(fs.readFileSync(q8).equals(fs.readFileSync(LLAMA_Q8))).toBe(true);
  });
});

const BIN = fixture('llama-stories260k', 'stories260K.bin');
const PROMPTS: Record<string, string> = {
  [BIN]: 'Once upon a time, Lily met a big dog. "Hi!"',
  [AJC1]: '<|im_start|>user\nHéllo, wörld! 1234 你好 <think>\n</think><|im_end|>\n<|im_start|>assistant\n',
};

async function greedy(file: string, prompt: string): Promise<number[]> {
  const model = await loadModel(file, { threads: 1, contextLength: 128 });
  try {
    const generation = model.generate(prompt, { maxTokens: 16, temperature: 0 });
    await generation.text();
    return [...generation.tokens];
  } finally {
    model.dispose();
  }
}

describe('fixture models converted to Q8_0 GGUF generate as their sources', () => {
  test.each([
    ['llama2.c stories260K', BIN, [] as FormatName[]],
    ['ajc1 qwen3-tiny', AJC1, [] as FormatName[]],
    ['a safetensors folder converted from ajc1', AJC1, ['safetensors'] as FormatName[]],
    // HF rows are in 'half' order: the GGUF llama q/k rows are permuted before quantization.
    ['a safetensors folder converted from llama2.c', BIN, ['safetensors'] as FormatName[]],
  ])('%s', async (_label, src, chain) => {
    let from = src;
    for (const to of chain) {
      const dir = fresh(to);
      await convert(from, path.join(dir, 'model.safetensors'), { to });
      from = dir;
    }
    const out = path.join(fresh('q8'), 'model.gguf');
    await convert(from, out, { to: 'gguf', quant: 'q8_0' });
    const w = await readWeights(out);
    try {
      // Matrices Q8_0, except rows that are no whole number of blocks (stories260K's ffn of 172): F16, as llama-quantize does.
      const expected = (shape: number[]) => (shape.length < 2 ? 'f32' : shape[shape.length - 1] % 32 === 0 ? 'ggml_q8_0' : 'f16');
      for (const t of w.tensors) expect([t.name, t.dtype]).toEqual([t.name, expected(t.shape)]);
      expect([w.metadata['general.file_type'], w.metadata['general.quantization_version']]).toEqual([7, 2]);
    } finally {
      closeWeights(w);
    }
    expect(await greedy(out, PROMPTS[src])).toEqual(await greedy(src, PROMPTS[src]));
  });

  test('ajc1 with groups of 32: the GGUF blocks hold its int8 values, its scales rounded to f16', async () => {
    const ajc1 = path.join(fresh('gs32'), 'model.bin');
    await convert(AJC1, ajc1, { to: 'ajc1', groupSize: 32 });
    const out = path.join(fresh('gs32-q8'), 'model.gguf');
    await convert(ajc1, out, { to: 'gguf', quant: 'q8_0' });
    const [src, dst] = [await readWeights(ajc1), await readWeights(out)];
    try {
      const quantized = src.tensors.filter((t) => t.dtype === 'q8_0');
      expect(quantized.length).toBeGreaterThan(0);
      for (const view of quantized) {
        const blocks = dst.tensors.find((t) => t.name === view.name)!;
        expect(blocks.dtype).toBe('ggml_q8_0');
        const bytes = blocks.source.bytes.subarray(blocks.byteOffset, blocks.byteOffset + blocks.byteLength);
        const q = new Int8Array(view.source.bytes.buffer, view.source.bytes.byteOffset + view.byteOffset, view.byteLength);
        const s = view.scales!;
        const scales = new Float32Array(new Uint8Array(view.source.bytes.subarray(s.byteOffset, s.byteOffset + s.byteLength)).buffer);
        for (let b = 0; b < scales.length; b++) {
          for (let i = 0; i < 32; i++) if (qOf(bytes, b, i) !== q[b * 32 + i]) throw new Error(`${view.name} block ${b}: q[${i}] ${qOf(bytes, b, i)} != ${q[b * 32 + i]}`);
          expect(Math.abs(d16Of(bytes, b) - scales[b])).toBeLessThanOrEqual(scales[b] * 2 ** -11 + 2 ** -25); // f16 rounding, subnormal f16 included
        }
      }
    } finally {
      closeWeights(src);
      closeWeights(dst);
    }
  });

  test('`convert --help` offers q8_0; GGUF refuses group sizes other than 32', async () => {
    const help = await runCli(['convert', '--help']);
    expect(help.stdout).toMatch(/--quant <type>.*q8_0/);
    await expect(convert(BIN, path.join(fresh('gs'), 'm.gguf'), { to: 'gguf', quant: 'q8_0', groupSize: 64 })).rejects.toThrow(/32/);
  });
});
