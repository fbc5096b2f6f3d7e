/**
 * Fuzzing every reader with every fixture file: random truncations, bit flips, byte overwrites
 * (biased toward headers, where the structure lives) and random files. Every outcome must be a
 * successful read whose tensor views lie inside their files, or a WeightFormatError: never
 * another exception, never a crash. Bounded to WEIGHTMAP_FUZZ_SECONDS (default 30) in total.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WeightFormatError } from '../../lib/errors';
import { detectFormat, readWeights } from '../../lib/formats';
import type { ReadOptions } from '../../lib/formats/types';
import { closeWeights, type FormatName, type ModelWeights } from '../../lib/weights';
import { fixture, tempDir } from '../helpers/fixtures';
import { mulberry32 } from '../helpers/rng';

const SECONDS = Number(process.env.WEIGHTMAP_FUZZ_SECONDS ?? 30);
const SEED = Number(process.env.WEIGHTMAP_FUZZ_SEED ?? 20261122);

interface Target {
  format: FormatName;
  /** The file to mutate (relative to `folder` for folder formats). */
  file: string;
  /** For folder formats: the folder to copy and read. */
  folder?: string;
  /** Files copied unchanged beside the mutated one (MOON's config.json). */
  sidecars?: string[];
  options?: ReadOptions;
}

