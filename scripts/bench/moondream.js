#!/usr/bin/env node
// Moondream2-shaped benchmark: writes a MOON v2 file with random f16 weights of Moondream2's
// shapes (text d 2048 × 24 layers, vocab 51200: 2.8 GB; vision 1152 × 27 layers + projection:
// 0.9 GB, or a 2-layer vision tower with --vision-layers 2 when disk is short) into the temp
// folder by streaming, then measures
//   * text decode tokens/s against the memory-bandwidth bound (bytes read per token, weights and
//     KV cache, ÷ the read bandwidth measured after it: read-bandwidth.js), on 1 and 2 threads,
//   * vision encode time per 378×378 image on 1 and 2 threads,
//   * with --answer, the time to an answer's first token (encode + prefill of 740 positions).
// Needs the built package (npm run build:ts) and addon (WEIGHTMAP_ADDON or build/Release).
//   node scripts/bench/moondream.js [--dir DIR] [--threads 1,2] [--tokens 32] [--vision-layers 27] [--no-vision]
//                                   [--vision-only] [--vision-reps 1] [--answer] [--remove] [--root CHECKOUT]
// --vision-only skips the bandwidth probe and the text decode; --vision-reps encodes that many
// images per thread count (one engine) and reports each wall time, each CPU time and the load.
// The file is kept for the next run (same size = reused) unless --remove is given.
'use strict';
require('../args').scriptArgs('moondream.js [--dir DIR] [--threads 1,2] [--tokens 32] [--vision-layers 27] [--vision-reps 1] [--no-vision | --vision-only] [--answer] [--remove] [--root CHECKOUT]', { options: { dir: 'string', threads: 'string', tokens: 'string', 'vision-layers': 'string', 'vision-reps': 'string', 'no-vision': 'boolean', 'vision-only': 'boolean', answer: 'boolean', remove: 'boolean', root: 'string' } });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const { ROOT, dist } = require('./checkout');
const { encodeFloats } = require(dist('formats/quantization/dtype-convert.js'));
const { moonFormat } = require(dist('formats/containers/moon.js'));
const { MOONDREAM2_CONFIG } = require(dist('architectures/moondream.js'));
const { MoondreamEngine } = require(dist('engines/moondream.js'));
const { native } = require(dist('native.js'));
const { kvBytesPerToken } = require('./decoder-work');
const { measureReadBandwidth } = require('./read-bandwidth');

const visionLayers = Number(opt('vision-layers', '27'));
const threadCounts = opt('threads', '1,2').split(',').map(Number);
const decodeTokens = Number(opt('tokens', '32'));
const visionOnly = args.includes('--vision-only');
const visionReps = Math.max(1, Number(opt('vision-reps', '1')));
const dir = opt('dir', path.join(os.tmpdir(), `weightmap-moondream-bench-v${visionLayers}`));
const file = path.join(dir, 'model.moon');

// ---- the MOON file ---------------------------------------------------------------------------

const T = MOONDREAM2_CONFIG.text;
const Vc = { ...MOONDREAM2_CONFIG.vision, numLayers: visionLayers };
const d = T.hiddenSize, L = T.numLayers, f = T.intermediateSize, V = T.vocabSize;
const D = Vc.hiddenSize, Lv = Vc.numLayers, fv = Vc.intermediateSize, P = Vc.projHidden, N = Vc.numPatches;
const pin = 3 * Vc.patchSize * Vc.patchSize;

