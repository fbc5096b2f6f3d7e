#!/usr/bin/env node
// Mapping cost and memory: maps a large file (default 1 GiB, created in the temp folder if absent)
// in this fresh process and reports the time to map, RSS before/after mapping, after reading one
// page, and after reading every page. Mapping must cost microseconds and no RSS; RSS grows only
// with the pages actually read.
//   node scripts/bench/mmap.js [--size-mb 1024] [--file PATH]
'use strict';
require('../args').scriptArgs('mmap.js [--size-mb 1024] [--file PATH]', { options: { 'size-mb': 'string', file: 'string' } });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const sizeMb = Number(opt('size-mb', '1024'));
const file = opt('file', path.join(os.tmpdir(), `weightmap-mmap-bench-${sizeMb}m.bin`));

function ensureFile() {
  if (fs.existsSync(file) && fs.statSync(file).size === sizeMb * 1048576) return;
  const fd = fs.openSync(file, 'w');
  const chunk = Buffer.alloc(8 << 20);
  for (let i = 0; i < chunk.length; i += 4) chunk.writeUInt32LE((i * 2654435761) >>> 0, i);
  for (let written = 0; written < sizeMb * 1048576; written += chunk.length) fs.writeSync(fd, chunk);
  fs.closeSync(fd);
}

function rssMb() {
  return process.memoryUsage().rss / 1048576;
}

ensureFile();
// The built package (npm run build:ts).
const { mapFile } = require('../../dist/cjs/index.js');
mapFile(__filename).close(); // loads the addon, so the timing below is the mapping alone
const rss0 = rssMb();
const t0 = performance.now();
const m = mapFile(file);
const t1 = performance.now();
const rss1 = rssMb();
let sum = m.bytes[0];
const rss2 = rssMb();
const t2 = performance.now();
for (let i = 0; i < m.byteLength; i += 4096) sum += m.bytes[i];
const t3 = performance.now();
const rss3 = rssMb();
const report = {
  file,
  bytes: m.byteLength,
  mapMs: +(t1 - t0).toFixed(3),
  rssBeforeMb: +rss0.toFixed(1),
  rssAfterMapMb: +rss1.toFixed(1),
  rssAfterOnePageMb: +rss2.toFixed(1),
  touchAllMs: +(t3 - t2).toFixed(1),
  rssAfterTouchingAllMb: +rss3.toFixed(1),
  checksum: sum,
};
m.close();
console.log(JSON.stringify(report, null, 2));
