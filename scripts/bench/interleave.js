#!/usr/bin/env node
// Runs one benchmark command against several builds of the addon, alternating build by build
// round after round (so that a change in the machine's load hits every build alike), and prints
// each run's output under its build's name with the load average. Each run is its own process with
// WEIGHTMAP_ADDON set (lib/addon/native.ts), so the builds never share a process.
//   node scripts/bench/interleave.js --addons before.node,build/Release/weightmap.node [--rounds 3] -- CMD ARGS...
// e.g. -- scripts/bench/batch.js --model TREE --quant q8_0 --streams 1,8 --rounds 1
'use strict';
require('../args').scriptArgs('interleave.js --addons A,B [--rounds N] -- CMD ARGS...', { options: { addons: 'string', rounds: 'string' }, rest: true });
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');

const args = process.argv.slice(2);
const dash = args.indexOf('--');
if (dash < 0) throw new Error('usage: interleave.js --addons A,B [--rounds N] -- CMD ARGS...');
const own = args.slice(0, dash);
const command = args.slice(dash + 1);
const opt = (name, def) => (own.includes(`--${name}`) ? own[own.indexOf(`--${name}`) + 1] : def);
const addons = opt('addons', '').split(',').filter(Boolean).map((a) => path.resolve(a));
const rounds = Number(opt('rounds', '3'));
if (addons.length === 0) throw new Error('--addons: one or more .node paths');

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
for (let r = 0; r < rounds; r++) {
  for (const addon of addons) {
    console.log(`== round ${r + 1}, addon ${addon}, load ${load()}`);
    const run = spawnSync(process.execPath, command, { env: { ...process.env, WEIGHTMAP_ADDON: addon }, encoding: 'utf8' });
    process.stdout.write(run.stdout);
    if (run.status !== 0) {
      process.stderr.write(run.stderr);
      process.exit(1);
    }
  }
}
