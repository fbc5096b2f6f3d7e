#!/usr/bin/env node
// CRC-32 throughput: the addon's crc32 (PCLMULQDQ fold where the CPU has it, and the portable
// slice-by-8 table; 1 and 2 threads) against zlib.crc32 on one 256 MB buffer of random bytes
// (resident before timing; best of REPS), then readWeights of an EMBD file with checksum
// verification on and off (median of REPS; skipped when the file is missing).
//   WEIGHTMAP_ADDON=build-x/Release/weightmap.node node scripts/bench/checksum.js [EMBD] [--reps N]
// WEIGHTMAP_DIST (default dist/cjs) names the compiled library for the readWeights part.
'use strict';
require('../args').scriptArgs('checksum.js [EMBD] [--reps N]', { options: { reps: 'string' }, positionals: [0, 1] });
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const zlib = require('node:zlib');
const { performance } = require('node:perf_hooks');
const loadAddon = require('./addon.js');

const args = process.argv.slice(2);
const repsAt = args.indexOf('--reps');
const REPS = repsAt >= 0 ? Number(args[repsAt + 1]) : 5;
const positional = args.filter((a, i) => !a.startsWith('--') && (repsAt < 0 || i !== repsAt + 1));
const EMBD = positional[0] || '/tmp/weightmap-bench-embed/minilm-random.embd';
const MB = 1e6;

async function best(reps, fn) {
  let min = Infinity;
  let value;
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    value = await fn();
    min = Math.min(min, performance.now() - t0);
  }
  return { ms: min, value };
}

async function median(reps, fn) {
  const times = [];
  for (let r = 0; r < reps; r++) {
    const t0 = performance.now();
    await fn();
    times.push(performance.now() - t0);
  }
  times.sort((a, b) => a - b);
  return times[times.length >> 1];
}

async function main() {
  const addon = loadAddon();
  const size = 256 << 20;
  const buf = Buffer.allocUnsafe(size);
  crypto.randomFillSync(buf);
  const reference = zlib.crc32(buf);
  console.log(`crc32 over ${size / MB} MB (best of ${REPS}); PCLMULQDQ: ${addon.crc32HasPclmul() ? 'yes' : 'no'}`);
  const row = (name, ms, crc) =>
    console.log(`  ${name.padEnd(26)} ${(size / MB / ms).toFixed(2).padStart(6)} GB/s  ${ms.toFixed(1).padStart(7)} ms${crc === reference ? '' : '  WRONG CRC'}`);
  const z = await best(REPS, () => zlib.crc32(buf));
  row('zlib.crc32 (JS thread)', z.ms, z.value);
  for (const impl of addon.crc32HasPclmul() ? ['pclmul', 'table'] : ['table']) {
    for (const threads of [1, 2]) {
      const r = await best(REPS, () => addon.crc32(buf, 0, { impl, threads }));
      row(`native ${impl}, ${threads} thread${threads > 1 ? 's' : ''}`, r.ms, r.value);
    }
  }

  if (!fs.existsSync(EMBD)) {
    console.log(`readWeights: ${EMBD} is missing, skipped`);
    return;
  }
  const dist = path.resolve(process.env.WEIGHTMAP_DIST || path.join(__dirname, '..', '..', 'dist', 'cjs'));
  const { readWeights, closeWeights } = require(path.join(dist, 'index.js'));
  const load = async (verifyChecksums) => closeWeights(await readWeights(EMBD, { verifyChecksums }));
  await load(true); // page cache warm
  const on = await median(REPS, () => load(true));
  const off = await median(REPS, () => load(false));
  const mb = fs.statSync(EMBD).size / MB;
  console.log(`readWeights ${path.basename(EMBD)} (${mb.toFixed(1)} MB, median of ${REPS}):`);
  console.log(`  verifyChecksums on   ${on.toFixed(2).padStart(7)} ms`);
  console.log(`  verifyChecksums off  ${off.toFixed(2).padStart(7)} ms`);
  console.log(`  verification         ${(on - off).toFixed(2).padStart(7)} ms (${(mb / (on - off)).toFixed(2)} GB/s)`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
