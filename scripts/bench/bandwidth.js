#!/usr/bin/env node
// Read bandwidth probe: how fast can 1 and N threads stream a buffer much larger than the caches
// (the ceiling for memory-bound decode: tokens/s <= GB/s ÷ bytes of weights per token).
// Reports GB/s (10^9 bytes) per thread count as median [min..max] over repetitions, without and
// with software prefetch (--prefetch bytes ahead, default 4096; the loads are the widest the
// active ISA has: native/kernels/read_probe.h).
//   node scripts/bench/bandwidth.js [--mb 1024] [--reps 7] [--threads 1,2] [--prefetch 4096]
'use strict';
require('../args').scriptArgs('bandwidth.js [--mb 1024] [--reps 7] [--threads 1,2] [--prefetch 4096]', { options: { mb: 'string', reps: 'string', threads: 'string', prefetch: 'string' } });
const loadAddon = require('./addon');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const mb = Number(opt('mb', '1024'));
const reps = Number(opt('reps', '7'));
const prefetch = Number(opt('prefetch', '4096'));
const { kernels } = loadAddon();
const threadCounts = opt('threads', [...new Set([1, 2, kernels.physicalCores()])].join(','))
  .split(',')
  .map(Number);

const view = new BigUint64Array(Math.floor((mb * 1048576) / 8));
for (let i = 0; i < view.length; i += 512) view[i] = BigInt(i); // touch every page before timing
const bytes = view.byteLength;

function stats(values) {
  const s = [...values].sort((a, b) => a - b);
  return { median: s[Math.floor(s.length / 2)], min: s[0], max: s[s.length - 1] };
}

console.log(`read bandwidth over ${mb} MiB, ${reps} repetitions (physical cores: ${kernels.physicalCores()})`);
for (const threads of threadCounts) {
  kernels.readBandwidth(view, threads, 1); // warm-up
  const row = (ahead) => {
    const gbs = [];
    for (let r = 0; r < reps; r++) gbs.push(bytes / kernels.readBandwidth(view, threads, 1, ahead) / 1e9);
    const { median, min, max } = stats(gbs);
    return `${median.toFixed(1)} GB/s  [${min.toFixed(1)} .. ${max.toFixed(1)}]`;
  };
  console.log(`  ${threads} thread${threads > 1 ? 's' : ' '}: ${row(0)};  prefetch ${prefetch}: ${row(prefetch)}`);
}
