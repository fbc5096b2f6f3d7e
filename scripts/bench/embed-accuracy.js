#!/usr/bin/env node
// How far the int8 encoder paths land from f32: cosine of each quantized vector to the f32 one
// (worst and median over texts of 5 to 104 words), on the MiniLM-shaped random model of
// scripts/bench/embed.js and on a copy whose LayerNorm gains have two outlier dimensions ×12 in
// every layer (trained BERTs have a few such features; they are what per-row int8 handles worst).
//   node scripts/bench/embed-accuracy.js [--model FILE] [--texts 64]
'use strict';
require('../args').scriptArgs('embed-accuracy.js [--model FILE] [--texts 64]', { options: { model: 'string', texts: 'string' } });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { closeWeights, loadEmbedder, readWeights, similarity, writeWeights } = require('../../dist/cjs/index.js');
const { ensureModel, VOCAB } = require('./embed.js');

const OUTLIER_DIMS = [77, 301];
const OUTLIER_GAIN = 12;

function arg(name, fallback) {
  const i = process.argv.indexOf(`--${name}`);
  return i < 0 ? fallback : process.argv[i + 1];
}

// The model with every LayerNorm gain's OUTLIER_DIMS scaled (written once, beside the model).
async function withOutliers(file) {
  const out = path.join(os.tmpdir(), 'weightmap-bench-embed', `${path.basename(file, '.embd')}-outliers.embd`);
  if (fs.existsSync(out)) return out;
  const weights = await readWeights(file);
  try {
    for (const t of weights.tensors) {
      if (!t.name.endsWith('LayerNorm.weight')) continue;
      const copy = Buffer.from(t.source.bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength));
      const gains = new Float32Array(copy.buffer, copy.byteOffset, copy.length / 4);
      for (const d of OUTLIER_DIMS) gains[d] *= OUTLIER_GAIN;
      t.source = { ...t.source, bytes: copy };
      t.byteOffset = 0;
    }
    await writeWeights(weights, out, { format: 'embd' });
  } finally {
    closeWeights(weights);
  }
  return out;
}

function makeTexts(count) {
  const words = fs
    .readFileSync(VOCAB, 'utf8')
    .split('\n')
    .slice(2000, 8000)
    .filter((w) => /^[a-z]+$/.test(w));
  let s = 7;
  const pick = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return words[s % words.length];
  };
  return Array.from({ length: count }, (_, i) => Array.from({ length: 5 + ((i * 7) % 100) }, pick).join(' '));
}

async function report(file, label, texts) {
  const f32 = await loadEmbedder(file, { quant: 'f32' });
  const reference = await f32.embed(texts);
  f32.dispose();
  for (const quant of ['int8', 'q8_0']) {
    const embedder = await loadEmbedder(file, { quant });
    const vectors = await embedder.embed(texts);
    embedder.dispose();
    const cos = vectors.map((v, i) => similarity(v, reference[i])).sort((a, b) => a - b);
    console.log(
      `${label.padEnd(9)} ${quant.padEnd(5)} cosine to f32 over ${texts.length} texts: worst ${cos[0].toFixed(6)}, ` +
        `median ${cos[cos.length >> 1].toFixed(6)}`,
    );
  }
}

async function main() {
  const file = arg('model') ?? (await ensureModel());
  const texts = makeTexts(Number(arg('texts', '64')));
  await report(file, 'random', texts);
  await report(await withOutliers(file), 'outliers', texts);
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
