/**
 * MXFP4 (GGUF type 39) against llama.cpp: a tiny Qwen3 GGUF whose FFN matrices (and an extra
 * tensor with e8m0 exponents from the subnormal scales to 2^120) were quantized and written by
 * llama.cpp's own gguf-py, read by us, dequantized bit for bit equal to llama.cpp's C
 * dequantize_row_mxfp4 (scripts/interop/mxfp4-gguf.py calls it from libggml-base.so).
 *
 * Needs the benchmarks' peer cache (scripts/bench/peers/cache.js: WEIGHTMAP_PEERS_CACHE, default
 * ~/.cache/weightmap-peers) with llama.cpp's source and a build of libggml-base.so, and python3
 * with numpy; skipped without them (`node scripts/bench/peers.js` builds the cache).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

import { dequantize } from '../../lib/formats/dequantize';
import { readWeights } from '../../lib/formats';
import { canonicalDecoderName } from '../../lib/formats/gguf';
import { closeWeights, findTensor, type ModelWeights } from '../../lib/addon/weights';
import { tempDir } from '../helpers/fixtures';

const CACHE = process.env.WEIGHTMAP_PEERS_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-peers');
const LLAMA_CPP = path.join(CACHE, 'llama.cpp');
const usable =
  fs.existsSync(path.join(LLAMA_CPP, 'gguf-py', 'gguf', 'quants.py')) &&
  fs.existsSync(path.join(LLAMA_CPP, 'build', 'bin', 'libggml-base.so')) &&
  spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;
const suite = usable ? describe : describe.skip;

suite('MXFP4 tensors written by llama.cpp', () => {
  const tmp = tempDir('weightmap-mxfp4-');
  let weights: ModelWeights;
  let manifest: { tensors: Record<string, { shape: number[]; file: string }> };

  beforeAll(async () => {
    const script = path.join(__dirname, '..', '..', 'scripts', 'interop', 'mxfp4-gguf.py');
    const run = spawnSync('python3', [script, LLAMA_CPP, tmp.dir], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`mxfp4-gguf.py failed: ${run.stderr}`);
    manifest = JSON.parse(fs.readFileSync(path.join(tmp.dir, 'manifest.json'), 'utf8'));
    weights = await readWeights(path.join(tmp.dir, 'mxfp4.gguf'));
  }, 60_000);
  afterAll(() => {
    if (weights) closeWeights(weights);
    tmp.cleanup();
  });

  test('every MXFP4 tensor is a ggml_mxfp4 view of 17-byte blocks, dequantized bit for bit as dequantize_row_mxfp4', async () => {
    const names = Object.keys(manifest.tensors);
    expect(names.length).toBe(4);
    for (const name of names) {
      const { shape, file } = manifest.tensors[name];
      const view = findTensor(weights, canonicalDecoderName(name) ?? name)!;
      expect([name, view.dtype, view.shape, view.byteLength]).toEqual([name, 'ggml_mxfp4', shape, (shape[0] * shape[1] / 32) * 17]);
      const ours = await dequantize(view);
      const theirs = fs.readFileSync(path.join(tmp.dir, file));
      expect(Buffer.from(ours.buffer, ours.byteOffset, ours.byteLength).equals(theirs)).toBe(true);
    }
  });

  test('the wide tensor reaches the subnormal and the large e8m0 scales', () => {
    const view = findTensor(weights, 'extra.mxfp4_wide')!;
    const bytes = fs.readFileSync(path.join(tmp.dir, 'mxfp4.gguf')).subarray(view.byteOffset, view.byteOffset + view.byteLength);
    const exponents = Array.from({ length: bytes.length / 17 }, (_, b) => bytes[b * 17]);
    expect(Math.min(...exponents)).toBeLessThan(2);
    expect(Math.max(...exponents)).toBeGreaterThan(240);
  });
});
