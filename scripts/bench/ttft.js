#!/usr/bin/env node
// Time to first token in a fresh process, by phase: node's own start (process start until this
// script runs), require('weightmap'), loadModel resolved, the first generated piece; and the whole
// process as the parent sees it (spawn to exit). The page cache is warm (each file is read once
// first) and so is the tokenizer cache (one WEIGHTMAP_CACHE folder per checkout, filled by an
// untimed first process). Checkouts (--root, repeatable) take turns, A B A B, in every round.
//   node scripts/bench/ttft.js MODEL [MODEL...] [--root DIR]... [--runs 7] [--threads N (default: loadModel's)]
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { performance } = require('node:perf_hooks');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const optAll = (name) => args.flatMap((a, i) => (a === `--${name}` ? [args[i + 1]] : []));
const PHASES = ['node start', 'require', 'loadModel', 'first token', 'in process', 'spawn to exit'];

async function child(file, root, threads) {
  const start = performance.now(); // since the process started (performance.timeOrigin)
  const w = require(path.resolve(root, 'dist', 'cjs', 'index.js'));
  const required = performance.now();
  const model = await w.loadModel(file, threads ? { threads } : {});
  const loaded = performance.now();
  for await (const piece of model.generate('Hello', { maxTokens: 1, temperature: 0 })) void piece;
  const first = performance.now();
  model.dispose();
  return { 'node start': start, require: required - start, loadModel: loaded - required, 'first token': first - loaded, 'in process': first };
}

function spawnChild(file, root, cache, threads) {
  const t0 = performance.now();
  const out = execFileSync(process.execPath, [__filename, '--child', file, '--root', root, ...(threads ? ['--threads', String(threads)] : [])], {
    env: { ...process.env, WEIGHTMAP_CACHE: cache },
    encoding: 'utf8',
  });
  return { ...JSON.parse(out.trim().split('\n').pop()), 'spawn to exit': performance.now() - t0 };
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
      console.log(['phase'.padEnd(14), ...roots.map((r) => r.padEnd(24))].join(' '));
      for (const phase of PHASES) console.log([phase.padEnd(14), ...results[f].map((rs) => fmt(rs.map((x) => x[phase])).padEnd(24))].join(' '));
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
