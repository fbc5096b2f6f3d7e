#!/usr/bin/env node
// An mmproj's vision encoder against llama.cpp's mtmd on the same files, interleaved: weightmap's
// encode of one image (VisionEngine.encodeRgb, wall time, after a warm-up encode) and the encode
// time llama-mtmd-cli reports ("batch encoding done in N ms") for the same image, per thread count.
// The files come from scripts/interop/gemma3-vision-gguf.py with VISION_SHAPE set to real sizes
// (SigLIP-So400m at 896 px: 896,14,1152,4304,27,16,4; fewer layers where time is short).
// Needs the built package (npm run build:ts), the addon, and the peer cache's llama-mtmd-cli.
//   node scripts/bench/vision-mmproj.js DIR [--threads 1,2] [--reps 1]
'use strict';
require('../args').scriptArgs('vision-mmproj.js DIR [--threads 1,2] [--reps 1]', { options: { threads: 'string', reps: 'string' }, positionals: [1, 1] });
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { dist } = require('./checkout');
const { readWeights } = require(dist('formats/index.js'));
const { closeWeights } = require(dist('addon/weights.js'));
const { VisionEngine } = require(dist('engines/vision.js'));

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const dir = args[0];
const threads = opt('threads', '1,2').split(',').map(Number);
const reps = Math.max(1, Number(opt('reps', '1')));
const peers = process.env.WEIGHTMAP_PEERS_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-peers');
const cli = path.join(peers, 'llama.cpp', 'build', 'bin', 'llama-mtmd-cli');

async function ours(weights, n, rgb) {
  const engine = await VisionEngine.load(weights, { threads: n });
  try {
    await engine.encodeRgb(rgb); // warm-up: pages faulted, scratch sized
    const t0 = performance.now();
    await engine.encodeRgb(rgb);
    return performance.now() - t0;
  } finally {
    engine.dispose();
  }
}

function llama(n) {
  const run = spawnSync(cli, ['-m', path.join(dir, 'gemma3-lm.gguf'), '--mmproj', path.join(dir, 'gemma3-mmproj.gguf'), '--image', path.join(dir, 'image.ppm'), '-p', 'x', '-n', '1', '--temp', '0', '-t', String(n), '-c', '4096', '-fa', 'off', '--jinja'], { encoding: 'utf8' });
  const m = /encoding done in (\d+) ms/.exec(run.stderr + run.stdout);
  if (!m) throw new Error(`llama-mtmd-cli printed no encode time: ${run.stderr.slice(-400)}`);
  return Number(m[1]);
}

(async () => {
  const weights = await readWeights(path.join(dir, 'gemma3-mmproj.gguf'));
  const rgb = new Uint8Array(fs.readFileSync(path.join(dir, 'image.rgb')));
  const c = weights.config;
  console.log(`encoder ${c.imageSize} px, patch ${c.patchSize}, width ${c.hiddenSize}, ffn ${c.intermediateSize}, ${c.numLayers} layers; CPU ${os.cpus()[0].model}`);
  for (const n of threads) {
    for (let r = 0; r < reps; r++) {
      const a = await ours(weights, n, rgb);
      const b = llama(n);
      console.log(`threads ${n}: weightmap ${a.toFixed(0)} ms, llama.cpp ${b} ms (${(b / a).toFixed(2)}x)`);
    }
  }
  closeWeights(weights);
})();
