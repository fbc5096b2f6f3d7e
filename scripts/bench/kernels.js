#!/usr/bin/env node
// Kernel throughput per table and thread count, median [min..max] over repetitions:
//  - matvec_q8 (decode, memory-bound): GB/s of weights+scales streamed;
//  - matmul_q8 (prefill, compute-bound): GFLOP/s, plus the linear layers of Qwen3-0.6B
//    (28 layers of q,k,v,o,gate,up,down; attention, norms and lm_head excluded) as tokens/s;
//  - the same linear layers for decode (matvec_q8, one token), streaming 4 distinct layers (more
//    than the L3) in turn: tokens/s, the memory-bound ceiling of decode;
//  - hgemm / hgemm_trans: m = 1 (decode, GB/s of f16 weights) and m = 64 (GFLOP/s);
//  - gemm_i8 (the encoder's int8 linears) at MiniLM's shapes, 576 rows (32 texts of 18 tokens):
//    GMAC/s and the share of the measured int8 peak (scripts/bench/peak.js);
//  - ggml block types (GGUF quantizations) against 8-bit activations: m = 1 at Qwen3-0.6B's
//    shapes as GB/s of weight blocks streamed from memory (distinct copies of each matrix
//    totalling > 256 MB, well past the L3, used in turn), beside the read bandwidth measured in the same run
//    (scripts/bench/bandwidth.js); m = 64 as GMAC/s. The scalar table is included (--isa).
// One-thread rows also show the rate by this process's CPU time ("cpu-time"), which other
// work on the machine does not inflate.
// Wall-clock times: on a machine shared with other work the spread shows it (the load average is
// printed first).
//   node scripts/bench/kernels.js [--isa avx512vnni,avx2] [--threads 1,2] [--reps 9] [--m 128]
//     [--only matvec,matmul,qwen3,decode,hgemm,gemmi8,ggml] [--types q4_0,q4_k,...]
//     [--matvec-shapes 32000x288x32,768x288x32]   (rows x cols x group of the matvec_q8 rows;
//                                                  those two: stories15M's classifier and w1)
//     [--decode-group 64]                          (Q8_0 group of the Qwen3 layers of --only decode)
'use strict';
require('../args').scriptArgs('kernels.js [--isa avx512vnni,avx2] [--threads 1,2] [--reps 9] [--m 128] [--only matvec,matmul,qwen3,decode,hgemm,gemmi8,ggml] [--matvec-shapes RxCxG,...] [--decode-group 64] [--types T,...]', { options: { isa: 'string', threads: 'string', reps: 'string', m: 'string', only: 'string', 'matvec-shapes': 'string', 'decode-group': 'string', types: 'string' } });
const crypto = require('node:crypto');
const os = require('node:os');
const loadAddon = require('./addon');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const { kernels } = loadAddon();
const isas = opt('isa', kernels.availableIsas().filter((i) => i !== 'scalar').join(',')).split(',');
const threadCounts = opt('threads', [...new Set([1, kernels.physicalCores()])].join(',')).split(',').map(Number);
const reps = Number(opt('reps', '9'));
const prefillM = Number(opt('m', '128'));
const only = opt('only', 'matvec,matmul,qwen3,decode,hgemm,gemmi8,ggml').split(',');

let seed = 12345;
const rand = () => ((seed = (seed * 1103515245 + 12345) >>> 0) >>> 8) / 16777216;
const int8 = (n) => {
  const a = new Int8Array(n);
  crypto.randomFillSync(a);
  return a;
};
const f32 = (n, scale = 1) => Float32Array.from({ length: n }, () => (rand() * 2 - 1) * scale);
const f16 = (n) => {
  const h = new Uint16Array(n);
  kernels.f32ToF16('scalar', f32(n, 0.1), h);
  return h;
};

/**
 * Seconds per call: median [min..max] of `reps` wall-clock timings, each long enough to be
 * measured, and the median CPU time of this process per call (with one thread, the time the
 * kernel itself needed even when other work shares the cores).
 */
