#!/usr/bin/env node
// One node-llama-cpp run of the side-by-side benchmark, in its own process: loads FILE (CPU only),
// warms up, then times a PROMPT-token prefill (evaluateWithoutGeneratingNewTokens on an empty
// sequence, one batch) and DECODE tokens generated from position 0 at temperature 0 (its
// evaluate() generator: each step is one decode plus its greedy sampling, as an application runs it).
// Prints {"prefill": tok/s, "decode": tok/s}.
//   node decoder-node-llama-cpp.mjs ENTRY FILE VOCAB THREADS PROMPT DECODE   (ENTRY: node-llama-cpp's dist/index.js)
import { createRequire } from 'node:module';
import { performance } from 'node:perf_hooks';

const { promptIds } = createRequire(import.meta.url)('./prompt.js');
const [entry, file, vocabSize, threads, promptLength, decodeLength] = process.argv.slice(2);
const { getLlama } = await import(entry);
const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
const model = await llama.loadModel({ modelPath: file });
const prompt = [...promptIds(Number(promptLength), Number(vocabSize))];
const decode = Number(decodeLength);
const context = await model.createContext({ contextSize: prompt.length + decode + 16, batchSize: prompt.length, threads: Number(threads) });
const sequence = context.getSequence();

await sequence.evaluateWithoutGeneratingNewTokens(prompt.slice(0, 16));
await sequence.clearHistory();

let t = performance.now();
await sequence.evaluateWithoutGeneratingNewTokens(prompt);
const prefill = prompt.length / ((performance.now() - t) / 1000);
await sequence.clearHistory();

// A random model may pick an end-of-generation token; the rate counts the tokens generated.
let generated = 0;
t = performance.now();
for await (const _ of sequence.evaluate([prompt[0]], { temperature: 0, yieldEogToken: true })) {
  if (++generated >= decode) break;
}
const decodeRate = generated / ((performance.now() - t) / 1000);
await context.dispose();
await model.dispose();
console.log(JSON.stringify({ prefill, decode: decodeRate }));
