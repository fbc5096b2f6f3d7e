#!/usr/bin/env node
// weightmap side by side with its peers on this machine, with random-weight models of real shapes:
//  - decode and prefill of a Qwen3-0.6B-shaped GGUF per llama.cpp file type (make-gguf.js --vocab)
//    against llama.cpp's own llama-bench (tg DECODE / pp PROMPT) and node-llama-cpp, per thread count;
//  - the same for mixtures of experts (peers/moe-rows.js): a Qwen3-30B-A3B-shaped Q4_K_M GGUF and a
//    gpt-oss-20b-shaped MXFP4 one (make-moe-gguf.js; --moe-layers N: fewer layers), with the resident
//    set after a 512-token generation and the first token of a freshly mapped file;
//  - MiniLM-L6 sentence embeddings (32 texts × 18 tokens) against transformers.js (onnxruntime-node)
//    on an ONNX export of the same weights (peers/minilm-onnx.js).
// Each side runs in its own process, interleaved (A B C A B C ...), PAIRS times per row; the
// 1-minute load average is recorded before every run. Each row prints medians [min–max], the ratio
// of weightmap to each peer (median of the per-round ratios) and each median's share of the bound
// measured in the same round: read bandwidth (read-bandwidth.js over the model file's mapping) ÷
// bytes read per token for decode (the weights, and the f16 KV cache — both sides' default — of
// positions 0 .. DECODE, where llama-bench's tg runs); the arithmetic peak of scripts/bench/peak.js (per CPU-second,
// so a loaded machine does not lower it) for the int8 linear layers (f32 for f32 embeddings) plus
// f32 attention for prefill and embeddings.
// The peers are installed on first use into a cache folder (peers/cache.js; building llama-bench
// takes tens of minutes on 2 busy cores), models are generated there too. Needs `npm run build:ts` (dist/) and the addon.
// --depth D: both decoder timings start after D cached positions (llama-bench -d; an untimed prefill on
// weightmap's side), the bound counting the KV cache read from D on: the long-context rows.
// --quick: 2 rounds instead of 3. A run past --run-timeout seconds is killed and left out of its
// row (oversubscribed, llama.cpp's spinning threads can slow down a hundredfold).
//   node scripts/bench/peers.js [--quick] [--pairs 3] [--types q4_k_m,q4_0,q6_k,q8_0] [--threads 1,2]
//                               [--prompt 512] [--decode 128] [--depth 0] [--only decoder,embed,moe] [--run-timeout 900] [--moe-layers N]
//                               [--peers llama-bench,node-llama-cpp] [--json]
'use strict';
require('../args').scriptArgs('peers.js [--quick] [--pairs 3] [--types q4_k_m,q4_0,q6_k,q8_0] [--threads 1,2] [--prompt 512] [--decode 128] [--depth 0] [--only decoder,embed,moe] [--run-timeout 900] [--moe-layers N] [--peers llama-bench,node-llama-cpp] [--json]', { options: { 'moe-layers': 'string', quick: 'boolean', pairs: 'string', types: 'string', threads: 'string', prompt: 'string', decode: 'string', depth: 'string', only: 'string', 'run-timeout': 'string', peers: 'string', json: 'boolean' } });
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { readWeights, closeWeights } = require('../../dist/cjs/index.js');
const { measurePeak } = require('./peak.js');
const { measureReadBandwidth } = require('./read-bandwidth');
const { bytesPerToken, kvBytesPerToken, prefillMacsPerToken } = require('./decoder-work');
const cache = require('./peers/cache');
const embedRows = require('./peers/embed-rows');
const { moeRows } = require('./peers/moe-rows');
const { runJson } = require('./peers/run-json');
const { peersTable, peersTitles } = require('./peers/table');
const { machine } = require('./machine');

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const quick = args.includes('--quick');
const PAIRS = Number(opt('pairs', quick ? '2' : '3'));
const TYPES = opt('types', 'q4_k_m,q4_0,q6_k,q8_0').split(',');
const THREADS = opt('threads', '1,2').split(',').map(Number);
const PROMPT = Number(opt('prompt', '512'));
const DECODE = Number(opt('decode', '128'));
const ONLY = opt('only', 'decoder,embed,moe').split(',');
const MOE_LAYERS = opt('moe-layers') === undefined ? undefined : Number(opt('moe-layers'));
const RUN_TIMEOUT = Number(opt('run-timeout', '900'));
const SIDES = opt('peers', 'llama-bench,node-llama-cpp').split(',');
// Cached positions before both timings (llama-bench -d): long-context rows.
const DEPTH = Number(opt('depth', '0'));
if (DEPTH > 0 && SIDES.includes('node-llama-cpp')) throw new Error('--depth: the node-llama-cpp side has no depth; name the peers: --peers llama-bench');

