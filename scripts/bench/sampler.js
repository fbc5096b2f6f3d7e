#!/usr/bin/env node
// The native sampler on a Qwen-sized vocabulary (151,936 logits, a few strong candidates as from a
// model): median and spread of one sample() per sampling path, one thread. The figure includes the
// copy of the 600 KB logits into the addon.
//   node scripts/bench/sampler.js [--reps 200]
'use strict';
require('../args').scriptArgs('sampler.js [--reps 200]', { options: { reps: 'string' } });
const os = require('node:os');
const { native } = require('../../dist/cjs/addon/native');

const args = process.argv.slice(2);
const reps = Number(args.includes('--reps') ? args[args.indexOf('--reps') + 1] : 200);
const { Sampler } = native();

let seed = 5;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
const gaussian = () => Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
const logits = Float32Array.from({ length: 151936 }, () => 2.5 * gaussian());
for (let j = 0; j < 20; j++) logits[j * 7001] = 8 + j * 0.4;

const cases = [
  ['greedy', {}],
  ['temperature', { temperature: 0.8 }],
  ['llama.cpp defaults', { temperature: 0.8, topK: 40, topP: 0.95, minP: 0.05, repeatPenalty: 1.1 }],
  ['top-p 0.9', { temperature: 0.7, topP: 0.9 }],
  ['top-p 0.999', { temperature: 0.7, topP: 0.999 }],
  ['min-p', { temperature: 0.7, minP: 0.05 }],
  ['top-k 5000', { temperature: 1, topK: 5000 }],
];
const sampler = new Sampler(1);
const recent = new Int32Array(64).map((_, i) => i * 100);
console.log(`vocabulary 151936, ${reps} samples per path, load average ${os.loadavg()[0].toFixed(1)}`);
console.log('| path | median µs | p10 µs | p90 µs |');
console.log('|---|---:|---:|---:|');
for (const [name, params] of cases) {
  const times = [];
  for (let r = 0; r < reps; r++) {
    const t0 = process.hrtime.bigint();
    sampler.sample(logits, params, recent);
    times.push(Number(process.hrtime.bigint() - t0) / 1e3);
  }
  times.sort((a, b) => a - b);
  const at = (q) => times[Math.min(times.length - 1, Math.floor(q * times.length))].toFixed(0);
  console.log(`| ${name} | ${at(0.5)} | ${at(0.1)} | ${at(0.9)} |`);
}
