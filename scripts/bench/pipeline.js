#!/usr/bin/env node
// A Qwen3-0.6B-shaped model (random weights, sepweight f16 tree made in the temp folder if absent
// by make-hf-model.js + `weightmap convert --to sepweight`) run over 1, 2 and 3 pipeline stages on
// loopback, each stage a `weightmap stage` process with one thread and Q8_0 weights, against the
// same layers in this process (no gRPC), the sides taking turns for --runs rounds (each pipeline
// figure is set beside the in-process run of its own round): prefill tok/s (one prompt as one
// batch), decode tok/s (one token per call), the per-hop overhead per decoded token ((pipeline −
// in-process) time per token ÷ hops, a hop being one coordinator → stage → coordinator round
// trip), and the failover
// time: from the SIGKILL of a stage mid-generation to the next token, served by a replica that
// first rebuilds its KV cache from the replayed prefix. All processes share this machine's cores.
// The per-hop overhead is also measured where compute is negligible: the stories260K fixture tree
// (--hop-tree), whose whole forward pass takes tens of microseconds, next to the bare round trip
// of the same 4 KB message through a child process that echoes it with no checks and no engine.
// That round trip is a median; so is perHopMedianUs ((median pipeline − median in-process time per
// token) ÷ hops), the figure to set beside it. perHopUs is the same from mean times per token, which
// on a shared, loaded machine carry the scheduling delays of every process a token passes through.
// Needs `npm run build:ts` (dist/) and the addon (build/ or WEIGHTMAP_ADDON).
//   node scripts/bench/pipeline.js [--tree DIR] [--hop-tree DIR] [--hops-only] [--stages 1,2,3] [--prompt 128] [--decode 64] [--runs 5]
'use strict';
require('../args').scriptArgs('pipeline.js [--tree DIR] [--hop-tree DIR] [--hops-only] [--stages 1,2,3] [--prompt 128] [--decode 64] [--runs 5]', { options: { tree: 'string', 'hop-tree': 'string', 'hops-only': 'boolean', stages: 'string', prompt: 'string', decode: 'string', runs: 'string', 'echo-server': 'boolean' } });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawn, spawnSync } = require('node:child_process');
const { performance } = require('node:perf_hooks');
const { readWeights } = require('../../dist/cjs/formats');
const { DecoderEngine } = require('../../dist/cjs/engines/decoder');
const { PipelineEngine } = require('../../dist/cjs/pipeline/coordinator');
const { COORDINATOR_READ } = require('../../dist/cjs/pipeline/stage-files');
const { closeWeights } = require('../../dist/cjs/addon/weights');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const MAIN = path.join(__dirname, '..', '..', 'dist', 'cjs', 'cli', 'main.js');
const STAGE_ARGS = ['--threads', '1', '--quant', 'q8_0', '--context', '1024'];

