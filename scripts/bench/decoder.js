#!/usr/bin/env node
// Decoder engine speed on a Qwen3-0.6B-shaped ajc1 file with random Q8_0 weights (made by
// make-ajc1.js in the temp folder if absent), or with --gguf TYPE a GGUF of that shape with random
// blocks of llama.cpp's file type TYPE (q4_k_m, q4_0, q6_k, q8_0; made by make-gguf.js): prefill
// tok/s (one prompt as one batch) and decode tok/s (one token per call, greedy), per thread count,
// with min/median/max over runs, the ISA, the load cost (ms, MB copied, matrices converted), and
// the memory-bandwidth bound of decode at each position (bytes read per token — the weights and
// the KV cache up to that position — ÷ the read bandwidth measured in the same run,
// read-bandwidth.js).
// Decode runs at each --position: that many positions filled by a prefill (untimed; one session
// filled up to each position in turn), then --decode tokens per run (truncated back between runs), with the process's CPU time
// per decoded token (user and system, and per thread from /proc: what the thread pool burns beside
// the work shows here).
// --kv picks the KV cache's element type (default: the engine's).
// Each thread count's report gives the MB of the model file mapped through 2 MB page-table entries
// (FilePmdMapped, Linux): a file cached in small folios (copied with cp, written in small pieces)
// is read through 4 KB entries. --drop-cache first drops the file's cached pages (posix_fadvise
// DONTNEED, through dd) so that the load reads it back as a fresh download is read (docs/performance.md, "Weights
// in place through 2 MB page-table entries").
// Needs `npm run build:ts` (dist/) and the addon (WEIGHTMAP_ADDON or build/).
//   node scripts/bench/decoder.js [--model PATH] [--threads 1,2] [--prompt 512 (0: no prefill run)] [--decode 128] [--runs 3]
//                                 [--position 16 | 512,2048,4096] [--kv f16|f32|q8_0]
//                                 [--bandwidth GBps] [--quant none|q8_0|f32] [--gguf q4_k_m|q4_0|q6_k|q8_0]
//                                 [--root CHECKOUT (another built worktree to measure: checkout.js)] [--drop-cache]
'use strict';
require('../args').scriptArgs('decoder.js [--model PATH] [--gguf TYPE] [--threads 1,2] [--prompt 512] [--decode 128] [--runs 3] [--position 16] [--kv f16|q8_0] [--quant Q] [--bandwidth GB/s] [--drop-cache] [--root CHECKOUT]', { options: { model: 'string', gguf: 'string', threads: 'string', prompt: 'string', decode: 'string', runs: 'string', position: 'string', kv: 'string', quant: 'string', bandwidth: 'string', 'drop-cache': 'boolean', root: 'string' } });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { ROOT, dist } = require('./checkout');
const { readWeights } = require(dist('formats'));
const { DecoderEngine } = require(dist('engines/decoder'));
const { bytesPerToken, kvBytesPerToken } = require('./decoder-work');
const { measureReadBandwidth } = require('./read-bandwidth');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);

function argmax(x) {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

/** CPU ms (user + system) each thread of this process has used so far, by "tid name" (Linux; else empty). */
function threadCpuMs() {
  const out = new Map();
  let tids = [];
  try {
    tids = fs.readdirSync('/proc/self/task');
  } catch {
    return out;
  }
  const tick = 1000 / 100; // USER_HZ
  for (const tid of tids) {
    try {
      const stat = fs.readFileSync(`/proc/self/task/${tid}/stat`, 'utf8');
      const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' '); // fields from the 3rd on
      const name = stat.slice(stat.indexOf('(') + 1, stat.lastIndexOf(')'));
      out.set(`${tid} ${name}`, (Number(fields[11]) + Number(fields[12])) * tick);
    } catch {
      // the thread ended
    }
  }
  return out;
}

/** MB of `file` this process maps through 2 MB page-table entries (Linux), else null. */
function pmdMappedMB(file) {
  let smaps;
  try {
    smaps = fs.readFileSync('/proc/self/smaps', 'utf8');
  } catch {
    return null;
  }
  const real = fs.realpathSync(file);
  let inFile = false;
  let kb = 0;
  for (const line of smaps.split('\n')) {
    if (/^[0-9a-f]+-[0-9a-f]+ /.test(line)) inFile = line.endsWith(` ${real}`);
    else if (inFile && line.startsWith('FilePmdMapped:')) kb += Number(line.split(/\s+/)[1]);
  }
  return +(kb / 1024).toFixed(1);
}

function stats(values, digits = 1) {
  const s = [...values].sort((a, b) => a - b);
  const r = (v) => +v.toFixed(digits);
  return { median: r(s[Math.floor(s.length / 2)]), min: r(s[0]), max: r(s[s.length - 1]), runs: s.length };
}

