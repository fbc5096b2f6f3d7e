#!/usr/bin/env node
/**
 * Times what reading a gpt-oss HF folder costs (lib/formats/containers/gptoss-hf.ts): the first
 * read converts the experts into a file of a fresh cache (in the tokenizer worker: the package's
 * entry registers it), the second maps it. Prints per folder and round the time, the converted
 * bytes, their rate, the event loop's longest stall (a 5 ms timer's lateness) and, on Linux, the
 * JS thread's own time on a CPU and waiting for one (/proc/self/task/PID/schedstat): on a machine
 * shared with other work the stall is mostly that wait. Build first (npm run build:ts); make
 * folders with gptoss-hf-folder.py.
 *
 *   node scripts/bench/gptoss-hf-convert.js FOLDER...
 */
'use strict';
const { positionals } = require('../args').scriptArgs('gptoss-hf-convert.js FOLDER...', { positionals: [1, Infinity] });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { closeWeights, readWeights } = require('../../dist/cjs');

/** The JS thread's time on a CPU and waiting for one, in ms (undefined where /proc has no schedstat). */
function schedstat() {
  try {
    const [cpu, wait] = fs.readFileSync(`/proc/self/task/${process.pid}/schedstat`, 'utf8').trim().split(' ').map(Number);
    return { cpu: cpu / 1e6, wait: wait / 1e6 };
  } catch {
    return undefined;
  }
}

(async () => {
  for (const dir of positionals) {
    const cache = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-convert-bench-'));
    process.env.WEIGHTMAP_CACHE = cache;
    let stall = 0;
    let last = Date.now();
    const timer = setInterval(() => {
      const now = Date.now();
      stall = Math.max(stall, now - last - 5);
      last = now;
    }, 5);
    try {
      for (const round of ['convert', 'reuse']) {
        stall = 0;
        const before = schedstat();
        const t0 = process.hrtime.bigint();
        const w = await readWeights(dir);
        const ms = Number(process.hrtime.bigint() - t0) / 1e6;
        const after = schedstat();
        const c = w.converted;
        const thread = before && after ? `; JS thread on a CPU ${(after.cpu - before.cpu).toFixed(0)} ms, waiting for one ${(after.wait - before.wait).toFixed(0)} ms` : '';
        console.log(`${dir} ${round}${c.reused ? ' (cache held it)' : ''}: ${ms.toFixed(0)} ms, ${(c.bytes / 1e6).toFixed(0)} MB of experts, ${(c.bytes / 1e6 / (ms / 1000)).toFixed(0)} MB/s, event loop stalled ≤ ${stall} ms${thread}`);
        closeWeights(w);
      }
    } finally {
      clearInterval(timer);
      fs.rmSync(cache, { recursive: true, force: true });
    }
  }
})();