function argmax(x) {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

function median(values) {
  const s = [...values].sort((a, b) => a - b);
  return s[Math.floor(s.length / 2)];
}

function makeTree(tree) {
  const hf = `${tree}-hf`;
  const run = (argv) => {
    const r = spawnSync(process.execPath, argv, { stdio: 'inherit' });
    if (r.status !== 0) process.exit(1);
  };
  run([path.join(__dirname, 'make-hf-model.js'), 'qwen3-0.6b', hf, '--dtype', 'f16']);
  run([MAIN, 'convert', hf, tree, '--to', 'sepweight', '--dtype', 'f16', '--no-progress']);
  fs.rmSync(hf, { recursive: true, force: true });
}

/** `weightmap stage` as a child process; resolves once it prints its address. */
function startStage(tree, layers, stageArgs = STAGE_ARGS) {
  const child = spawn(process.execPath, [MAIN, 'stage', tree, '--layers', layers, ...stageArgs], { stdio: ['ignore', 'pipe', 'inherit'] });
  return new Promise((resolve, reject) => {
    let out = '';
    child.stdout.on('data', (d) => {
      out += d;
      if (out.includes('\n')) resolve({ child, address: JSON.parse(out.split('\n')[0]).address });
    });
    child.on('exit', (code) => reject(new Error(`stage ${layers} exited with ${code}`)));
  });
}

function stop(stages) {
  for (const s of stages) s.child.kill('SIGKILL');
}

/** Splits layers 0..n-1 into k contiguous inclusive ranges. */
function split(n, k) {
  const out = [];
  for (let i = 0; i < k; i++) out.push(`${Math.floor((i * n) / k)}-${Math.floor(((i + 1) * n) / k) - 1}`);
  return out;
}

/** Prefill and decode tok/s of a session factory: median over runs. */
async function measure(createSession, prompt, decodeLen, runs) {
  const warm = createSession();
  let l = await warm.eval(prompt.subarray(0, 8));
  for (let i = 0; i < 4; i++) l = await warm.eval([argmax(l)]);
  warm.dispose();
  const prefill = [];
  const decodeMs = [];
  const tokenMs = [];
  for (let r = 0; r < runs; r++) {
    const s = createSession();
    const t0 = performance.now();
    let logits = await s.eval(prompt);
    prefill.push(prompt.length / ((performance.now() - t0) / 1000));
    let spent = 0;
    for (let i = 0; i < decodeLen; i++) {
      const next = argmax(logits); // outside the timing
      const t = performance.now();
      logits = await s.eval([next]);
      const ms = performance.now() - t;
      spent += ms;
      tokenMs.push(ms);
    }
    decodeMs.push(spent / decodeLen);
    s.dispose();
  }
  const msPerToken = median(decodeMs);
  return {
    prefillTokPerS: +median(prefill).toFixed(1),
    decodeTokPerS: +(1000 / msPerToken).toFixed(2),
    decodeMsPerToken: +msPerToken.toFixed(3),
    decodeMedianMsPerToken: +median(tokenMs).toFixed(3),
  };
}

async function failover(tree, weights, prompt, numLayers) {
  const [a, b] = split(numLayers, 2);
  const stages = [await startStage(tree, a), await startStage(tree, b), await startStage(tree, b)];
  try {
    const engine = await PipelineEngine.connect(weights, [
      { layers: a, address: stages[0].address },
      { layers: b, address: [stages[1].address, stages[2].address] },
    ]);
    const s = engine.createSession(1024);
    let logits = await s.eval(prompt);
    for (let i = 0; i < 16; i++) logits = await s.eval([argmax(logits)]);
    const next = argmax(logits);
    const before = performance.now();
    await s.eval([next]);
    const stepMs = performance.now() - before;
    const died = new Promise((resolve) => stages[1].child.once('exit', resolve));
    const t0 = performance.now();
    stages[1].child.kill('SIGKILL');
    await s.eval([argmax(logits)]);
    const failoverMs = performance.now() - t0;
    await died;
    engine.dispose();
    return { prefixReplayed: s.position - 1, failoverMs: +failoverMs.toFixed(1), normalStepMs: +stepMs.toFixed(1) };
  } finally {
    stop(stages);
  }
}

/** Child mode: a Forward service that echoes every message, for the bare gRPC round trip. */
function echoServer() {
  const grpc = require('@grpc/grpc-js');
  const { stageService } = require('../../dist/cjs/pipeline/schema');
  const server = new grpc.Server();
  server.addService(stageService(), {
    Describe: (_call, cb) => cb(null, {}),
    Forward: (call) => call.on('data', (m) => call.write(m)).on('end', () => call.end()),
  });
  server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (e, port) => console.log(JSON.stringify({ address: `127.0.0.1:${port}` })));
}

/** Median microseconds of a 4 KB tensor's round trip to an echo process. */
async function bareRoundTrip(count) {
  const grpc = require('@grpc/grpc-js');
  const { stageClientConstructor } = require('../../dist/cjs/pipeline/schema');
  const { tensorMessage } = require('../../dist/cjs/pipeline/tensor');
  const child = spawn(process.execPath, [__filename, '--echo-server'], { stdio: ['ignore', 'pipe', 'inherit'] });
  const address = await new Promise((resolve) => child.stdout.once('data', (d) => resolve(JSON.parse(String(d)).address)));
  const Client = stageClientConstructor();
  const client = new Client(address, grpc.credentials.createInsecure());
  const call = client.Forward(new grpc.Metadata());
  const msg = tensorMessage('echo', 0, new Float32Array(1024), 1024);
  const times = [];
  for (let i = 0; i < count; i++) {
    const t = performance.now();
    await new Promise((resolve) => {
      call.once('data', resolve);
      call.write(msg);
    });
    times.push((performance.now() - t) * 1000);
  }
  call.on('error', () => undefined);
  call.cancel();
  client.close();
  child.kill('SIGKILL');
  return Math.round(median(times.slice(count / 10)));
}

/** In-process vs 1..3 stages on a model whose compute is negligible: the round trips alone. */
async function hops(tree, stageCounts, decodeLen, runs) {
  const weights = await readWeights(tree, COORDINATOR_READ);
  const c = weights.config;
  const prompt = Int32Array.from({ length: 16 }, (_, i) => (i * 31 + 1) % c.vocabSize);
  const whole = await readWeights(tree);
  const local = await DecoderEngine.load(whole, { threads: 1 });
  const base = await measure(() => local.createSession({ contextLength: 512 }), prompt, decodeLen, runs);
  local.dispose();
  closeWeights(whole);
  const out = {
    tree,
    bareGrpcRoundTripUs: await bareRoundTrip(1000),
    inProcessUsPerToken: Math.round(base.decodeMsPerToken * 1000),
    inProcessMedianUsPerToken: Math.round(base.decodeMedianMsPerToken * 1000),
    stages: [],
  };
  for (const k of stageCounts.filter((n) => n <= c.numLayers)) {
    const ranges = split(c.numLayers, k);
    const stages = [];
    for (const layers of ranges) stages.push(await startStage(tree, layers, ['--threads', '1', '--context', '512']));
    try {
      const engine = await PipelineEngine.connect(weights, ranges.map((layers, i) => ({ layers, address: stages[i].address })));
      const r = await measure(() => engine.createSession(512), prompt, decodeLen, runs);
      engine.dispose();
      out.stages.push({
        stages: k,
        usPerToken: Math.round(r.decodeMsPerToken * 1000),
        perHopUs: Math.round(((r.decodeMsPerToken - base.decodeMsPerToken) * 1000) / k),
        medianUsPerToken: Math.round(r.decodeMedianMsPerToken * 1000),
        perHopMedianUs: Math.round(((r.decodeMedianMsPerToken - base.decodeMedianMsPerToken) * 1000) / k),
      });
    } finally {
      stop(stages);
    }
  }
  closeWeights(weights);
  return out;
}