const sepweight = fixture('llama-stories260k', 'sepweight');
const targets: Target[] = [
  { format: 'tllm', file: fixture('tllm-tiny', 'model.tllm') },
  { format: 'moon', file: fixture('moon-tiny', 'model.moon'), sidecars: [fixture('moon-tiny', 'config.json')] },
  { format: 'embd', file: fixture('embd-minilm-tiny', 'model.weights') },
  { format: 'embd', file: fixture('embd-minilm-tiny', 'model.weights'), options: { verifyChecksums: false } },
  { format: 'ajc1', file: fixture('ajc1-qwen3-tiny', 'model.bin') },
  { format: 'llama2c', file: fixture('llama-stories260k', 'stories260K.bin') },
  { format: 'gguf', file: fixture('llama-stories260k', 'stories260K.gguf') },
  { format: 'gguf', file: fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf') },
  { format: 'npy', file: fixture('llama-stories260k', 'sepweight', 'mid', '0', 'self_attn.q_proj.weight.npy') },
  { format: 'sepweight', folder: sepweight, file: path.join('mid', '1', 'mlp.up_proj.weight.npy') },
  { format: 'sepweight', folder: sepweight, file: 'config.json' },
];

interface Mutation {
  kind: string;
  apply: (b: Buffer) => Buffer;
}

function mutation(rand: () => number, size: number): Mutation {
  const int = (n: number) => Math.floor(rand() * n);
  // Offsets biased toward the start of the file, where headers and tables live.
  const offset = () => (rand() < 0.7 ? int(Math.min(size, 4096)) : int(size));
  const copyWith = (b: Buffer, edit: (c: Buffer) => void) => {
    const c = Buffer.from(b);
    edit(c);
    return c;
  };
  switch (int(5)) {
    case 0: {
      const n = rand() < 0.5 ? int(Math.min(size, 4096)) : int(size);
      return { kind: `truncate to ${n}`, apply: (b) => b.subarray(0, n) };
    }
    case 1: {
      const flips = Array.from({ length: 1 + int(8) }, () => [offset(), 1 << int(8)] as const);
      return {
        kind: `flip ${flips.length} bits`,
        apply: (b) => copyWith(b, (c) => flips.forEach(([o, bit]) => o < c.length && (c[o] ^= bit))),
      };
    }
    case 2: {
      const at = offset();
      const bytes = Buffer.from(Array.from({ length: 1 + int(16) }, () => (rand() < 0.3 ? 0xff : int(256))));
      return {
        kind: `overwrite ${bytes.length} bytes at ${at}`,
        apply: (b) => copyWith(b, (c) => bytes.copy(c, Math.min(at, Math.max(0, c.length - 1)))),
      };
    }
    case 3: {
      const n = 1 + int(64);
      const fill = int(256);
      return { kind: `append ${n} bytes`, apply: (b) => Buffer.concat([b, Buffer.alloc(n, fill)]) };
    }
    default: {
      // A size-like u32 field set to an extreme value.
      const at = offset() & ~3;
      const value = [0, 1, 0x7fffffff, 0xffffffff, 0x80000000, 64][int(6)];
      return {
        kind: `u32 ${value} at ${at}`,
        apply: (b) => copyWith(b, (c) => at + 4 <= c.length && c.writeUInt32LE(value >>> 0, at)),
      };
    }
  }
}

/** A successful read must only describe bytes that exist. */
function checkViews(weights: ModelWeights): void {
  for (const t of weights.tensors) {
    const limit = t.source.byteLength;
    expect(t.byteOffset).toBeGreaterThanOrEqual(0);
    expect(t.byteOffset + t.byteLength).toBeLessThanOrEqual(limit);
    if (t.scales) expect(t.scales.byteOffset + t.scales.byteLength).toBeLessThanOrEqual(limit);
  }
}

describe('reader fuzzing', () => {
  const tmp = tempDir('weightmap-fuzz-');
  afterAll(() => tmp.cleanup());

  test(`every mutated fixture reads or fails with WeightFormatError (${SECONDS}s budget, seed ${SEED})`, async () => {
    const rand = mulberry32(SEED);
    const deadline = Date.now() + SECONDS * 1000;
    const stats = new Map<string, { runs: number; ok: number; codes: Record<string, number> }>();
    const originals = new Map(targets.map((t) => [t, fs.readFileSync(t.folder ? path.join(t.folder, t.file) : t.file)]));
    let iterations = 0;
    while (Date.now() < deadline) {
      const target = targets[iterations % targets.length];
      const original = originals.get(target)!;
      const m = mutation(rand, original.length);
      // One folder per case: the (copied) tree, or the mutated file with its sidecars.
      const caseDir = path.join(tmp.dir, `case-${iterations}`);
      let readPath = caseDir;
      if (target.folder) {
        fs.cpSync(target.folder, caseDir, { recursive: true });
        fs.writeFileSync(path.join(caseDir, target.file), m.apply(original));
      } else {
        fs.mkdirSync(caseDir);
        for (const sidecar of target.sidecars ?? []) fs.copyFileSync(sidecar, path.join(caseDir, path.basename(sidecar)));
        readPath = path.join(caseDir, path.basename(target.file));
        fs.writeFileSync(readPath, m.apply(original));
      }
      const key = `${target.format}:${path.basename(target.file)}${target.options ? ' (checksums off)' : ''}`;
      const s = stats.get(key) ?? { runs: 0, ok: 0, codes: {} };
      stats.set(key, s);
      s.runs++;
      try {
        const weights = await readWeights(readPath, { ...target.options, format: target.format });
        checkViews(weights);
        closeWeights(weights);
        s.ok++;
      } catch (error) {
        if (!(error instanceof WeightFormatError)) {
          throw new Error(`${key}, iteration ${iterations} (seed ${SEED}), ${m.kind}: ${(error as Error)?.stack ?? error}`);
        }
        s.codes[error.code] = (s.codes[error.code] ?? 0) + 1;
      }
      try {
        detectFormat(readPath);
      } catch (error) {
        if (!(error instanceof WeightFormatError)) throw error;
      }
      fs.rmSync(caseDir, { recursive: true, force: true });
      iterations++;
    }
    const lines = [...stats].map(([k, s]) => `  ${k}: ${s.runs} runs, ${s.ok} read, errors ${JSON.stringify(s.codes)}`);
    // eslint-disable-next-line no-console
    console.log(`fuzz: ${iterations} iterations in ${SECONDS}s\n${lines.join('\n')}`);
    expect(iterations).toBeGreaterThan(targets.length);
  }, (SECONDS + 60) * 1000);

  test('random files are rejected by every reader with WeightFormatError', async () => {
    const rand = mulberry32(SEED + 1);
    const formats: FormatName[] = ['tllm', 'moon', 'embd', 'ajc1', 'llama2c', 'gguf', 'npy', 'safetensors'];
    for (let i = 0; i < 100; i++) {
      const file = path.join(tmp.dir, `random-${i}.bin`);
      fs.writeFileSync(file, Buffer.from(Array.from({ length: Math.floor(rand() * 600) }, () => Math.floor(rand() * 256))));
      for (const format of formats) {
        await expect(readWeights(file, { format })).rejects.toBeInstanceOf(WeightFormatError);
      }
      fs.rmSync(file);
    }
  });
});