function time(fn) {
  fn();
  let inner = 1;
  for (;;) {
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < inner; i++) fn();
    if (Number(process.hrtime.bigint() - t0) > 2e7 || inner >= 1 << 16) break;
    inner *= 2;
  }
  const wall = [];
  const cpu = [];
  for (let r = 0; r < reps; r++) {
    const c0 = process.cpuUsage();
    const t0 = process.hrtime.bigint();
    for (let i = 0; i < inner; i++) fn();
    wall.push(Number(process.hrtime.bigint() - t0) / 1e9 / inner);
    const c = process.cpuUsage(c0);
    cpu.push((c.user + c.system) / 1e6 / inner);
  }
  wall.sort((a, b) => a - b);
  cpu.sort((a, b) => a - b);
  const mid = Math.floor(reps / 2);
  return { median: wall[mid], min: wall[0], max: wall[wall.length - 1], cpu: cpu[mid] };
}

/** "median [lo..hi]" of work/seconds (higher is better, so lo comes from the slowest run). */
function rate(work, t, unit) {
  const f = (s) => (work / s).toFixed(work / s >= 100 ? 0 : 1);
  return `${f(t.median)} ${unit} [${f(t.max)}..${f(t.min)}]`.padEnd(30);
}

/** With one thread: the rate by CPU time (what an idle machine would give). */
function cpuRate(work, t, unit, threads) {
  if (threads !== 1) return '';
  const v = work / t.cpu;
  return `cpu-time ${v.toFixed(v >= 100 ? 0 : 1)} ${unit}`;
}

function q8Weights(rows, cols, group) {
  return { wq: int8(rows * cols), ws: f32((rows * cols) / group, 0.01) };
}

function q8Acts(m, cols, group) {
  const x = f32(m * cols);
  const xq = new Int8Array(m * cols);
  const xs = new Float32Array((m * cols) / group);
  kernels.quantizeQ8('scalar', x, group, xq, xs);
  return { xq, xs };
}

console.log(
  `kernels: ${isas.join(', ')}; threads ${threadCounts.join(', ')}; ${reps} repetitions; median [min..max]; ` +
    `load average ${os.loadavg().map((v) => v.toFixed(1)).join(' ')} on ${os.cpus().length} CPUs`,
);

if (only.includes('matvec')) {
  console.log('\nmatvec_q8 (decode): W [rows, cols] Q8_0 · x');
  const shapes = opt('matvec-shapes', '3072x1024x64,1024x3072x64,3072x1024x32')
    .split(',')
    .map((s) => s.split('x').map(Number));
  for (const [rows, cols, group] of shapes) {
    const w = q8Weights(rows, cols, group);
    const x = q8Acts(1, cols, group);
    const y = new Float32Array(rows);
    const bytes = rows * cols + (rows * cols * 4) / group;
    for (const isa of isas)
      for (const threads of threadCounts) {
        const t = time(() => kernels.matvecQ8(isa, w.wq, w.ws, x.xq, x.xs, y, rows, cols, group, threads));
        console.log(
          `  ${`${rows}x${cols} g${group}`.padEnd(16)} ${isa.padEnd(11)} ${threads}t  ${rate(bytes / 1e9, t, 'GB/s')} ${cpuRate(bytes / 1e9, t, 'GB/s', threads)}`,
        );
      }
  }
}

if (only.includes('matmul')) {
  console.log(`\nmatmul_q8 (prefill): X [${prefillM}, cols] · W [rows, cols]ᵀ, Q8_0`);
  for (const [rows, cols, group] of [
    [3072, 1024, 64],
    [1024, 3072, 64],
    [3072, 1024, 32],
  ]) {
    const w = q8Weights(rows, cols, group);
    const x = q8Acts(prefillM, cols, group);
    const y = new Float32Array(prefillM * rows);
    for (const isa of isas)
      for (const threads of threadCounts) {
        const t = time(() => kernels.matmulQ8(isa, w.wq, w.ws, x.xq, x.xs, y, prefillM, rows, cols, group, threads));
        const flop = (2 * prefillM * rows * cols) / 1e9;
        console.log(`  ${`${rows}x${cols} g${group}`.padEnd(16)} ${isa.padEnd(11)} ${threads}t  ${rate(flop, t, 'GFLOP/s')} ${cpuRate(flop, t, 'GFLOP/s', threads)}`);
      }
  }
}

