#!/usr/bin/env node
// Per-core arithmetic peak of this CPU, measured (not assumed from a nominal clock): builds
// scripts/bench/peak-probe.cc with the system g++ and runs one probe per thread at once, each
// pinned to its own CPU, so turbo and shared-core effects show as they do during a benchmark.
// The probes count per-thread CPU time, not wall time: on a loaded machine the figure stays what
// the cores retire while they run, instead of shrinking with the share other processes take.
// x86-64 Linux with AVX-512 VNNI only.
//   node scripts/bench/peak.js [--threads N] [--seconds S] [--json]
// Also a module: measurePeak(threads) -> { threads, int8MacsPerSecond, f32MacsPerSecond } (summed
// over the threads), or null where the probe cannot be built or run. The read bandwidth is the
// addon's probe (read-bandwidth.js), over the model the bound is for.
'use strict';
const { execFileSync, spawn } = require('node:child_process');
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const SOURCE = path.join(__dirname, 'peak-probe.cc');

// One binary per version of the source (checkouts of other versions share the temp folder).
function build() {
  const hash = crypto.createHash('sha256').update(fs.readFileSync(SOURCE)).digest('hex').slice(0, 12);
  const binary = path.join(os.tmpdir(), `weightmap-peak-probe-${hash}`);
  if (fs.existsSync(binary)) return binary;
  const partial = `${binary}.${process.pid}`;
  execFileSync('g++', ['-O2', '-mavx512f', '-mavx512vnni', '-o', partial, SOURCE], { stdio: 'pipe' });
  fs.renameSync(partial, binary);
  return binary;
}

function runOnce(binary, ...args) {
  return new Promise((resolve, reject) => {
    const child = spawn(binary, args.map(String));
    let out = '';
    child.stdout.on('data', (d) => (out += d));
    child.on('error', reject);
    child.on('close', (code) => (code === 0 ? resolve(JSON.parse(out)) : reject(new Error(`probe exited ${code}`))));
  });
}

async function measurePeak(threads, seconds = 0.5) {
  if (process.arch !== 'x64' || process.platform !== 'linux') return null;
  try {
    const binary = build();
    const cpus = os.availableParallelism?.() ?? os.cpus().length;
    const runs = await Promise.all(Array.from({ length: threads }, (_, i) => runOnce(binary, seconds, i % cpus)));
    return {
      threads,
      int8MacsPerSecond: runs.reduce((a, r) => a + r.int8_macs_per_s, 0),
      f32MacsPerSecond: runs.reduce((a, r) => a + r.f32_macs_per_s, 0),
    };
  } catch {
    return null;
  }
}

async function main() {
  const rest = process.argv.slice(2);
  const at = (name, fallback) => (rest.includes(`--${name}`) ? rest[rest.indexOf(`--${name}`) + 1] : fallback);
  const threads = Number(at('threads', String(os.availableParallelism?.() ?? os.cpus().length)));
  const peak = await measurePeak(threads, Number(at('seconds', '0.5')));
  if (!peak) throw new Error('the probe needs x86-64 Linux, g++ and AVX-512 VNNI');
  if (rest.includes('--json')) return console.log(JSON.stringify(peak));
  console.log(
    `${threads} thread(s): int8 ${(peak.int8MacsPerSecond / 1e9).toFixed(0)} GMAC/s (vpdpbusd zmm), ` +
      `f32 ${(peak.f32MacsPerSecond / 1e9).toFixed(0)} GMAC/s (vfmadd231ps zmm)`,
  );
}

module.exports = { measurePeak };
if (require.main === module) {
  require('../args').scriptArgs('peak.js [--threads N] [--seconds S] [--json]', { options: { threads: 'string', seconds: 'string', json: 'boolean' } });
  main().catch((e) => { console.error(e.message); process.exit(1); });
}
