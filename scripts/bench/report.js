#!/usr/bin/env node
// Renders the JSON that benchmarks print with --json into the markdown tables of docs/performance.md,
// each under a line giving its command, date, CPU (family / model) and load:
//   weightmap bench MODEL --json                   one row per report (several reports: one table)
//   node scripts/bench/peers.js --json             the decoder and embedding tables
//   node scripts/bench/embed.js --json             one row per quant × threads × tokens × batch
//   node scripts/bench/report.js [FILE.json ...]   (stdin when no file; a file may hold several
//                                                   JSON documents one after another)
// Reports that carry no machine (weightmap bench) take this machine's, as it is when rendering:
// pipe them straight in (`weightmap bench M --json | node scripts/bench/report.js`).
'use strict';
const fs = require('node:fs');
const { machine } = require('./machine');
const { peersTable, peersTitles } = require('./peers/table');

/** Every top-level JSON value in `text`, in order (documents printed one after another). */
function parseDocuments(text) {
  const docs = [];
  let depth = 0;
  let start = -1;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const c = text[i];
    if (inString) {
      if (c === '\\') i++;
      else if (c === '"') inString = false;
    } else if (c === '"') inString = true;
    else if (c === '{' || c === '[') {
      if (depth++ === 0) start = i;
    } else if (c === '}' || c === ']') {
      if (--depth === 0) docs.push(JSON.parse(text.slice(start, i + 1)));
    }
  }
  if (depth !== 0) throw new Error('the input ends inside a JSON document');
  return docs;
}

const fmt = (x) => (x >= 100 ? x.toFixed(0) : x.toFixed(1));
const spread = (s) => `${fmt(s.median)} [${fmt(s.min)}–${fmt(s.max)}]`;

function provenance(command, m) {
  const cpu = [m.cpu ?? 'unknown CPU', m.cpuFamily !== null && m.cpuFamily !== undefined ? `family ${m.cpuFamily}, model ${m.cpuModel}` : null, m.logicalCpus ? `${m.logicalCpus} logical CPUs` : null]
    .filter(Boolean)
    .join(', ');
  return `\`${command}\` — ${m.date}, ${cpu}, load ${m.load}`;
}

function benchCommand(r) {
  return `weightmap bench ${r.model} --prompt-tokens ${r.promptTokens} --gen-tokens ${r.genTokens} --repetitions ${r.repetitions} --threads ${r.threads} --json`;
}

const isBench = (d) => d && typeof d === 'object' && 'promptTokens' in d && 'prefill' in d && 'decode' in d;
const isPeers = (d) => d && typeof d === 'object' && typeof d.command === 'string' && d.command.includes('peers.js') && (d.decoder || d.embed);
const isEmbed = (d) => d && typeof d === 'object' && Array.isArray(d.results) && d.shape;

/** Markdown for the documents, tables in input order. */
function render(docs, here = machine()) {
  const out = ['<!-- rendered by scripts/bench/report.js from the --json output; do not edit by hand -->'];
  const benches = docs.flatMap((d) => (Array.isArray(d) ? d : [d])).filter(isBench);
  if (benches.length > 0) {
    out.push('', ...benches.map((r) => `- ${provenance(benchCommand(r), here)}`), '');
    out.push('| model | format | threads | ISA | prompt tokens | prefill tok/s median [min–max] | generated tokens | decode tok/s median [min–max] | runs |');
    out.push('| --- | --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const r of benches) {
      out.push(`| ${r.model} (${r.architecture}) | ${r.format} | ${r.threads} | ${r.isa} | ${r.promptTokens} | ${spread(r.prefill)} | ${r.genTokens} | ${spread(r.decode)} | ${r.repetitions} |`);
    }
  }
  for (const d of docs.filter(isPeers)) {
    const m = d.machine ?? { ...here, cpu: d.cpu ?? here.cpu, date: 'date not recorded', load: 'per row' };
    const titles = peersTitles(d);
    if (d.decoder) out.push('', provenance(d.command, m), '', titles.decoder, '', ...peersTable(d.decoder.rows, ['decode', 'prefill'], d.pairs));
    if (d.embed) out.push('', provenance(d.command, m), '', titles.embed, '', ...peersTable(d.embed.rows, ['embed'], d.pairs));
  }
  for (const d of docs.filter(isEmbed)) {
    out.push('', provenance(d.command ?? 'node scripts/bench/embed.js --json', d.machine ?? { ...here, cpu: d.cpu ?? here.cpu }), '');
    out.push('| quant | threads | ISA | tokens | batch | sentences/s median [min–max] | GMAC/s | share of bound |');
    out.push('| --- | --- | --- | --- | --- | --- | --- | --- |');
    for (const r of d.results) {
      out.push(`| ${r.quant} | ${r.threads} | ${r.isa} | ${r.tokens} | ${r.batch} | ${spread(r)} | ${fmt(r.gmacs)} | ${r.bound ? `${((100 * r.median) / r.bound).toFixed(0)}%` : '–'} |`);
    }
  }
  if (out.length === 1) throw new Error('no report found: expected the --json output of weightmap bench, peers.js or embed.js');
  return `${out.join('\n')}\n`;
}

module.exports = { parseDocuments, render };

if (require.main === module) {
  const files = require('../args').scriptArgs('report.js [BENCH.json ...] (the --json output of weightmap bench, peers.js or embed.js; stdin without files)', { positionals: [0, Infinity] }).positionals;
  const text = files.length > 0 ? files.map((f) => fs.readFileSync(f, 'utf8')).join('\n') : fs.readFileSync(0, 'utf8');
  try {
    process.stdout.write(render(parseDocuments(text)));
  } catch (error) {
    console.error(`report.js: ${error.message}`);
    process.exit(1);
  }
}
