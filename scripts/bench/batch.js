#!/usr/bin/env node
// Batched decoding across sessions (DecoderEngine.stepBatch) against the same sessions stepped one
// at a time, on a Qwen3-0.6B-shaped GGUF with random blocks (made by make-gguf.js in the temp folder
// if absent): aggregate decode tok/s of N concurrent greedy streams, per N, the two modes
// interleaved round by round (so a change in the machine's load hits both), median over rounds,
// with the load average before and after. Each stream has its own prompt (different positions).
// Also counts the streams whose greedy tokens equal their sequential run. Beside wall-clock tok/s,
// tok per CPU-second of this process (user + system, all its threads): on a machine loaded by
// other work, wall time mostly measures the wait for a core, CPU time much less so.
// Needs `npm run build:ts` (dist/) and the addon.
//   node scripts/bench/batch.js [--model PATH] [--gguf q8_0|q4_k_m|q4_0|q6_k] [--streams 1,2,4,8]
//                               [--steps 16] [--rounds 3] [--threads N] [--prompt 16] [--quant none|q8_0|f32]
// --quant is DecoderEngine.load's: with q8_0 and a float model (e.g. --model of an f16 sepweight
// folder) the matrices are Q8 (matvec_q8_rows), where a GGUF's Q8_0 blocks run the ggml kernels.
'use strict';
require('../args').scriptArgs('batch.js [--model PATH] [--gguf q8_0|q4_k_m|q4_0|q6_k] [--streams 1,2,4,8] [--steps 16] [--rounds 3] [--prompt 16] [--threads N] [--quant Q]', { options: { model: 'string', gguf: 'string', streams: 'string', steps: 'string', rounds: 'string', prompt: 'string', threads: 'string', quant: 'string' } });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { readWeights } = require('../../dist/cjs/formats');
const { DecoderEngine } = require('../../dist/cjs/engines/decoder');
const { native } = require('../../dist/cjs/addon/native');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const gguf = opt('gguf', 'q8_0');
const modelPath = opt('model', path.join(os.tmpdir(), `weightmap-bench-qwen3-0.6b.${gguf}.gguf`));
const streamCounts = opt('streams', '1,2,4,8').split(',').map(Number);
const steps = Number(opt('steps', '16'));
const rounds = Number(opt('rounds', '3'));
const promptLength = Number(opt('prompt', '16'));
const GREEDY = { temperature: 0 };

const load = () => os.loadavg().map((x) => x.toFixed(2)).join(' ');
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

/** n sessions, stream i prefilled with its own prompt of promptLength + i tokens; their first tokens. */
async function start(engine, n) {
  const sessions = [];
  const samplers = [];
  const tokens = [];
  for (let i = 0; i < n; i++) {
    const session = engine.createSession({ contextLength: promptLength + n + steps + 1 });
    const sampler = new (native().Sampler)(1);
    const prompt = Array.from({ length: promptLength + i }, (_, j) => (j * 7919 + i * 104729) % engine.config.vocabSize);
    tokens.push(await session.step(prompt, sampler, GREEDY));
    sessions.push(session);
    samplers.push(sampler);
  }
  return { sessions, samplers, tokens };
}

/** Aggregate tok/s of `steps` decode steps of n streams; the tokens of every stream. */
async function run(engine, n, batched) {
  const { sessions, samplers, tokens } = await start(engine, n);
  const out = sessions.map(() => []);
  const t0 = performance.now();
  const cpu0 = process.cpuUsage();
  for (let s = 0; s < steps; s++) {
    if (batched) {
      const next = await engine.stepBatch(sessions.map((session, i) => ({ session, token: tokens[i], sampler: samplers[i], params: GREEDY })));
      next.forEach((t, i) => (tokens[i] = t));
    } else {
      for (let i = 0; i < n; i++) tokens[i] = await sessions[i].step([tokens[i]], samplers[i], GREEDY);
    }
    tokens.forEach((t, i) => out[i].push(t));
  }
  const seconds = (performance.now() - t0) / 1000;
  const cpu = process.cpuUsage(cpu0);
  for (const session of sessions) session.dispose();
  return { tokPerS: (n * steps) / seconds, tokPerCpuS: (n * steps) / ((cpu.user + cpu.system) / 1e6), out };
}

async function main() {
  if (!fs.existsSync(modelPath)) {
    const made = spawnSync(process.execPath, [path.join(__dirname, 'make-gguf.js'), modelPath, '--type', gguf], { stdio: 'inherit' });
    if (made.status !== 0) throw new Error('make-gguf.js failed');
  }
  const weights = await readWeights(modelPath);
  const threads = opt('threads') === undefined ? undefined : Number(opt('threads'));
  const quant = opt('quant');
  const engine = await DecoderEngine.load(weights, { threads, quant });
  console.log(`model ${modelPath} (${gguf}), quant ${quant ?? 'none'}, threads ${engine.loadInfo.threads}, isa ${engine.loadInfo.isa}, ${steps} steps × ${rounds} rounds`);
  console.log(`load average before: ${load()}`);
  await run(engine, 1, true); // warm the pages of the mapping
  const rows = [];
  for (const n of streamCounts) {
    const batched = [];
    const sequential = [];
    const batchedCpu = [];
    const sequentialCpu = [];
    let same = 0;
    for (let r = 0; r < rounds; r++) {
      const b = await run(engine, n, true);
      const s = await run(engine, n, false);
      // Greedy streams whose tokens equal their sequential run. On random weights near-ties are
      // common, and the one-row kernel (matvec) rounds differently from the batch kernel (matmul).
      same += b.out.filter((tokens, i) => JSON.stringify(tokens) === JSON.stringify(s.out[i])).length;
      batched.push(b.tokPerS);
      sequential.push(s.tokPerS);
      batchedCpu.push(b.tokPerCpuS);
      sequentialCpu.push(s.tokPerCpuS);
    }
    rows.push({
      n, batched: median(batched), sequential: median(sequential), batchedCpu: median(batchedCpu),
      sequentialCpu: median(sequentialCpu), same: `${same}/${n * rounds}`, load: load(),
    });
  }
  const single = rows.find((r) => r.n === 1);
  const ratio = (a, b) => (b ? (a / b).toFixed(2) + '×' : '-');
  console.log('streams | batched tok/s | sequential tok/s | batched ÷ sequential | batched ÷ 1-stream | batched tok/CPU-s | sequential tok/CPU-s | CPU-time batched ÷ 1-stream | streams with equal tokens | load avg');
  for (const r of rows) {
    console.log(`${r.n} | ${r.batched.toFixed(1)} | ${r.sequential.toFixed(1)} | ${ratio(r.batched, r.sequential)} | ${ratio(r.batched, single?.sequential)} | ` +
      `${r.batchedCpu.toFixed(1)} | ${r.sequentialCpu.toFixed(1)} | ${ratio(r.batchedCpu, single?.sequentialCpu)} | ${r.same} | ${r.load}`);
  }
  console.log(`load average after: ${load()}`);
  engine.dispose();
}

main().catch((error) => {
  console.error(error);
  process.exit(1);
});