async function main() {
  const tree = opt('tree', path.join(os.tmpdir(), 'weightmap-bench-qwen3-0.6b-sepweight'));
  const stageCounts = opt('stages', '1,2,3').split(',').map(Number);
  const promptLen = Number(opt('prompt', '128'));
  const decodeLen = Number(opt('decode', '64'));
  const runs = Number(opt('runs', '5'));
  const hopTree = opt('hop-tree', path.join(__dirname, '..', '..', '..', 'shared', 'fixtures', 'llama-stories260k', 'sepweight'));
  const hopReport = fs.existsSync(hopTree) ? await hops(hopTree, stageCounts, 200, runs) : undefined;
  if (args.includes('--hops-only')) return console.log(JSON.stringify({ cpu: os.cpus()[0]?.model, cores: os.cpus().length, hops: hopReport }, null, 2));
  if (!fs.existsSync(path.join(tree, 'config.json'))) makeTree(tree);

  const weights = await readWeights(tree, COORDINATOR_READ);
  const c = weights.config;
  const prompt = Int32Array.from({ length: promptLen }, (_, i) => (i * 7919 + 13) % c.vocabSize);
  const report = {
    tree,
    cpu: os.cpus()[0]?.model,
    cores: os.cpus().length,
    note: 'every stage is a process with 1 thread and Q8_0 weights; all share this machine',
    shape: { dim: c.hiddenSize, layers: c.numLayers, vocab: c.vocabSize },
    promptLen,
    decodeLen,
    results: [],
  };

  // The same model in this process (one thread, no gRPC) and over 1..3 stages, measured in turns
  // (in-process, 1 stage, 2 stages, ... then again) so that a load that comes and goes hits every
  // side alike; each pipeline figure is also set beside the in-process run of its own round.
  const whole = await readWeights(tree);
  const local = await DecoderEngine.load(whole, { threads: 1, quant: 'q8_0' });
  const sides = [{ stages: 0, what: 'in-process, 1 thread', createSession: () => local.createSession({ contextLength: 1024 }), rounds: [] }];
  const children = [];
  try {
    for (const k of stageCounts) {
      const ranges = split(c.numLayers, k);
      const stages = [];
      for (const layers of ranges) stages.push(await startStage(tree, layers));
      children.push(...stages);
      const engine = await PipelineEngine.connect(weights, ranges.map((layers, i) => ({ layers, address: stages[i].address })));
      sides.push({ stages: k, layers: ranges.join(' '), engine, createSession: () => engine.createSession(1024), rounds: [] });
    }
    for (let r = 0; r < runs; r++) {
      for (const side of sides) side.rounds.push({ ...(await measure(side.createSession, prompt, decodeLen, 1)), load: +os.loadavg()[0].toFixed(2) });
    }
  } finally {
    for (const side of sides) side.engine?.dispose();
    stop(children);
    local.dispose();
    closeWeights(whole);
  }
  const base = sides[0].rounds;
  for (const side of sides) {
    const pick = (key) => median(side.rounds.map((x) => x[key]));
    const row = {
      stages: side.stages,
      ...(side.what ? { what: side.what } : { layers: side.layers }),
      prefillTokPerS: pick('prefillTokPerS'),
      decodeTokPerS: pick('decodeTokPerS'),
      decodeTokPerSRange: [Math.min(...side.rounds.map((x) => x.decodeTokPerS)), Math.max(...side.rounds.map((x) => x.decodeTokPerS))],
      decodeMsPerToken: pick('decodeMsPerToken'),
      decodeMedianMsPerToken: pick('decodeMedianMsPerToken'),
      loadAverage: side.rounds.map((x) => x.load),
    };
    if (side.stages > 0) {
      // Per round: this side against the in-process run just before it.
      row.decodeVsInProcess = +median(side.rounds.map((x, i) => x.decodeTokPerS / base[i].decodeTokPerS)).toFixed(3);
      row.perHopUs = Math.round(median(side.rounds.map((x, i) => ((x.decodeMsPerToken - base[i].decodeMsPerToken) * 1000) / side.stages)));
      row.perHopMedianUs = Math.round(median(side.rounds.map((x, i) => ((x.decodeMedianMsPerToken - base[i].decodeMedianMsPerToken) * 1000) / side.stages)));
    }
    report.results.push(row);
  }
  report.failover = await failover(tree, weights, prompt.subarray(0, 32), c.numLayers);
  report.hops = hopReport;
  closeWeights(weights);
  console.log(JSON.stringify(report, null, 2));
}

if (args.includes('--echo-server')) echoServer();
else main().catch((e) => {
  console.error(e);
  process.exit(1);
});
