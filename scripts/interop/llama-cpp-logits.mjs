#!/usr/bin/env node
/**
 * llama.cpp's logits and greedy tokens for a GGUF file, through node-llama-cpp (its prebuilt CPU
 * build in the benchmarks' peer cache, scripts/bench/peers/cache.js; not a dependency): one JSON
 * line { vocab, logits: [per prompt position, every id], greedy: [ids after the prompt] }.
 *
 *   node scripts/interop/llama-cpp-logits.mjs MODEL.gguf '[1,2,3]' 8
 */
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { nodeLlamaCpp } = require('../bench/peers/cache');
const [file, promptJson, steps] = process.argv.slice(2);
const prompt = JSON.parse(promptJson);
const { getLlama } = await import(nodeLlamaCpp().entry);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: file });
const context = await model.createContext({ contextSize: 64, threads: 1, batchSize: 64, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
const sequence = context.getSequence();
const out = await sequence.controlledEvaluate(prompt.map((token) => [token, { generateNext: { logits: true } }]));
const logits = out.map((o) => {
  const row = [];
  for (const [id, v] of o.next.logits.entries()) row[id] = v;
  return row;
});
await sequence.clearHistory();
const greedy = [];
for await (const token of sequence.evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
  greedy.push(token);
  if (greedy.length >= Number(steps)) break;
}
console.log(JSON.stringify({ vocab: logits[0].length, logits, greedy }));
await context.dispose();
await model.dispose();
