#!/usr/bin/env node
// One transformers.js run of the embedding side by side, in its own process: a feature-extraction
// pipeline (onnxruntime-node, CPU, fp32) over the folder DIR (onnx/model.onnx + tokenizer files,
// found as a local model), mean pooling and L2 normalization as sentence-transformers does; warms
// up, then embeds the texts of TEXTS ROUNDS times in batches of BATCH. Prints {"embed": sentences/s, "first": the first text's embedding}.
//   node embed-transformers.mjs ENTRY DIR THREADS TEXTS BATCH ROUNDS   (ENTRY: transformers.node.mjs)
import fs from 'node:fs';
import path from 'node:path';
import { performance } from 'node:perf_hooks';

const [entry, dir, threads, textsFile, batch, rounds] = process.argv.slice(2);
const { env, pipeline } = await import(entry);
env.allowRemoteModels = false;
env.localModelPath = path.dirname(dir);
const texts = JSON.parse(fs.readFileSync(textsFile, 'utf8'));
const extract = await pipeline('feature-extraction', path.basename(dir), {
  device: 'cpu',
  dtype: 'fp32',
  session_options: { intraOpNumThreads: Number(threads), interOpNumThreads: 1 },
});
const embedAll = async () => {
  for (let i = 0; i < texts.length; i += Number(batch)) await extract(texts.slice(i, i + Number(batch)), { pooling: 'mean', normalize: true });
};
await embedAll();
const t = performance.now();
for (let r = 0; r < Number(rounds); r++) await embedAll();
const rate = (texts.length * Number(rounds)) / ((performance.now() - t) / 1000);
const first = (await extract(texts.slice(0, 1), { pooling: 'mean', normalize: true })).tolist()[0];
await extract.dispose();
console.log(JSON.stringify({ embed: rate, first }));
