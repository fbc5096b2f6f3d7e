#!/usr/bin/env node
// One weightmap run of the embedding side by side, in its own process: loads the sentence-
// transformers folder DIR with QUANT (f32 or int8), warms up, then embeds the texts of TEXTS (a
// JSON array) ROUNDS times in batches of BATCH. Prints {"embed": sentences/s, "first": the first text's embedding}.
//   node embed-weightmap.js DIR QUANT THREADS TEXTS BATCH ROUNDS
'use strict';
const fs = require('node:fs');
const { performance } = require('node:perf_hooks');
const { loadEmbedder } = require('../../../dist/cjs/index.js');

async function main() {
  const [dir, quant, threads, textsFile, batch, rounds] = process.argv.slice(2);
  const texts = JSON.parse(fs.readFileSync(textsFile, 'utf8'));
  const embedder = await loadEmbedder(dir, { threads: Number(threads), quant });
  await embedder.embed(texts, { batchSize: Number(batch) });
  const t = performance.now();
  for (let r = 0; r < Number(rounds); r++) await embedder.embed(texts, { batchSize: Number(batch) });
  const rate = (texts.length * Number(rounds)) / ((performance.now() - t) / 1000);
  const [first] = await embedder.embed(texts.slice(0, 1));
  embedder.dispose();
  console.log(JSON.stringify({ embed: rate, first: [...first] }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