// Qwen3-0.6B's linear layers [rows, cols]: q, k, v, o, gate, up, down (hidden 1024, 16 q heads and
// 8 kv heads of 128, intermediate 3072; 28 layers).
const QWEN3_LAYER = [
  [2048, 1024],
  [1024, 1024],
  [1024, 1024],
  [1024, 2048],
  [3072, 1024],
  [3072, 1024],
  [1024, 3072],
];

if (only.includes('qwen3')) {
  for (const group of [64, 32]) {
    console.log(`\nQwen3-0.6B linear layers, prefill of ${prefillM} tokens (Q8_0 group ${group}; 28 layers; no attention/lm_head)`);
    const mats = QWEN3_LAYER.map(([rows, cols]) => ({ rows, cols, ...q8Weights(rows, cols, group), x: q8Acts(prefillM, cols, group), y: new Float32Array(prefillM * rows) }));
    for (const isa of isas)
      for (const threads of threadCounts) {
        const t = time(() => {
          for (const mt of mats) kernels.matmulQ8(isa, mt.wq, mt.ws, mt.x.xq, mt.x.xs, mt.y, prefillM, mt.rows, mt.cols, group, threads);
        });
        console.log(`  ${isa.padEnd(11)} ${threads}t  ${rate(prefillM / 28, t, 'tok/s')} ${cpuRate(prefillM / 28, t, 'tok/s', threads)}`);
      }
  }
}

if (only.includes('decode')) {
  const group = Number(opt('decode-group', '64'));
  // 16 × 15.7 MB of weights, so every token streams from memory: 4 (63 MB) were partly served by the
  // 32 MB L3 of the Zen 5 machine (a 64 MB buffer read in turn: 59-64 GB/s at 2 threads, 256 MB+: 49-51)
  const distinct = 16;
  console.log(`\nQwen3-0.6B linear layers, decode of 1 token (Q8_0 group ${group}; 28 layers, ${distinct} distinct in turn)`);
  const layers = Array.from({ length: distinct }, () =>
    QWEN3_LAYER.map(([rows, cols]) => ({ rows, cols, ...q8Weights(rows, cols, group), x: q8Acts(1, cols, group), y: new Float32Array(rows) })),
  );
  for (const isa of isas)
    for (const threads of threadCounts) {
      const t = time(() => {
        for (let l = 0; l < 28; l++)
          for (const mt of layers[l % distinct]) kernels.matvecQ8(isa, mt.wq, mt.ws, mt.x.xq, mt.x.xs, mt.y, mt.rows, mt.cols, group, threads);
      });
      console.log(`  ${isa.padEnd(11)} ${threads}t  ${rate(1, t, 'tok/s')} ${cpuRate(1, t, 'tok/s', threads)}`);
    }
}

if (only.includes('hgemm')) {
  for (const m of [1, 64]) {
    console.log(`\nhgemm (B f16 [k, n]) and hgemm_trans (B f16 [n, k]), m = ${m}, k = 1024, n = 3072`);
    const k = 1024;
    const n = 3072;
    const a = f32(m * k);
    const b = f16(k * n);
    const c = new Float32Array(m * n);
    for (const name of ['hgemm', 'hgemmTrans'])
      for (const isa of isas)
        for (const threads of threadCounts) {
          const t = time(() => kernels[name](isa, a, b, c, m, k, n, threads));
          const [work, unit] = m === 1 ? [(2 * k * n) / 1e9, 'GB/s'] : [(2 * m * k * n) / 1e9, 'GFLOP/s'];
          console.log(`  ${name.padEnd(11)} ${isa.padEnd(11)} ${threads}t  ${rate(work, t, unit)} ${cpuRate(work, t, unit, threads)}`);
        }
  }
}