async function main() {
  const gguf = opt('gguf');
  const model = opt('model', path.join(os.tmpdir(), gguf ? `weightmap-bench-qwen3-0.6b.${gguf}.gguf` : 'weightmap-bench-qwen3-0.6b.ajc1'));
  const threadList = opt('threads', '1,2').split(',').map(Number);
  const promptLen = Number(opt('prompt', '512'));
  const decodeLen = Number(opt('decode', '128'));
  const runs = Number(opt('runs', '3'));
  const positions = opt('position', '16').split(',').map(Number);
  const kv = opt('kv') ? { kvCache: opt('kv') } : {};
  if (!fs.existsSync(model)) {
    const maker = gguf ? ['make-gguf.js', model, '--type', gguf] : ['make-ajc1.js', model];
    const made = spawnSync(process.execPath, [path.join(__dirname, maker[0]), ...maker.slice(1)], { stdio: 'inherit' });
    if (made.status !== 0) process.exit(1);
  }
  if (args.includes('--drop-cache')) spawnSync('dd', [`if=${model}`, 'iflag=nocache', 'count=0', 'status=none'], { stdio: 'inherit' });
  const weights = await readWeights(model);
  const c = weights.config;
  const promptOf = (n) => Int32Array.from({ length: n }, (_, i) => (i * 7919 + 13) % c.vocabSize);
  const prompt = promptOf(promptLen);
  const perToken = bytesPerToken(weights);
  const report = {
    root: ROOT,
    model,
    cpu: os.cpus()[0]?.model,
    shape: { dim: c.hiddenSize, layers: c.numLayers, heads: c.numHeads, kvHeads: c.numKvHeads, headDim: c.headDim, hidden: c.intermediateSize, vocab: c.vocabSize, group: c.groupSize },
    weightMBPerDecodeToken: +(perToken / 1e6).toFixed(1),
    results: [],
  };

  for (const threads of threadList) {
    const engine = await DecoderEngine.load(weights, { threads, quant: opt('quant', 'none') });
    // Warm-up: fault every page of the mapping in and let the CPU clock settle.
    {
      const s = engine.createSession({ contextLength: 64 });
      let l = await s.eval(promptOf(16));
      for (let i = 0; i < 8; i++) l = await s.eval([argmax(l)]);
      s.dispose();
    }
    const prefill = [];
    const prefillCpu = []; // process CPU ms per prompt token (user + system)
    for (let r = 0; promptLen > 0 && r < runs; r++) {
      const s = engine.createSession({ contextLength: promptLen + 8, ...kv });
      const cpu0 = process.cpuUsage();
      const t0 = performance.now();
      await s.eval(prompt);
      prefill.push(promptLen / ((performance.now() - t0) / 1000));
      const cpu = process.cpuUsage(cpu0);
      prefillCpu.push((cpu.user + cpu.system) / 1000 / promptLen);
      s.dispose();
    }
    const decode = [];
    const kvBytes = new Map(); // position -> KV cache bytes read per decoded token
    // One session filled position by position: each --position only adds its new prompt tokens.
    const top = Math.max(...positions);
    const d = engine.createSession({ contextLength: top + decodeLen + 1, ...kv });
    const longest = promptOf(top);
    for (const position of [...positions].sort((a, b) => a - b)) {
      const first = await d.eval(longest.subarray(d.position, position));
      const tokPerS = [];
      const cpuMsPerToken = { user: [], system: [] };
      const threadCpu0 = threadCpuMs();
      let decoded = 0;
      for (let r = 0; r < runs; r++) {
        await d.truncate(position);
        let logits = first;
        let spent = 0;
        const cpu0 = process.cpuUsage();
        for (let i = 0; i < decodeLen; i++) {
          const next = argmax(logits); // outside the timing: the engine's share only
          const t = performance.now();
          logits = await d.eval([next]);
          spent += performance.now() - t;
        }
        const cpu = process.cpuUsage(cpu0);
        decoded += decodeLen;
        tokPerS.push(decodeLen / (spent / 1000));
        cpuMsPerToken.user.push(cpu.user / 1000 / decodeLen);
        cpuMsPerToken.system.push(cpu.system / 1000 / decodeLen);
      }
      // Per thread name: the thread pool's workers ("weightmap-pool"), the threads that run the
      // calls and take a share of each parallel job (libuv's), the JS thread.
      const threadCpu = threadCpuMs();
      const perThread = {};
      for (const [key, ms] of threadCpu) {
        const name = key.slice(key.indexOf(' ') + 1);
        perThread[name] = (perThread[name] ?? 0) + (ms - (threadCpu0.get(key) ?? 0)) / decoded;
      }
      for (const name of Object.keys(perThread)) perThread[name] = +perThread[name].toFixed(2);
      kvBytes.set(position, kvBytesPerToken(d.cacheBytes / d.contextLength, position, decodeLen));
      decode.push({
        position,
        kvMBPerToken: +(kvBytes.get(position) / 1e6).toFixed(1),
        tokPerS: stats(tokPerS),
        cpuMsPerToken: { user: stats(cpuMsPerToken.user, 2).median, system: stats(cpuMsPerToken.system, 2).median },
        threadCpuMsPerToken: perThread,
        kvMBPerPosition: +(d.cacheBytes / d.contextLength / 1e6).toFixed(3),
      });
      d.truncate(position);
    }
    d.dispose();
    const { bytes } = weights.sources[0];
    const bandwidth = opt('bandwidth') ? Number(opt('bandwidth')) * 1e9 : measureReadBandwidth(bytes, threads);
    // Per position: the bound (weights + KV cache read per token) and the decode's share of it.
    for (const p of decode) {
      p.boundTokPerS = +(bandwidth / (perToken + kvBytes.get(p.position))).toFixed(1);
      p.shareOfBound = +(p.tokPerS.median / p.boundTokPerS).toFixed(3);
    }
    report.results.push({
      threads,
      isa: engine.loadInfo.isa,
      load: { ms: +engine.loadInfo.loadMs.toFixed(1), copiedMB: +(engine.loadInfo.copiedBytes / 1e6).toFixed(1), converted: engine.loadInfo.converted },
      ...(promptLen > 0 ? { prefillTokPerS: stats(prefill), prefillCpuMsPerToken: stats(prefillCpu, 2) } : {}),
      decode,
      readGBps: +(bandwidth / 1e9).toFixed(1),
      pmdMappedMB: pmdMappedMB(model),
    });
    engine.dispose();
  }
  console.log(JSON.stringify(report, null, 2));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
