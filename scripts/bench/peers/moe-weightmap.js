#!/usr/bin/env node
// weightmap's MoE measurements beside the timed runs (moe-rows.js), each in its own process:
//  - resident FILE THREADS TOKENS: TOKENS single-token evals from a fresh session (greedy on the
//    logits), then the process's resident set from /proc/self/status: RssFile (pages of the mapped
//    file in this process: the experts routed to so far) and RssAnon (heap, KV cache, scratch);
//  - first FILE THREADS: from the start of this script, readWeights + DecoderEngine.load + the first
//    token's logits of a one-token prompt (the file's pages as the parent left them: dropped, they
//    are read from disk, only those the first token touches).
// Prints one JSON object.
'use strict';
const fs = require('node:fs');
const { performance } = require('node:perf_hooks');
const { readWeights } = require('../../../dist/cjs/formats');
const { DecoderEngine } = require('../../../dist/cjs/engines/decoder');

const kib = (name) => Number(new RegExp(`${name}:\\s+(\\d+)`).exec(fs.readFileSync('/proc/self/status', 'utf8'))[1]) * 1024;

function argmax(x) {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

async function main() {
  const [mode, file, threads, tokens] = process.argv.slice(2);
  const t0 = performance.now();
  const weights = await readWeights(file);
  const engine = await DecoderEngine.load(weights, { threads: Number(threads) });
  if (mode === 'first') {
    const s = engine.createSession({ contextLength: 8 });
    await s.eval(Int32Array.of(1000));
    console.log(JSON.stringify({ firstTokenMs: performance.now() - t0 }));
    return;
  }
  const n = Number(tokens);
  const s = engine.createSession({ contextLength: n + 2 });
  let logits = await s.eval(Int32Array.of(1000));
  for (let i = 1; i < n; i++) logits = await s.eval(Int32Array.of(argmax(logits)));
  console.log(JSON.stringify({ tokens: n, rssFileBytes: kib('RssFile'), rssAnonBytes: kib('RssAnon'), fileBytes: fs.statSync(file).size }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