if (only.includes('gemmi8')) {
  const { measurePeak } = require('./peak.js');
  (async () => {
    const peaks = new Map();
    for (const threads of threadCounts) peaks.set(threads, await measurePeak(threads));
    const m = 576;
    console.log(`\ngemm_i8 (per-channel int8, weights packed once): X [${m}, k] · W [n, k]ᵀ`);
    for (const [n, k] of [
      [384, 384],
      [1536, 384],
      [384, 1536],
    ]) {
      const wq = int8(n * k).map((v) => (v === -128 ? 0 : v));
      const ws = f32(n, 0.01);
      const x = q8Acts(m, k, k);
      const y = new Float32Array(m * n);
      for (const isa of isas)
        for (const threads of threadCounts) {
          const runs = [];
          for (let r = 0; r < reps; r++) runs.push(kernels.gemmI8(isa, wq, ws, x.xq, x.xs, null, y, m, n, k, threads, 20) / 20);
          runs.sort((a, b) => a - b);
          const t = { median: runs[Math.floor(reps / 2)], min: runs[0], max: runs[runs.length - 1] };
          const gmac = (m * n * k) / 1e9;
          const peak = peaks.get(threads);
          const share = peak ? ` = ${((100 * gmac) / t.median / (peak.int8MacsPerSecond / 1e9)).toFixed(0)}% of the int8 peak` : '';
          console.log(`  ${`${n}x${k}`.padEnd(16)} ${isa.padEnd(11)} ${threads}t  ${rate(gmac, t, 'GMAC/s')}${share}`);
        }
    }
  })();
}

