/**
 * The GGUF files users download, made by llama.cpp's own llama-quantize (fixture gguf-quants:
 * llama with rope_freqs, qwen2 with q/k/v biases, qwen3 with QK-norm; Q4_0 ... IQ4_XS in per-tensor
 * mixes). Against the fixture's independent float64 reference:
 *  - every tensor's dtype and its dequantization, bit for bit (sha256 of the float32 values),
 *    whole (dequantize) and by ranges (readF32, what converting writers read);
 *  - the engine as loaded (blocks in place, 8-bit activations): logits after each prompt within
 *    the README's 0.05 at the last position and at the listed top ids of every prompt position,
 *    and the 16 greedy tokens exact;
 *  - the exact path (quant 'f32': weights dequantized, f32 activations): logits within 0.001;
 *  - GGUF written back from what was read: the same bytes; inspect: the fixture's type counts.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';

import { inspectReport, renderReport } from '../../lib/cli/inspect';
import { convert } from '../../lib/formats/writing/convert';
import { dequantize } from '../../lib/formats/quantization/dequantize';
import { DecoderEngine } from '../../lib/engines/decoder';
import { readWeights } from '../../lib/formats';
import { canonicalDecoderName } from '../../lib/formats/containers/gguf';
import { ggufFormat } from '../../lib/formats/containers/gguf-format';
import { readF32 as readF32View } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, findTensor, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readF32, readJson, tempDir } from '../helpers/fixtures';
import { argmax, greedy, maxAbsDiff } from './decoder-helpers';

interface Case {
  name: string;
  prompt: { ids: number[] };
  logits_file: { path: string };
  prompt_positions: { pos: number; top: [number, number][] }[];
  greedy: { tokens: number[] };
}
interface Variant {
  file: string;
  tensors: Record<string, { type: string; shape: number[]; sha256_f32: string }>;
  cases: Case[];
}

const FOLDERS = ['llama-ropefreqs', 'qwen2-bias', 'qwen3-qknorm'];
const FILES: [string, string, Variant][] = FOLDERS.flatMap((folder) =>
  (readJson('gguf-quants', folder, 'expected.json').variants as Variant[]).map((v): [string, string, Variant] => [folder, v.file, v]),
);
const TOL_8BIT = 0.05;
const TOL_F32 = 0.001;

/** Largest |ours - expected| over the top lists of every prompt position (compared by id). */
function topListDrift(all: Float32Array, vocab: number, c: Case): number {
  let worst = 0;
  for (const p of c.prompt_positions)
    for (const [id, logit] of p.top) worst = Math.max(worst, Math.abs(all[p.pos * vocab + id] - logit));
  return worst;
}