// [name, shape, init]: 'one' (LayerNorm gains), 'zero' (LayerNorm shifts), or the half-width of a
// uniform distribution (~1/sqrt(fan_in) for matrices, small for biases and embeddings).
const RECORDS = [
  ['word_token_embedding', [V, d], 0.05],
  ['t_ln_w', [L, d], 'one'], ['t_ln_b', [L, d], 'zero'],
  ['t_Wqkv_w', [L, 3 * d, d], 1 / Math.sqrt(d)], ['t_Wqkv_b', [L, 3 * d], 0.02],
  ['t_out_proj_w', [L, d, d], 1 / Math.sqrt(d)], ['t_out_proj_bias', [L, d], 0.02],
  ['t_fc1_w', [L, f, d], 1 / Math.sqrt(d)], ['t_fc1_b', [L, f], 0.02],
  ['t_fc2_w', [L, d, f], 1 / Math.sqrt(f)], ['t_fc2_b', [L, d], 0.02],
  ['t_linear_w', [V, d], 1 / Math.sqrt(d)], ['t_linear_b', [V], 0.02],
  ['t_ln_out_w', [d], 'one'], ['t_ln_out_b', [d], 'zero'],
  ['v_patch_embedding_linear_w', [pin, D], 1 / Math.sqrt(pin)], ['v_patch_embedding_linear_b', [D], 0.02],
  ['v_pos_embedding', [1, N, D], 0.05],
  ['v_Wqkv_w', [Lv, D, 3 * D], 1 / Math.sqrt(D)], ['v_Wqkv_b', [Lv, 3 * D], 0.02],
  ['v_out_proj_w', [Lv, D, D], 1 / Math.sqrt(D)], ['v_out_proj_b', [Lv, D], 0.02],
  ['v_fc1_w', [Lv, D, fv], 1 / Math.sqrt(D)], ['v_fc1_b', [Lv, fv], 0.02],
  ['v_fc2_w', [Lv, fv, D], 1 / Math.sqrt(fv)], ['v_fc2_b', [Lv, D], 0.02],
  ['v_norm1_w', [Lv, D], 'one'], ['v_norm1_b', [Lv, D], 'zero'],
  ['v_norm2_w', [Lv, D], 'one'], ['v_norm2_b', [Lv, D], 'zero'],
  ['v_norm_out_w', [D], 'one'], ['v_norm_out_b', [D], 'zero'],
  ['v_proj_fc1_w', [2 * D, P], 1 / Math.sqrt(2 * D)], ['v_proj_fc1_b', [P], 0.02],
  ['v_proj_fc2_w', [P, d], 1 / Math.sqrt(P)], ['v_proj_fc2_b', [d], 0.02],
];

const numel = (shape) => shape.reduce((a, b) => a * b, 1);
const recordBytes = ([name, shape]) => 12 + Buffer.byteLength(name) + 8 * shape.length + 2 * numel(shape);
const fileBytes = 8 + RECORDS.reduce((s, r) => s + recordBytes(r), 0);

// A pool of 4 Mi f16 values per init (xorshift32 uniform); tensors stream windows of it at
// rotating offsets, so writing 3.7 GB costs little more than the disk.
const POOL = 1 << 22;
const pools = new Map();
let rng = 0x9e3779b9;
function pool(init) {
  if (pools.has(init)) return pools.get(init);
  const values = new Float32Array(POOL);
  if (init === 'one') values.fill(1);
  else if (init !== 'zero') {
    for (let i = 0; i < POOL; i++) {
      rng ^= rng << 13; rng >>>= 0; rng ^= rng >>> 17; rng ^= rng << 5; rng >>>= 0;
      values[i] = (rng / 4294967296 * 2 - 1) * init;
    }
  }
  const bytes = Buffer.from(encodeFloats(values, 'f16'));
  pools.set(init, bytes);
  return bytes;
}

function writeMoon() {
  fs.mkdirSync(dir, { recursive: true });
  const tmp = `${file}.partial`;
  const fd = fs.openSync(tmp, 'w');
  const head = Buffer.alloc(8);
  head.writeUInt32LE(0x4d4f4f4e, 0);
  head.writeUInt32LE(2, 4);
  fs.writeSync(fd, head);
  let rotate = 0;
  for (const [name, shape, init] of RECORDS) {
    const nameBytes = Buffer.from(name);
    const h = Buffer.alloc(12 + nameBytes.length + 8 * shape.length);
    h.writeUInt32LE(nameBytes.length, 0);
    h.writeUInt32LE(shape.length, 4);
    h.writeUInt32LE(numel(shape), 8);
    nameBytes.copy(h, 12);
    shape.forEach((s, i) => h.writeBigUInt64LE(BigInt(s), 12 + nameBytes.length + 8 * i));
    fs.writeSync(fd, h);
    const src = pool(init);
    let left = 2 * numel(shape);
    while (left > 0) {
      rotate = (rotate + 7919 * 2) % (src.length / 2);
      const n = Math.min(left, src.length - rotate);
      fs.writeSync(fd, src, rotate, n);
      left -= n;
    }
  }
  fs.closeSync(fd);
  fs.renameSync(tmp, file);
}