if (only.includes('ggml')) {
  // Bytes per block, values per block, byte offsets of the f16 scale (and min) of each type (MXFP4:
  // none; its e8m0 exponent, byte 0, set below).
  const TYPES = {
    q4_0: [18, 32, [0]], q4_1: [20, 32, [0, 2]], q5_0: [22, 32, [0]], q5_1: [24, 32, [0, 2]], q8_0: [34, 32, [0]],
    q2_k: [84, 256, [80, 82]], q3_k: [110, 256, [108]], q4_k: [144, 256, [0, 2]], q5_k: [176, 256, [0, 2]],
    q6_k: [210, 256, [208]], iq4_nl: [18, 32, [0]], iq4_xs: [136, 256, [0]], mxfp4: [17, 32, []],
  };
  const types = opt('types', Object.keys(TYPES).join(',')).split(',');
  const ggmlIsas = opt('isa', ['scalar', ...kernels.availableIsas().filter((i) => i !== 'scalar')].join(',')).split(',');
  // random blocks with f16 factors of ordinary size (0x2000..0x23ff: 2^-7 up to 2^-6)
  const blocks = (type, count) => {
    const [bytes, , f16s] = TYPES[type];
    const w = new Uint8Array(count * bytes);
    crypto.randomFillSync(w);
    for (let b = 0; b < count; b++) for (const o of f16s) w[b * bytes + o + 1] = 0x20 | (w[b * bytes + o + 1] & 3);
    if (type === 'mxfp4') for (let b = 0; b < count; b++) w[b * bytes] = 120 + (w[b * bytes] & 3);  // 2^-8 .. 2^-5
    return w;
  };
  const acts = (m, n) => {
    const q = new Int8Array(m * n);
    const d = new Float32Array((m * n) / 32);
    const sum = new Int16Array((m * n) / 16);
    kernels.quantizeAct('scalar', f32(m * n), q, d, sum);
    return { q, d, sum };
  };
  const bwView = new BigUint64Array((256 * 1048576) / 8);
  for (let i = 0; i < bwView.length; i += 512) bwView[i] = BigInt(i);
  const bandwidth = new Map();
  for (const threads of threadCounts) {
    kernels.readBandwidth(bwView, threads, 1);
    const runs = Array.from({ length: reps }, () => bwView.byteLength / kernels.readBandwidth(bwView, threads, 1) / 1e9).sort((a, b) => a - b);
    bandwidth.set(threads, { median: runs[Math.floor(reps / 2)], best: runs[runs.length - 1] });
  }
  console.log(
    `\nggml, m = 1 (decode): GB/s of weight blocks, copies of each matrix totalling > 256 MB used in turn; share of the ` +
      `read bandwidth over 256 MiB (median; fastest run vs fastest run): ` +
      threadCounts.map((t) => `${t}t ${bandwidth.get(t).median.toFixed(1)} GB/s [best ${bandwidth.get(t).best.toFixed(1)}]`).join(', '),
  );
  for (const type of types)
    for (const [rows, n] of [
      [1024, 1024],
      [3072, 1024],
      [1024, 3072],
    ]) {
      const bytes = (rows * n * TYPES[type][0]) / TYPES[type][1];
      // > 256 MB: with > 64 MB the 32 MB L3 still served part of each pass (see --only decode)
      const copies = Array.from({ length: Math.ceil(256e6 / bytes) }, () => blocks(type, (rows * n) / TYPES[type][1]));
      const x = acts(1, n);
      const y = new Float32Array(rows);
      for (const isa of ggmlIsas)
        for (const threads of threadCounts) {
          let c = 0;
          const t = time(() => kernels.ggmlMatmul(isa, type, copies[c++ % copies.length], x.q, x.d, x.sum, y, 1, rows, n, threads));
          const bw = bandwidth.get(threads);
          const share = `${((100 * bytes) / t.median / 1e9 / bw.median).toFixed(0)}%; ${((100 * bytes) / t.min / 1e9 / bw.best).toFixed(0)}%`;
          console.log(
            `  ${type.padEnd(7)} ${`${rows}x${n}`.padEnd(10)} ${isa.padEnd(11)} ${threads}t  ${rate(bytes / 1e9, t, 'GB/s')} ${`${share} of read bw`.padEnd(20)} ${cpuRate(bytes / 1e9, t, 'GB/s', threads)}`,
          );
        }
    }
  // A few activation rows (batched decode, a speculative verification): the per-row cost against
  // m = 1's, weights in cache (the compute side; the reads are m = 1's above).
  {
    const [rows, n] = [3072, 1024];
    console.log(`\nggml, m = 2..8 (a few rows): X [m, ${n}] · W [${rows}, ${n}]ᵀ, CPU ms per call and per row ÷ m = 1's per row`);
    for (const type of types) {
      const w = blocks(type, (rows * n) / TYPES[type][1]);
      for (const isa of ggmlIsas) {
        if (isa === 'scalar') continue;
        const perRow = {};
        for (const m of [1, 2, 3, 4, 5, 8]) {
          const x = acts(m, n);
          const y = new Float32Array(m * rows);
          const t = time(() => kernels.ggmlMatmul(isa, type, w, x.q, x.d, x.sum, y, m, rows, n, 1));
          perRow[m] = t.cpu / m;
        }
        const cells = Object.entries(perRow).map(([m, c]) => `m=${m} ${(c * m * 1e3).toFixed(3)} ms (${(c / perRow[1]).toFixed(2)})`);
        console.log(`  ${type.padEnd(7)} ${isa.padEnd(11)} 1t  ${cells.join('  ')}`);
      }
    }
  }
  const m = 64;
  const [rows, n] = [3072, 1024];
  console.log(`\nggml, m = ${m} (prefill): X [${m}, ${n}] · W [${rows}, ${n}]ᵀ, GMAC/s`);
  for (const type of types) {
    const w = blocks(type, (rows * n) / TYPES[type][1]);
    const x = acts(m, n);
    const y = new Float32Array(m * rows);
    for (const isa of ggmlIsas)
      for (const threads of threadCounts) {
        const t = time(() => kernels.ggmlMatmul(isa, type, w, x.q, x.d, x.sum, y, m, rows, n, threads));
        const gmac = (m * rows * n) / 1e9;
        console.log(`  ${type.padEnd(7)} ${isa.padEnd(11)} ${threads}t  ${rate(gmac, t, 'GMAC/s')} ${cpuRate(gmac, t, 'GMAC/s', threads)}`);
      }
  }
}
