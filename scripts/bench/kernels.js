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
//  - ggml block types (GGUF) against 8-bit activations, W [3072, 1024] of random blocks: m = 1
//    (decode, GB/s of blocks) and m = --m (prefill, GMAC/s).
// One-thread rows also show the rate by this process's CPU time ("cpu-time"), which other
// work on the machine does not inflate.
// Wall-clock times: on a machine shared with other work the spread shows it (the load average is
// printed first).
//   node scripts/bench/kernels.js [--isa avx512vnni,avx2] [--threads 1,2] [--reps 9] [--m 128]
//     [--only matvec,matmul,qwen3,decode,hgemm,gemmi8,ggml] [--types q4_k,q6_k,...]
'use strict';
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
  for (const [rows, cols, group] of [
    [3072, 1024, 64],
    [1024, 3072, 64],
    [3072, 1024, 32],
  ]) {
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
  const group = 64;
  const distinct = 4; // 4 × 15.7 MB of weights: more than any L3 here, so every token streams from memory
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

// ggml block layouts: [values, bytes, byte offsets of the f16 scale fields] (native/kernels/ggml_blocks.h).
const GGML_BLOCKS = {
  q4_0: [32, 18, [0]], q4_1: [32, 20, [0, 2]], q5_0: [32, 22, [0]], q5_1: [32, 24, [0, 2]], q8_0: [32, 34, [0]], iq4_nl: [32, 18, [0]],
  q2_k: [256, 84, [80, 82]], q3_k: [256, 110, [108]], q4_k: [256, 144, [0, 2]], q5_k: [256, 176, [0, 2]], q6_k: [256, 210, [208]], iq4_xs: [256, 136, [0]],
};

if (only.includes('ggml')) {
  const [rows, cols] = [3072, 1024];
  console.log(`
ggml blocks against 8-bit activations: W [${rows}, ${cols}], m = 1 (GB/s of blocks) and m = ${prefillM} (GMAC/s)`);
  for (const type of opt('types', Object.keys(GGML_BLOCKS).join(',')).split(',')) {
    const [values, bytes, scales] = GGML_BLOCKS[type];
    const w = new Uint8Array(((rows * cols) / values) * bytes);
    crypto.randomFillSync(w);
    // f16 scales near 2^-10: random bits there would make NaNs and subnormals
    for (let b = 0; b < w.length; b += bytes) for (const o of scales) (w[b + o] = Math.floor(rand() * 256)), (w[b + o + 1] = 0x14);
    for (const m of [1, prefillM]) {
      const x = f32(m * cols);
      const xq = new Int8Array(m * cols);
      const xd = new Float32Array((m * cols) / 32);
      const xs = new Int16Array((m * cols) / 16);
      kernels.quantizeAct('scalar', x, xq, xd, xs);
      const y = new Float32Array(m * rows);
      for (const isa of isas)
        for (const threads of threadCounts) {
          const t = time(() => kernels.ggmlMatmul(isa, type, w, xq, xd, xs, y, m, rows, cols, threads));
          const [work, unit] = m === 1 ? [w.length / 1e9, 'GB/s'] : [(m * rows * cols) / 1e9, 'GMAC/s'];
          console.log(`  ${type.padEnd(7)} m=${String(m).padEnd(4)} ${isa.padEnd(11)} ${threads}t  ${rate(work, t, unit)} ${cpuRate(work, t, unit, threads)}`);
        }
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