// ---- measurements ----------------------------------------------------------------------------

/**
 * Read bandwidth in bytes/s with `threads` threads (read-bandwidth.js, the probe every decode bound
 * uses) over the text weights in the mapped file.
 */
function readBandwidth(weights, threads) {
  const text = weights.tensors.filter((t) => t.name.startsWith('model.text.'));
  const start = Math.min(...text.map((t) => t.byteOffset));
  const end = Math.max(...text.map((t) => t.byteOffset + t.byteLength));
  const bytes = weights.sources[0].bytes;
  return measureReadBandwidth(new Uint8Array(bytes.buffer, bytes.byteOffset + start, end - start), threads);
}

/** Bytes of weights one decode step reads: every text matrix and vector, one embedding row. */
function decodeBytesPerToken(weights) {
  let bytes = 0;
  for (const t of weights.tensors) {
    if (!t.name.startsWith('model.text.')) continue;
    bytes += t.name === 'model.text.wte' ? 2 * d : t.byteLength;
  }
  return bytes;
}

/** Touches every page of the file once so the runs measure memory, not the disk. */
function warmPageCache(weights) {
  const bytes = weights.sources[0].bytes;
  let sum = 0;
  for (let i = 0; i < bytes.length; i += 4096) sum += bytes[i];
  return sum;
}

async function benchDecode(weights, threads) {
  const engine = await MoondreamEngine.load(weights, { threads });
  const session = engine.createSession();
  const prompt = Array.from({ length: 16 }, (_, i) => (i * 7919) % 50000);
  const t0 = performance.now();
  let logits = await session.eval(prompt);
  const prefillMs = performance.now() - t0;
  let token = 0;
  const pick = (x) => { let b = 0; for (let i = 1; i < x.length; i++) if (x[i] > x[b]) b = i; return b; };
  token = pick(logits);
  logits = await session.eval([token]); // first decode step (warm-up)
  const t1 = performance.now();
  for (let i = 0; i < decodeTokens; i++) {
    token = pick(logits);
    logits = await session.eval([token]);
  }
  const decodeMs = performance.now() - t1;
  const kvBytes = kvBytesPerToken(L * 2 * d * 4, prompt.length + 1, decodeTokens); // f32 keys and values, every layer
  session.dispose();
  engine.dispose();
  return { prefillTokPerS: +(prompt.length / (prefillMs / 1000)).toFixed(2), decodeTokPerS: +(decodeTokens / (decodeMs / 1000)).toFixed(3), kvBytes };
}

async function benchVision(weights, threads) {
  const engine = await MoondreamEngine.load(weights, { threads });
  const size = Vc.imageSize;
  const rgb = new Uint8Array(size * size * 3);
  for (let i = 0; i < rgb.length; i++) rgb[i] = (i * 2654435761) >>> 24;
  const seconds = [], cpuSeconds = [];
  for (let r = 0; r < visionReps; r++) {
    const t0 = performance.now();
    const cpu0 = process.cpuUsage();
    await engine.encodeRgb(rgb);
    const cpu = process.cpuUsage(cpu0);
    seconds.push(+((performance.now() - t0) / 1000).toFixed(2));
    cpuSeconds.push(+((cpu.user + cpu.system) / 1e6).toFixed(2));
  }
  engine.dispose();
  return { seconds, median: median(seconds), cpuSeconds, cpuMedian: median(cpuSeconds) };
}

function median(values) {
  const sorted = [...values].sort((x, y) => x - y);
  return sorted[(sorted.length - 1) >> 1];
}