function median(xs) {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
}
const summary = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs), runs: xs });

function ggufModel(type) {
  const file = path.join(cache.CACHE, 'models', `qwen3-0.6b.${type}.gguf`);
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const partial = `${file}.partial`;
    runOrThrow(process.execPath, [path.join(__dirname, 'make-gguf.js'), partial, '--type', type, '--vocab']);
    fs.renameSync(partial, file);
  }
  return file;
}

function runOrThrow(command, argv) {
  const r = spawnSync(command, argv, { stdio: 'inherit' });
  if (r.status !== 0) throw new Error(`${command} ${argv.join(' ')} failed (${r.status})`);
}

/**
 * The decoder sides named in SIDES: name -> { run(file, vocab, threads) -> { prefill, decode } in
 * tok/s, bound }. Every side shares one bound per metric (bound(work, peak) -> { prefill, decode }).
 * Only the peers named are installed (llama-bench is a build of minutes).
 */
function decoderSides() {
  const bound = (work, peak) => ({
    decode: peak.readBytesPerSecond / work.bytesPerToken,
    prefill: 1 / (work.macs.linear / peak.int8MacsPerSecond + work.macs.attention / peak.f32MacsPerSecond),
  });
  const child = (script, ...rest) => runJson(process.execPath, [path.join(__dirname, 'peers', script), ...rest], RUN_TIMEOUT);
  const info = {};
  const makers = {
    weightmap: () => (file, vocab, threads) => child('decoder-weightmap.js', file, threads, PROMPT, DECODE, DEPTH),
    'llama-bench': () => {
      const bench = cache.llamaBench();
      info['llama.cpp'] = `${bench.release} (${bench.commit})`;
      return (file, vocab, threads) => {
        const rows = runJson(bench.path, ['-m', file, '-t', threads, '-p', PROMPT, '-n', DECODE, '-d', DEPTH, '-r', '1', '-o', 'json'], RUN_TIMEOUT, bench.env);
        return {
          prefill: rows.find((r) => r.n_prompt > 0 && r.n_gen === 0).avg_ts,
          decode: rows.find((r) => r.n_gen > 0 && r.n_prompt === 0).avg_ts,
        };
      };
    },
    'node-llama-cpp': () => {
      const nlc = cache.nodeLlamaCpp();
      info['node-llama-cpp'] = nlc.version;
      return (file, vocab, threads) => child('decoder-node-llama-cpp.mjs', nlc.entry, file, vocab, threads, PROMPT, DECODE);
    },
  };
  const sides = {};
  for (const name of ['weightmap', ...SIDES]) {
    if (!makers[name]) throw new Error(`unknown side '${name}' (${Object.keys(makers).join(', ')})`);
    sides[name] = { bound, run: makers[name]() };
  }
  return { info, sides };
}

/**
 * Runs every side PAIRS times interleaved (A B C A B C ...), measuring the machine's peak before
 * each round (and the read bandwidth over `readView` where one is given).
 * sides: name -> { measure() -> { metric: value }, bound(peak) -> { metric: value } }.
 * Returns per metric: each side's summary, its bound's summary, and the ratio of every weightmap
 * side to every peer (the median of the per-round ratios); and the load averages seen.
 */
async function interleave(label, sides, threads, readView) {
  const values = {}; // metric -> side -> value per round (missing where a run timed out)
  const bounds = {};
  const load = [];
  for (let round = 0; round < PAIRS; round++) {
    const arithmetic = await measurePeak(threads, 0.25);
    const peak = arithmetic && readView ? { ...arithmetic, readBytesPerSecond: measureReadBandwidth(readView, threads) } : arithmetic;
    for (const [side, { measure, bound }] of Object.entries(sides)) {
      load.push(os.loadavg()[0]);
      let result;
      try {
        result = measure();
      } catch (error) {
        if (!error.timedOut) throw error;
        console.error(`${label} round ${round + 1}/${PAIRS} ${side}: ${error.message}, left out (load ${load.at(-1).toFixed(1)})`);
        continue;
      }
      for (const [metric, value] of Object.entries(result)) ((values[metric] ??= {})[side] ??= [])[round] = value;
      if (peak) for (const [metric, value] of Object.entries(bound(peak))) ((bounds[metric] ??= {})[side] ??= []).push(value);
      const text = Object.entries(result).map(([m, v]) => `${m} ${v.toFixed(1)}`).join(', ');
      console.error(`${label} round ${round + 1}/${PAIRS} ${side}: ${text} (load ${load.at(-1).toFixed(1)})`);
    }
  }
  const present = (xs) => xs.filter((x) => x !== undefined);
  const metrics = {};
  for (const [metric, bySide] of Object.entries(values)) {
    const names = Object.keys(bySide);
    const ratios = {};
    for (const m of names.filter((n) => n.startsWith('weightmap'))) {
      for (const p of names.filter((n) => !n.startsWith('weightmap'))) {
        const perRound = bySide[m].map((x, i) => (x === undefined || bySide[p][i] === undefined ? undefined : x / bySide[p][i]));
        if (present(perRound).length) ratios[`${m} / ${p}`] = summary(present(perRound));
      }
    }
    const sidesOut = {};
    for (const [side, xs] of Object.entries(bySide)) {
      const b = bounds[metric]?.[side];
      sidesOut[side] = { ...summary(present(xs)), bound: b ? median(b) : null, share: b ? median(present(xs)) / median(b) : null };
    }
    metrics[metric] = { sides: sidesOut, ratios };
  }
  return { metrics, load: summary(load) };
}

