#!/usr/bin/env node
// One weightmap run of the side-by-side benchmark, in its own process: loads FILE, warms up, then
// times a PROMPT-token prefill (one eval, fresh session) and DECODE single-token evals from
// position 0 (fresh session, no sampling: the ids are fed as llama-bench's tg feeds them).
// DEPTH (default 0): both timings start after that many cached positions (an untimed prefill), as
// llama-bench's -d. Prints {"prefill": tok/s, "decode": tok/s}.
//   node decoder-weightmap.js FILE THREADS PROMPT DECODE [DEPTH]
'use strict';
const { performance } = require('node:perf_hooks');
const { readWeights } = require('../../../dist/cjs/formats');
const { DecoderEngine } = require('../../../dist/cjs/engines/decoder');
const { promptIds } = require('./prompt');

async function main() {
  const [file, threads, promptLength, decodeLength, depthLength = '0'] = process.argv.slice(2);
  const weights = await readWeights(file);
  const engine = await DecoderEngine.load(weights, { threads: Number(threads) });
  const prompt = promptIds(Number(promptLength), weights.config.vocabSize);
  const decode = Number(decodeLength);
  const depth = promptIds(Number(depthLength) + 1, weights.config.vocabSize).subarray(1);
  const contextLength = depth.length + prompt.length + decode + 1;
  // A session holding the depth's positions (untimed), its KV cache in the default type.
  const deep = async () => {
    const s = engine.createSession({ contextLength });
    if (depth.length > 0) await s.eval(depth);
    return s;
  };
  {
    const warm = engine.createSession({ contextLength });
    await warm.eval(prompt.subarray(0, 16));
    for (let i = 0; i < 4; i++) await warm.eval(prompt.subarray(i, i + 1));
    warm.dispose();
  }
  const p = await deep();
  let t = performance.now();
  await p.eval(prompt);
  const prefill = prompt.length / ((performance.now() - t) / 1000);
  p.dispose();

  const d = await deep();
  t = performance.now();
  for (let i = 0; i < decode; i++) await d.eval(prompt.subarray(i % prompt.length, (i % prompt.length) + 1));
  const decodeRate = decode / ((performance.now() - t) / 1000);
  d.dispose();
  engine.dispose();
  console.log(JSON.stringify({ prefill, decode: decodeRate }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
