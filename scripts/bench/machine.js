// The machine a benchmark ran on, for its --json report and scripts/bench/report.js's provenance
// line: CPU model name, family and model number (Linux /proc/cpuinfo; null elsewhere), logical
// CPUs, the 1-minute load average and the date.
'use strict';
const fs = require('node:fs');
const os = require('node:os');

function cpuinfoField(text, name) {
  const m = new RegExp(`^${name}\\s*:\\s*(.+)$`, 'm').exec(text);
  return m ? m[1].trim() : null;
}

function machine() {
  let cpuinfo = '';
  try {
    cpuinfo = fs.readFileSync('/proc/cpuinfo', 'utf8');
  } catch {
    // not Linux: family and model stay null
  }
  const family = cpuinfoField(cpuinfo, 'cpu family');
  const model = cpuinfoField(cpuinfo, 'model');
  return {
    date: new Date().toISOString().slice(0, 10),
    cpu: os.cpus()[0]?.model ?? null,
    cpuFamily: family === null ? null : Number(family),
    cpuModel: model === null ? null : Number(model),
    logicalCpus: os.cpus().length,
    load: Number(os.loadavg()[0].toFixed(2)),
  };
}

module.exports = { machine };