/**
 * --answer: time to the first answer token, i.e. encoding the image plus prefilling BOS + 729
 * image rows + a 10-token question in the text model (what answer() does before decoding).
 */
async function benchFirstToken(weights, threads) {
  const engine = await MoondreamEngine.load(weights, { threads });
  const size = Vc.imageSize;
  const rgb = new Uint8Array(size * size * 3);
  for (let i = 0; i < rgb.length; i++) rgb[i] = (i * 40503) >>> 8;
  const t0 = performance.now();
  const { embeddings } = await engine.encodeRgb(rgb);
  const question = Array.from({ length: 10 }, (_, i) => 198 + i);
  const rows = new Float32Array((1 + N + question.length) * d);
  rows.set(engine.embed([T.bosTokenId]), 0);
  rows.set(embeddings, d);
  rows.set(engine.embed(question), (1 + N) * d);
  const t1 = performance.now();
  const session = engine.createSession();
  await session.eval(rows);
  const t2 = performance.now();
  session.dispose();
  engine.dispose();
  return { firstTokenSeconds: +((t2 - t0) / 1000).toFixed(2), answerPrefillSeconds: +((t2 - t1) / 1000).toFixed(2) };
}

async function main() {
  if (!fs.existsSync(file) || fs.statSync(file).size !== fileBytes) {
    fs.mkdirSync(dir, { recursive: true });
    const free = fs.statfsSync ? fs.statfsSync(dir) : undefined;
    if (free && free.bavail * free.bsize < fileBytes * 1.1) {
      throw new Error(`not enough disk for ${(fileBytes / 1e9).toFixed(2)} GB in ${dir}: try --vision-layers 2 or --dir`);
    }
    const t0 = performance.now();
    writeMoon();
    console.error(`wrote ${file} (${(fileBytes / 1e9).toFixed(2)} GB) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  }
  const weights = await moonFormat.read(file);
  warmPageCache(weights);
  const perToken = decodeBytesPerToken(weights);
  const report = {
    root: ROOT,
    file,
    fileGB: +(fileBytes / 1e9).toFixed(3),
    visionLayers: Lv,
    cpu: os.cpus()[0]?.model,
    isa: native().kernels.isa(),
    decodeBytesPerTokenGB: +(perToken / 1e9).toFixed(3),
    runs: [],
  };
  for (const threads of threadCounts) {
    if (visionOnly) {
      const vision = await benchVision(weights, threads);
      // CPU seconds (all threads of the process) are what the other processes on a shared machine
      // do not add to; wall seconds are what a user waits.
      report.runs.push({
        threads,
        visionEncodeSecondsPerImage: vision.median,
        visionEncodeSeconds: vision.seconds,
        visionEncodeCpuSeconds: vision.cpuSeconds,
        loadavg: os.loadavg().map((x) => +x.toFixed(2)),
      });
      console.error(JSON.stringify(report.runs[report.runs.length - 1]));
      continue;
    }
    const { kvBytes, ...decode } = await benchDecode(weights, threads);
    const bandwidth = readBandwidth(weights, threads) / 1e9;
    const bound = (bandwidth * 1e9) / (perToken + kvBytes);
    const visionSeconds = args.includes('--no-vision') ? null : (await benchVision(weights, threads)).median;
    report.runs.push({
      threads,
      readBandwidthGBs: +bandwidth.toFixed(2),
      kvMBPerToken: +(kvBytes / 1e6).toFixed(1),
      decodeBoundTokPerS: +bound.toFixed(3),
      ...decode,
      decodeFractionOfBound: +(decode.decodeTokPerS / bound).toFixed(3),
      visionEncodeSecondsPerImage: visionSeconds,
      ...(args.includes('--answer') ? await benchFirstToken(weights, threads) : {}),
    });
    console.error(JSON.stringify(report.runs[report.runs.length - 1]));
  }
  for (const s of weights.sources) s.close();
  if (args.includes('--remove')) fs.rmSync(dir, { recursive: true, force: true });
  console.log(JSON.stringify(report, null, 2));
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
