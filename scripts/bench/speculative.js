#!/usr/bin/env node
// Speculative decoding against plain decoding, interleaved in one process (plain, speculative,
// plain, ... PAIRS rounds per row), greedy, with the greedy texts checked identical in every round:
//  - real text on the real stories260K (../shared/fixtures): free text after BOS (little to look up),
//    a retelling whose prompt holds the story it retells (a RAG answer quoting its context), and an
//    edit whose prompt holds the text being edited; prompt lookup's tok/s, acceptance and tokens per
//    forward pass. stories260K is 1 MB: its pass time is call overhead, not weight reads;
//  - the Qwen3-0.6B-shaped Q4_K_M GGUF of peers.js (random weights, real shape: its pass reads
//    394 MB) with an oracle drafter that knows plain decoding's greedy tokens and is wrong on a
//    chosen share of its guesses (--accept 1,0.8,0.5,0): what the verification path delivers at a
//    given acceptance, where the weights' reads set the pace; plus the time of a pass over 1 + k
//    rows against a one-row pass (what a guess costs on this CPU).
// Rows per thread count; each figure is the median [min–max] of its rounds, the ratio is the median
// of the per-round ratios; the CPU (family/model), load average and threads are printed.
//   node scripts/bench/speculative.js [--pairs 3] [--threads 1,2] [--tokens 128] [--accept 1,0.8,0.5,0] [--only stories,shape] [--json]
'use strict';
require('../args').scriptArgs('speculative.js [--pairs 3] [--threads 1,2] [--tokens 128] [--accept 1,0.8,0.5,0] [--only stories,shape] [--json]', {
  options: { pairs: 'string', threads: 'string', tokens: 'string', accept: 'string', only: 'string', json: 'boolean' },
});
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { spawnSync } = require('node:child_process');
const { loadModel } = require('../../dist/cjs/index.js');
const { readWeights, closeWeights } = require('../../dist/cjs/index.js');
const { DecoderEngine } = require('../../dist/cjs/engines/decoder');
const { machine } = require('./machine');

const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const PAIRS = Number(opt('pairs', '3'));
const THREADS = opt('threads', '1,2').split(',').map(Number);
const TOKENS = Number(opt('tokens', '128'));
const ACCEPT = opt('accept', '1,0.8,0.5,0').split(',').map(Number);
const ONLY = opt('only', 'stories,shape').split(',');
const SHARED = path.resolve(__dirname, '..', '..', '..', 'shared', 'fixtures');
const CACHE = process.env.WEIGHTMAP_PEERS_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-peers');

const median = (xs) => {
  const s = [...xs].sort((a, b) => a - b);
  const h = s.length >> 1;
  return s.length % 2 ? s[h] : (s[h - 1] + s[h]) / 2;
};
const summary = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const fmt = (s, digits = 1) => `${s.median.toFixed(digits)} [${s.min.toFixed(digits)}–${s.max.toFixed(digits)}]`;

/** tok/s of a greedy generation of `tokens` after `prompt`, its tokens and its speculative stats. */
async function timed(model, prompt, tokens, speculative) {
  const start = process.hrtime.bigint();
  const generation = model.generate(prompt, { temperature: 0, maxTokens: tokens, stopTokens: [], ...(speculative ? { speculative } : {}) });
  let count = 0;
  for await (const _piece of generation) count++;
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  return { rate: count / seconds, tokens: [...generation.tokens], stats: generation.speculative };
}

/** Interleaved rounds of plain and speculative decoding; throws if a round's texts differ. */
async function compare(model, prompt, tokens, speculative) {
  const plain = [];
  const spec = [];
  const ratios = [];
  const stats = { drafted: 0, accepted: 0, passes: 0, emitted: 0 };
  await timed(model, prompt, Math.min(tokens, 8)); // warm-up: pages the weights in
  for (let round = 0; round < PAIRS; round++) {
    const a = await timed(model, prompt, tokens);
    const b = await timed(model, prompt, tokens, speculative(a.tokens));
    if (a.tokens.join() !== b.tokens.join()) throw new Error(`round ${round}: speculative greedy tokens differ from plain decoding's`);
    plain.push(a.rate);
    spec.push(b.rate);
    ratios.push(b.rate / a.rate);
    for (const key of Object.keys(stats)) stats[key] += b.stats[key];
  }
  return {
    plain: summary(plain),
    speculative: summary(spec),
    ratio: median(ratios),
    acceptance: stats.drafted ? stats.accepted / stats.drafted : 0,
    tokensPerPass: stats.emitted / stats.passes,
    load: os.loadavg()[0],
  };
}

/** A DraftModel that guesses `truth` (the round's plain greedy tokens after `promptLength`), each guess wrong where a fixed hash of its position falls below 1 - accept. */
function oracle(truth, promptLength, accept, vocab) {
  const wrong = (i) => ((Math.imul(i + 1, 2654435761) >>> 0) / 2 ** 32) >= accept;
  return {
    drafter: () => ({
      async draft(sequence, count) {
        const at = sequence.length - promptLength;
        return truth.slice(at, at + count).map((t, j) => (wrong(at + j) ? (t + 1) % vocab : t));
      },
    }),
  };
}

