#!/usr/bin/env node
/**
 * Interop check of the GGUF writer's Q8_0 against llama.cpp's own quantizer: for each source,
 * `weightmap convert SRC f32.gguf --to gguf` then `llama-quantize f32.gguf lq.gguf Q8_0`, against
 * `weightmap convert SRC ours.gguf --to gguf --quant q8_0`. Every tensor must have the same ggml
 * type (which tensors become Q8_0, which stay F32, which fall back to F16) and the same bytes.
 *
 *   npm run build:ts && node scripts/interop/llama-quantize-q8.js
 *
 * llama-quantize is built once into the benchmarks' peer cache outside the repository
 * (scripts/bench/peers/cache.js: WEIGHTMAP_PEERS_CACHE, default ~/.cache/weightmap-peers), from the
 * llama.cpp source that node-llama-cpp's npm package bundles. Sources: llama2.c stories260K.bin
 * (its ffn rows of 172 fall back to F16), ajc1-qwen3-tiny (its q8_0 re-quantized from float32),
 * and Hugging Face folders `weightmap convert --to safetensors` makes from both (the llama one
 * has its q/k rows permuted on the way to GGUF). One JSON line per source; exit code 1 when any
 * tensor differs.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { readWeights } = require('../../dist/cjs/formats/index.js');
const { closeWeights } = require('../../dist/cjs/weights.js');
const { llamaQuantize } = require('../bench/peers/cache');

const root = path.resolve(__dirname, '..', '..');
const fixtures = path.resolve(root, '..', 'shared', 'fixtures');
const cli = path.join(root, 'dist', 'cjs', 'cli', 'main.js');
const weightmap = (...args) => execFileSync(process.execPath, [cli, ...args, '--no-progress'], { stdio: ['ignore', 'ignore', 'inherit'] });

/** name -> { type, bytes } of every tensor of a GGUF file. */
async function tensorsOf(file) {
  const w = await readWeights(file);
  try {
    const bytes = fs.readFileSync(file);
    return new Map(w.metadata['gguf.tensors'].map((t) => [t.name, { type: t.ggmlType, bytes: bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength) }]));
  } finally {
    closeWeights(w);
  }
}

async function main() {
  const quantize = llamaQuantize();
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-lq-'));
  const sources = [
    ['llama2c-stories260K', path.join(fixtures, 'llama-stories260k', 'stories260K.bin')],
    ['ajc1-qwen3-tiny', path.join(fixtures, 'ajc1-qwen3-tiny', 'model.bin')],
  ];
  for (const [name, src] of [...sources]) {
    const dir = path.join(tmp, `${name}-hf`);
    weightmap('convert', src, path.join(dir, 'model.safetensors'), '--to', 'safetensors');
    sources.push([`safetensors-from-${name}`, dir]);
  }
  let failed = false;
  try {
    for (const [name, src] of sources) {
      const f32 = path.join(tmp, `${name}.f32.gguf`);
      const lq = path.join(tmp, `${name}.llama-quantize.gguf`);
      const ours = path.join(tmp, `${name}.weightmap.gguf`);
      weightmap('convert', src, f32, '--to', 'gguf');
      execFileSync(quantize.path, [f32, lq, 'Q8_0', '2'], { stdio: 'ignore' });
      weightmap('convert', src, ours, '--to', 'gguf', '--quant', 'q8_0');
      const [a, b] = [await tensorsOf(ours), await tensorsOf(lq)];
      const types = {};
      const differing = [];
      for (const [tensor, t] of a) {
        const u = b.get(tensor);
        types[t.type] = (types[t.type] ?? 0) + 1;
        if (!u || u.type !== t.type || !u.bytes.equals(t.bytes)) differing.push(tensor);
      }
      for (const tensor of b.keys()) if (!a.has(tensor)) differing.push(tensor);
      const passed = differing.length === 0;
      failed ||= !passed;
      console.log(JSON.stringify({ case: name, llamaCpp: `${quantize.release} (${quantize.commit})`, passed, tensors: a.size, ggmlTypes: types, differing }));
    }
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  process.exitCode = failed ? 1 : 0;
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