describe.each(FILES)('gguf-quants %s: %s', (folder, _file, variant) => {
  let weights: ModelWeights;
  beforeAll(async () => {
    weights = await readWeights(fixture('gguf-quants', folder, variant.file));
  });
  afterAll(() => closeWeights(weights));

  test('every tensor has its ggml type and dequantizes bit for bit', async () => {
    const types = weights.metadata['gguf.tensors'] as { name: string; type: string }[];
    expect(Object.fromEntries(types.map((t) => [t.name, t.type]))).toEqual(Object.fromEntries(Object.entries(variant.tensors).map(([n, t]) => [n, t.type])));
    for (const [name, want] of Object.entries(variant.tensors)) {
      const values = await dequantize(weights, canonicalDecoderName(name) ?? name);
      const digest = createHash('sha256').update(Buffer.from(values.buffer, values.byteOffset, values.byteLength)).digest('hex');
      expect(`${name}: ${digest}`).toBe(`${name}: ${want.sha256_f32}`);
      // the chunked reader writers convert with: any range, blocks cut anywhere
      const view = findTensor(weights, canonicalDecoderName(name) ?? name)!;
      const start = Math.min(37, values.length - 1);
      const count = Math.min(values.length - start, 1000);
      expect(readF32View(view, start, count)).toEqual(values.subarray(start, start + count));
    }
  });

  test('GGUF to GGUF passes every block type through: the file comes back byte for byte', async () => {
    const { dir, cleanup } = tempDir();
    try {
      const out = path.join(dir, 'copy.gguf');
      await ggufFormat.write!(weights, out);
      expect(fs.readFileSync(out).equals(fs.readFileSync(fixture('gguf-quants', folder, variant.file)))).toBe(true);
    } finally {
      cleanup();
    }
  });

  test('inspect shows the dtype mix and the bytes of each type', () => {
    const blockSize: Record<string, [number, number]> = {
      F32: [1, 4], Q4_0: [32, 18], Q4_1: [32, 20], Q5_0: [32, 22], Q8_0: [32, 34], IQ4_NL: [32, 18],
      Q2_K: [256, 84], Q3_K: [256, 110], Q4_K: [256, 144], Q5_K: [256, 176], Q6_K: [256, 210], IQ4_XS: [256, 136],
    };
    const want = new Map<string, { dtype: string; tensors: number; bytes: number }>();
    for (const t of Object.values(variant.tensors)) {
      const dtype = t.type === 'F32' ? 'f32' : `ggml_${t.type.toLowerCase()}`;
      const [values, bytes] = blockSize[t.type];
      const entry = want.get(dtype) ?? { dtype, tensors: 0, bytes: 0 };
      entry.tensors++;
      entry.bytes += (t.shape.reduce((a, b) => a * b, 1) / values) * bytes;
      want.set(dtype, entry);
    }
    const report = inspectReport(weights);
    expect(new Map(report.dtypes.map((d) => [d.dtype, d]))).toEqual(want);
    expect(renderReport(report)).toContain(`dtypes:       ${report.dtypes[0].dtype} ×${report.dtypes[0].tensors}`);
  });

  test('as loaded (blocks in place, 8-bit activations): logits within 0.05, greedy tokens exact', async () => {
    const engine = await DecoderEngine.load(weights, { threads: 2 });
    try {
      // Every block type runs in place from the mapping, Q8_0 included: nothing is converted or copied.
      expect(engine.loadInfo.converted).toBe(0);
      const vocab = engine.config.vocabSize;
      for (const c of variant.cases) {
        const session = engine.createSession({ contextLength: 64 });
        const all = await session.eval(c.prompt.ids, { allLogits: true });
        const last = all.subarray((c.prompt.ids.length - 1) * vocab);
        const expected = readF32('gguf-quants', folder, c.logits_file.path);
        expect(maxAbsDiff(last, expected)).toBeLessThanOrEqual(TOL_8BIT);
        expect(topListDrift(all, vocab, c)).toBeLessThanOrEqual(TOL_8BIT);
        session.truncate(0);
        const run = await greedy(session, c.prompt.ids, 16);
        expect(run.tokens).toEqual(c.greedy.tokens);
        session.dispose();
      }
    } finally {
      engine.dispose();
    }
  });

  test("exact path (quant 'f32'): logits within 0.001", async () => {
    const engine = await DecoderEngine.load(weights, { threads: 2, quant: 'f32' });
    try {
      const vocab = engine.config.vocabSize;
      for (const c of variant.cases) {
        const session = engine.createSession({ contextLength: 64 });
        const all = await session.eval(c.prompt.ids, { allLogits: true });
        expect(maxAbsDiff(all.subarray((c.prompt.ids.length - 1) * vocab), readF32('gguf-quants', folder, c.logits_file.path))).toBeLessThanOrEqual(TOL_F32);
        expect(topListDrift(all, vocab, c)).toBeLessThanOrEqual(TOL_F32);
        expect(argmax(all, vocab, c.prompt.ids.length - 1)).toBe(c.greedy.tokens[0]);
        session.dispose();
      }
    } finally {
      engine.dispose();
    }
  });
});

test.each([
  ['qwen3-qknorm', 'Q4_K_M', 'safetensors'],
  ['qwen2-bias', 'Q4_1', 'safetensors'],
  ['qwen3-qknorm', 'Q5_0', 'sepweight'],
] as const)('%s %s converts to %s through dequantization and runs the same (f32 path within 0.001)', async (folder, type, to) => {
  const { dir, cleanup } = tempDir();
  const [, , variant] = FILES.find(([f, file]) => f === folder && file.includes(type))!;
  try {
    const out = path.join(dir, 'model');
    await convert(fixture('gguf-quants', folder, variant.file), out, { to });
    const weights = await readWeights(out);
    expect(weights.config.architecture).toBe(folder.split('-')[0]);
    const engine = await DecoderEngine.load(weights, { threads: 2, quant: 'f32' });
    try {
      const c = variant.cases[0];
      const logits = await engine.createSession({ contextLength: 32 }).eval(c.prompt.ids);
      expect(maxAbsDiff(logits, readF32('gguf-quants', folder, c.logits_file.path))).toBeLessThanOrEqual(TOL_F32);
    } finally {
      engine.dispose();
      closeWeights(weights);
    }
  } finally {
    cleanup();
  }
});

test('a Llama 3 model (RoPE frequency factors) is refused by the formats that cannot hold the factors, not written without them', async () => {
  const { dir, cleanup } = tempDir();
  const [, , variant] = FILES.find(([f, file]) => f === 'llama-ropefreqs' && file.includes('Q4_0'))!;
  try {
    const source = fixture('gguf-quants', 'llama-ropefreqs', variant.file);
    for (const to of ['llama2c', 'safetensors', 'sepweight'] as const) {
      await expect(convert(source, path.join(dir, `out.${to}`), { to })).rejects.toThrow(/frequency factors/i);
    }
    expect(fs.readdirSync(dir)).toEqual([]);
  } finally {
    cleanup();
  }
});