async function decoderRows() {
  const { info, sides } = decoderSides();
  const rows = [];
  for (const type of TYPES) {
    const file = ggufModel(type);
    const weights = await readWeights(file);
    const c = weights.config;
    const kvF16BytesPerPosition = c.numLayers * 2 * c.numKvHeads * c.headDim * 2;
    const work = { bytesPerToken: bytesPerToken(weights) + kvBytesPerToken(kvF16BytesPerPosition, DEPTH, DECODE), macs: prefillMacsPerToken(weights, PROMPT, DEPTH) };
    const vocab = weights.config.vocabSize;
    for (const threads of THREADS) {
      const measures = Object.fromEntries(
        Object.entries(sides).map(([name, s]) => [name, { measure: () => s.run(file, vocab, threads), bound: (peak) => s.bound(work, peak) }]),
      );
      const result = await interleave(`${type} ${threads}t`, measures, threads, weights.sources[0].bytes);
      rows.push({ model: `Qwen3-0.6B ${type.toUpperCase()}${DEPTH ? ` at depth ${DEPTH}` : ''}`, threads, decodeMBPerToken: work.bytesPerToken / 1e6, ...result });
    }
    closeWeights(weights);
  }
  return { info, rows };
}

async function main() {
  const report = { command: `node scripts/bench/peers.js ${args.join(' ')}`.trim(), cpu: os.cpus()[0]?.model, machine: machine(), pairs: PAIRS, prompt: PROMPT, decode: DECODE, depth: DEPTH };
  if (ONLY.includes('decoder')) report.decoder = await decoderRows();
  if (ONLY.includes('moe')) {
    report.moe = await moeRows({ threads: THREADS, interleave, decoderSides, cache, prompt: PROMPT, decode: DECODE, layers: MOE_LAYERS, denseFile: ggufModel('q8_0'), runTimeout: RUN_TIMEOUT });
  }
  if (ONLY.includes('embed')) report.embed = await embedRows({ threads: THREADS, interleave, cache });
  if (args.includes('--json')) return console.log(JSON.stringify(report, null, 2));
  console.log(`${report.command}\n${report.cpu}; ${PAIRS} interleaved rounds per row; values are medians [min–max] over the rounds`);
  const titles = peersTitles(report);
  if (report.decoder) console.log(`\n${titles.decoder}\n\n${peersTable(report.decoder.rows, ['decode', 'prefill'], PAIRS).join('\n')}`);
  if (report.moe) {
    const { resident: r, firstToken: f, skipped } = report.moe;
    console.log(`\n${titles.moe}\n\n${peersTable(report.moe.rows, ['decode', 'prefill'], PAIRS).join('\n')}`);
    for (const [model, why] of Object.entries(skipped)) console.log(`\n${model}: ${why}`);
    console.log(`\nResident after ${r.tokens} generated tokens (weightmap, ${r.threads} threads): file pages ${(r.rssFileBytes / 1e9).toFixed(2)} GB of the ${(r.fileBytes / 1e9).toFixed(2)} GB file, anonymous ${(r.rssAnonBytes / 1e9).toFixed(2)} GB`);
    console.log(`First token of a freshly mapped file (weightmap, ${f.threads} threads, ms per round): Qwen3-MoE ${f.moe.map((x) => x.toFixed(0)).join(', ')}; dense Qwen3-0.6B Q8_0 ${f.dense.map((x) => x.toFixed(0)).join(', ')}`);
  }
  if (report.embed) console.log(`\n${titles.embed}\n\n${peersTable(report.embed.rows, ['embed'], PAIRS).join('\n')}`);
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
