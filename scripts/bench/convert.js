#!/usr/bin/env node
// Conversion throughput and peak memory: converts IN to OUT in this fresh process and reports
// seconds, MB/s of input read, MB/s of output written, and peak RSS (VmHWM). Writers stream, so
// peak RSS must stay far below the model size (mapped input pages are shared file cache, and
// they count in RSS only while resident). Also the longest the event loop waited meanwhile
// (maxEventLoopDelayMs: the writer's heavy work must run off the JS thread).
//   node scripts/bench/convert.js IN OUT --to ajc1 [--quant q8_0] [--group-size 64] [--dtype f16]
'use strict';
require('../args').scriptArgs('convert.js IN OUT --to FORMAT [--quant q8_0] [--group-size N] [--dtype f32|f16]', { options: { to: 'string', quant: 'string', 'group-size': 'string', dtype: 'string' }, positionals: [2, 2] });
const fs = require('node:fs');
const path = require('node:path');
const { monitorEventLoopDelay, performance } = require('node:perf_hooks');
const { convert } = require('../../dist/cjs/index.js');

function sizeOf(p) {
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.size;
  return fs.readdirSync(p).reduce((a, e) => a + sizeOf(path.join(p, e)), 0);
}

// Peak RSS split into anonymous memory (what the converter allocates) and file-backed pages
// (the input mapping, shared with the page cache), sampled every 20 ms while converting.
const peaks = { anon: 0, file: 0, total: 0 };
function sampleRss() {
  const status = fs.readFileSync('/proc/self/status', 'utf8');
  const kb = (key) => Number((new RegExp(`${key}:\\s+(\\d+) kB`).exec(status) || [0, 0])[1]) / 1024;
  peaks.anon = Math.max(peaks.anon, kb('RssAnon'));
  peaks.file = Math.max(peaks.file, kb('RssFile') + kb('RssShmem'));
  peaks.total = Math.max(peaks.total, kb('VmHWM'));
}

async function main() {
  const [input, output, ...rest] = process.argv.slice(2);
  const opt = (n) => (rest.includes(`--${n}`) ? rest[rest.indexOf(`--${n}`) + 1] : undefined);
  if (!input || !output || !opt('to')) {
    console.error('usage: convert.js IN OUT --to FORMAT [--quant q8_0] [--group-size N] [--dtype f32|f16]');
    process.exit(1);
  }
  const sampler = setInterval(sampleRss, 20);
  const loop = monitorEventLoopDelay({ resolution: 1 });
  loop.enable();
  const t0 = performance.now();
  await convert(input, output, {
    to: opt('to'),
    quant: opt('quant'),
    groupSize: opt('group-size') ? Number(opt('group-size')) : undefined,
    dtype: opt('dtype'),
  });
  const seconds = (performance.now() - t0) / 1000;
  loop.disable();
  clearInterval(sampler);
  sampleRss();
  const inBytes = sizeOf(input);
  const outBytes = sizeOf(output.endsWith('/') ? output : fs.existsSync(output) ? output : path.dirname(output));
  console.log(JSON.stringify({
    input, output, to: opt('to'), seconds: +seconds.toFixed(2),
    inputMB: +(inBytes / 1e6).toFixed(1), outputMB: +(outBytes / 1e6).toFixed(1),
    readMBps: +(inBytes / 1e6 / seconds).toFixed(1), writeMBps: +(outBytes / 1e6 / seconds).toFixed(1),
    peakRssMB: +peaks.total.toFixed(1),
    peakAnonRssMB: +peaks.anon.toFixed(1),
    peakFileRssMB: +peaks.file.toFixed(1),
    maxEventLoopDelayMs: +(loop.max / 1e6).toFixed(1),
  }, null, 2));
}

main().catch((e) => { console.error(e); process.exit(1); });
