#!/usr/bin/env node
// matvec_q8_rows (m activation rows, each weight group loaded once) against m calls of matvec_q8,
// one thread, per table: the kernel side of batched decoding. The weights ([rows, cols], 256 rows)
// stay in L2 as a 16-row block does in the batched step; the two are interleaved rep by rep and
// the best time of each kept (the machine is shared).
//   node scripts/bench/q8-rows.js [--cols 1024] [--group 32] [--m 8] [--reps 200]
'use strict';
require('../args').scriptArgs('q8-rows.js [--cols 1024] [--group 32] [--m 8] [--reps 200]', { options: { cols: 'string', group: 'string', m: 'string', reps: 'string' } });
const { performance } = require('node:perf_hooks');
const { native } = require('../../dist/cjs/addon/native');

const args = process.argv.slice(2);
const opt = (name, def) => Number(args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const rows = 256;
const cols = opt('cols', 1024);
const group = opt('group', 32);
const m = opt('m', 8);
const reps = opt('reps', 200);
const groups = cols / group;
const k = native().kernels;

let seed = 1;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) / 2 ** 32);
const wq = Int8Array.from({ length: rows * cols }, () => Math.floor(rand() * 256) - 128);
const ws = Float32Array.from({ length: rows * groups }, () => 0.001 + 0.05 * rand());
const xq = Int8Array.from({ length: m * cols }, () => Math.floor(rand() * 255) - 127);
const xs = Float32Array.from({ length: m * groups }, () => 0.001 + 0.05 * rand());
const y = new Float32Array(m * rows);

console.log(`rows ${rows}, cols ${cols}, group ${group}, m ${m}, best of ${reps}`);
console.log('isa | matvec_q8_rows µs | m × matvec_q8 µs | speedup');
for (const isa of k.availableIsas().filter((name) => name !== 'scalar')) {
  let rowsBest = Infinity;
  let eachBest = Infinity;
  for (let rep = 0; rep < reps; rep++) {
    let t = performance.now();
    k.matvecQ8Rows(isa, wq, ws, xq, xs, y, m, rows, cols, group, 0, rows);
    rowsBest = Math.min(rowsBest, performance.now() - t);
    t = performance.now();
    for (let i = 0; i < m; i++)
      k.matvecQ8(isa, wq, ws, xq.subarray(i * cols, (i + 1) * cols), xs.subarray(i * groups, (i + 1) * groups),
        y.subarray(i * rows, (i + 1) * rows), rows, cols, group, 1);
    eachBest = Math.min(eachBest, performance.now() - t);
  }
  console.log(`${isa} | ${(rowsBest * 1000).toFixed(1)} | ${(eachBest * 1000).toFixed(1)} | ${(eachBest / rowsBest).toFixed(2)}×`);
}