/** Milliseconds of one pass over `rows` rows after `at` positions (min of 5 rounds), on a DecoderEngine of `file`. */
async function passTimes(file, threads, rowsList, at) {
  const weights = await readWeights(file);
  const engine = await DecoderEngine.load(weights, { threads });
  const session = engine.createSession({ contextLength: at + 64 });
  const prompt = Array.from({ length: at }, (_, i) => (i * 7919 + 13) % engine.config.vocabSize);
  await session.eval(prompt);
  const out = {};
  for (let rep = 0; rep < 5; rep++) {
    for (const rows of rowsList) {
      const start = process.hrtime.bigint();
      await (rows === 1 ? session.eval(prompt.slice(0, 1)) : session.evalSteps(prompt.slice(0, rows)));
      const ms = Number(process.hrtime.bigint() - start) / 1e6;
      session.truncate(at);
      out[rows] = Math.min(out[rows] ?? Infinity, ms);
    }
  }
  session.dispose();
  engine.dispose();
  closeWeights(weights);
  return out;
}

function shapeModel() {
  const file = path.join(CACHE, 'models', 'qwen3-0.6b.q4_k_m.gguf');
  if (!fs.existsSync(file)) {
    fs.mkdirSync(path.dirname(file), { recursive: true });
    const r = spawnSync(process.execPath, [path.join(__dirname, 'make-gguf.js'), `${file}.partial`, '--type', 'q4_k_m', '--vocab'], { stdio: 'inherit' });
    if (r.status !== 0) throw new Error('make-gguf.js failed');
    fs.renameSync(`${file}.partial`, file);
  }
  return file;
}

async function storiesRows(threads) {
  const golden = fs.readFileSync(path.join(SHARED, 'llama-stories260k', 'expected_greedy_200steps.txt'), 'utf8');
  const story = golden.split('\n')[0];
  const model = await loadModel(path.join(SHARED, 'llama-stories260k', 'stories260K.bin'), { threads });
  const workloads = [
    ['free text (BOS)', ''],
    ['retell (quotes its context)', `${story}\nTell the story again.\n${story.slice(0, 40)}`],
    ['edit (rewrites the text in its prompt)', `${story}\nThe same story with Lily called Mia:\n${story.slice(0, 40).replace('Lily', 'Mia')}`],
  ];
  const rows = [];
  try {
    for (const [name, prompt] of workloads) {
      const tokens = Math.min(TOKENS, model.contextLength - model.encode(prompt).length - 1);
      rows.push({ model: 'stories260K', workload: name, threads, tokens, ...(await compare(model, prompt, tokens, () => ({ draft: 'prompt-lookup' }))) });
    }
  } finally {
    model.dispose();
  }
  return rows;
}

async function shapeRows(threads) {
  const model = await loadModel(shapeModel(), { threads, contextLength: 1024 });
  const rows = [];
  try {
    const prompt = Array.from({ length: 64 }, (_, i) => (i * 7919 + 13) % model.vocabSize);
    for (const accept of ACCEPT) {
      // The truth is the round's plain tokens (a prompt prefilled whole and one re-fed from a cached prefix round differently).
      const speculative = (truth) => ({ draft: oracle(truth, prompt.length, accept, model.vocabSize), maxDraftTokens: 8 });
      rows.push({ model: 'qwen3-0.6b q4_k_m (random)', workload: `oracle drafter, ${Math.round(accept * 100)}% of guesses right`, threads, tokens: TOKENS, ...(await compare(model, prompt, TOKENS, speculative)) });
    }
    const widths = [1, 2, 3, 5, 9];
    const times = await passTimes(model.info.path, threads, widths, 128);
    rows.push({ model: 'qwen3-0.6b q4_k_m (random)', workload: 'pass time over 1 + k rows ÷ one row', threads, passMs: times, passRatio: Object.fromEntries(widths.map((w) => [w, times[w] / times[1]])) });
  } finally {
    model.dispose();
  }
  return rows;
}

(async () => {
  const host = machine();
  const rows = [];
  for (const threads of THREADS) {
    if (ONLY.includes('stories')) rows.push(...(await storiesRows(threads)));
    if (ONLY.includes('shape')) rows.push(...(await shapeRows(threads)));
  }
  if (args.includes('--json')) {
    process.stdout.write(`${JSON.stringify({ machine: host, pairs: PAIRS, rows }, null, 2)}\n`);
    return;
  }
  process.stdout.write(`# speculative decoding vs plain, greedy (identical text checked each round), ${PAIRS} rounds interleaved\n`);
  process.stdout.write(`# CPU: ${host.cpu} (family ${host.cpuFamily}, model ${host.cpuModel}), ${host.logicalCpus} logical CPUs, load ${host.load} at start, ${host.date}\n\n`);
  process.stdout.write('| model | workload | threads | plain tok/s | speculative tok/s | ratio | guesses kept | tokens / pass | load |\n|---|---|---|---|---|---|---|---|---|\n');
  for (const r of rows) {
    if (r.passMs) continue;
    process.stdout.write(`| ${r.model} | ${r.workload} | ${r.threads} | ${fmt(r.plain)} | ${fmt(r.speculative)} | ${r.ratio.toFixed(2)}× | ${(100 * r.acceptance).toFixed(0)}% | ${r.tokensPerPass.toFixed(2)} | ${r.load.toFixed(1)} |\n`);
  }
  for (const r of rows) {
    if (!r.passMs) continue;
    const cells = Object.entries(r.passMs).map(([w, ms]) => `${w} rows ${ms.toFixed(1)} ms (${r.passRatio[w].toFixed(2)}×)`);
    process.stdout.write(`\n${r.model}, ${r.threads} thread(s), ${r.workload}: ${cells.join(', ')}\n`);
  }
})().catch((error) => {
  process.stderr.write(`${error.stack ?? error}\n`);
  process.exit(1);
});
