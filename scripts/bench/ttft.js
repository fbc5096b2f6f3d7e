#!/usr/bin/env node
// Time to first token in a fresh process, by phase: node's own start (process start until this
// script runs), require('weightmap'), loadModel resolved, the first generated piece; and the whole
// process as the parent sees it (spawn to exit). Each phase as wall time and as CPU time of every
// thread of the process (on a shared machine the wall time includes waits for a core). The page cache is warm (each file is read once
// first) and so is the tokenizer cache (one WEIGHTMAP_CACHE folder per checkout, filled by an
// untimed first process). Checkouts (--root, repeatable) take turns, A B A B, in every round.
//   node scripts/bench/ttft.js MODEL [MODEL...] [--root DIR]... [--runs 7] [--threads N (default: loadModel's)]
'use strict';
require('../args').scriptArgs('ttft.js MODEL [MODEL...] [--root DIR]... [--runs 7] [--threads N]', { options: { root: { type: 'string', multiple: true }, runs: 'string', threads: 'string', child: 'string' }, positionals: [0, 1000] });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { performance } = require('node:perf_hooks');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const optAll = (name) => args.flatMap((a, i) => (a === `--${name}` ? [args[i + 1]] : []));
const PHASES = ['node start', 'require', 'loadModel', 'first token', 'in process'];

/** Milliseconds of CPU time of the whole process (every thread) so far. */
const cpuMs = () => {
  const { user, system } = process.cpuUsage();
  return (user + system) / 1000;
};

/** Per phase, [wall ms, CPU ms of every thread]: CPU time says how much work a phase is where a loaded machine blurs the wall time. */
async function child(file, root, threads) {
  const marks = [[performance.now(), cpuMs()]]; // since the process started (performance.timeOrigin)
  const mark = () => marks.push([performance.now(), cpuMs()]);
  const w = require(path.resolve(root, 'dist', 'cjs', 'index.js'));
  mark();
  const model = await w.loadModel(file, threads ? { threads } : {});
  mark();
  for await (const piece of model.generate('Hello', { maxTokens: 1, temperature: 0 })) void piece;
  mark();
  model.dispose();
  const phase = (i) => [marks[i][0] - marks[i - 1][0], marks[i][1] - marks[i - 1][1]];
  return { 'node start': marks[0], require: phase(1), loadModel: phase(2), 'first token': phase(3), 'in process': marks[3] };
}

function spawnChild(file, root, cache, threads) {
  const t0 = performance.now();
  const out = execFileSync(process.execPath, [__filename, '--child', file, '--root', root, ...(threads ? ['--threads', String(threads)] : [])], {
    env: { ...process.env, WEIGHTMAP_CACHE: cache },
    encoding: 'utf8',
  });
  return { ...JSON.parse(out.trim().split('\n').pop()), 'spawn to exit': [performance.now() - t0, NaN] };
}

const median = (xs) => [...xs].sort((a, b) => a - b)[xs.length >> 1];
const fmt = (xs) => `${median(xs).toFixed(1)} [${Math.min(...xs).toFixed(1)}–${Math.max(...xs).toFixed(1)}]`;

function main() {
  const files = args.filter((a, i) => !a.startsWith('--') && !args[i - 1]?.startsWith('--')).map((f) => path.resolve(f));
  const roots = optAll('root').map((r) => path.resolve(r));
  if (roots.length === 0) roots.push(path.join(__dirname, '..', '..'));
  const runs = Number(opt('runs', '7'));
  const threads = Number(opt('threads', '0'));
  if (files.length === 0) {
    console.error('usage: ttft.js MODEL [MODEL...] [--root DIR]... [--runs 7] [--threads N]');
    process.exit(1);
  }
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-bench-ttft-'));
  try {
    const caches = roots.map((_, i) => path.join(tmp, `cache-${i}`));
    for (const file of files) {
      fs.readFileSync(file); // the page cache (files larger than 2 GiB: read them once beforehand)
      roots.forEach((root, i) => spawnChild(file, root, caches[i], threads)); // the tokenizer cache
    }
    const loads = [];
    const results = files.map(() => roots.map(() => []));
    for (let r = 0; r < runs; r++) {
      loads.push(os.loadavg()[0]);
      files.forEach((file, f) => roots.forEach((root, i) => results[f][i].push(spawnChild(file, root, caches[i], threads))));
    }
    console.log(`${runs} rounds, ${threads || 'default'} thread(s), page cache and tokenizer cache warm; 1-min load average ${fmt(loads)}; ms, median [min–max]`);
    files.forEach((file, f) => {
      console.log(`\n${path.basename(file)}`);
      console.log(['phase'.padEnd(14), ...roots.flatMap((r) => [`wall ${r}`.padEnd(26), 'CPU'.padEnd(24)])].join(' '));
      for (const phase of [...PHASES, 'spawn to exit']) {
        const cells = results[f].flatMap((rs) => [0, 1].map((k) => (phase === 'spawn to exit' && k === 1 ? '' : fmt(rs.map((x) => x[phase][k])))));
        console.log([phase.padEnd(14), ...cells.map((c, i) => c.padEnd(i % 2 ? 24 : 26))].join(' '));
      }
    });
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
}

if (args.includes('--child')) {
  child(opt('child'), opt('root'), Number(opt('threads', '0'))).then(
    (r) => {
      console.log(JSON.stringify(r));
      process.exit(0);
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
} else {
  main();
}
