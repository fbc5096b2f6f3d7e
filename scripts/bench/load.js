#!/usr/bin/env node
// Loading and long-text calls against the event loop: for each call, in a fresh process, the wall
// time, the longest time the event loop went without a turn (the longest gap between 1 ms timers;
// monitorEventLoopDelay's max beside it) and the time the loop was busy (eventLoopUtilization's
// active time: on a loaded machine the gaps include waits for a core, busy time less so).
// Tokenizer loads run twice on one empty cache folder (WEIGHTMAP_CACHE): "cold" builds and stores
// the packed form, "warm" reads it; loadModel rows run cold (a fresh cache).
// Compare two checkouts by pointing --root at each (their dist/ must be built):
//   node scripts/bench/load.js [--root /work/main] [--only NAME,...] [--runs 3]
'use strict';
require('../args').scriptArgs('load.js [--root /work/main] [--only NAME,...] [--runs 3]', { options: { root: 'string', only: 'string', runs: 'string', child: 'string', phases: 'string', tmp: 'string' } });
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { execFileSync } = require('node:child_process');
const { performance, monitorEventLoopDelay } = require('node:perf_hooks');

const args = process.argv.slice(2);
const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
const root = path.resolve(opt('root', path.join(__dirname, '..', '..')));
const FIX = path.resolve(__dirname, '..', '..', '..', 'shared', 'fixtures');
const AJC1 = path.join(FIX, 'ajc1-qwen3-tiny', 'model.bin');
/** Gemma 3's tokenizer.json (33 MB, 262k tokens; the devDependency the differential tests use). */
const GEMMA3 = path.join(__dirname, '..', '..', 'node_modules', '@lenml', 'tokenizer-gemma3', 'models', 'tokenizer.json');

/** ~1 MB of mixed prose, code and scripts (the text tokenizer.js uses, cut the same way). */
function longText(bytes) {
  const parts = ['The quick brown fox jumps over the lazy dog. ', 'In 2023, revenue grew 17.4% to $1,299,000. ',
    'function add(a, b) {\n    return a + b;\n}\n', 'Café naïve résumé — Ångström. ', 'Привет, как дела? ', '東京は日本の首都です。', '😀🎉 '];
  let out = '';
  for (let i = 0; Buffer.byteLength(out) < bytes; i++) out += parts[(i * 7919) % parts.length] + (i % 13 === 0 ? `${i}\n` : '');
  return out;
}

/** Each call: prepare (not timed) returns the timed function. */
const CALLS = {
  'loadTokenizer(qwen3 vocab.json+merges.txt)': async (w) => () => w.loadTokenizer(path.join(FIX, 'tokenizers', 'qwen3')),
  'loadTokenizer(ajc1 .tokenizer)': async (w) => () => w.loadTokenizer(`${AJC1}.tokenizer`),
  'loadTokenizer(minilm tokenizer.json)': async (w) => () => w.loadTokenizer(path.join(FIX, 'tokenizers', 'minilm', 'tokenizer.json')),
  'loadTokenizer(gemma3 tokenizer.json)': async (w) => () => w.loadTokenizer(GEMMA3),
  'loadModel(ajc1) + first token': async (w) => async () => {
    const model = await w.loadModel(AJC1, { threads: 1 });
    await model.generate('Hello', { maxTokens: 1, temperature: 0 }).text();
    model.dispose();
  },
  'loadModel(gguf, Qwen3 vocab) + first token': async (w, tmp) => {
    const file = path.join(tmp, 'qwen3-tiny.gguf');
    await w.convert(AJC1, file, { to: 'gguf' });
    const weights = await w.readWeights(file);
    const own = weights.tokenizer !== undefined;
    w.closeWeights(weights);
    // main's GGUF writer does not carry the vocabulary: then the Qwen3 tokenizer folder is named.
    const options = own ? { threads: 1 } : { threads: 1, tokenizer: path.join(FIX, 'tokenizers', 'qwen3') };
    return async () => {
      const model = await w.loadModel(file, options);
      await model.generate([1, 2, 3], { maxTokens: 1, temperature: 0 }).text();
      model.dispose();
    };
  },
  'embed(1 MB text)': async (w) => {
    const embedder = await w.loadEmbedder(path.join(FIX, 'embd-minilm-tiny', 'model.weights'), { threads: 1 });
    const text = longText(1 << 20);
    return () => embedder.embed([text]);
  },
  'model.encodeAsync(1 MB text)': async (w) => {
    const model = await w.loadModel(AJC1, { threads: 1 });
    const text = longText(1 << 20);
    return typeof model.encodeAsync === 'function' ? () => model.encodeAsync(text) : undefined;
  },
  'convert(ajc1 -> gguf)': async (w, tmp) => () => w.convert(AJC1, path.join(tmp, 'out.gguf'), { to: 'gguf' }),
  'convert(gguf Qwen3 vocab -> ajc1)': async (w, tmp) => {
    const file = path.join(tmp, 'qwen3-tiny.gguf');
    await w.convert(AJC1, file, { to: 'gguf' });
    return () => w.convert(file, path.join(tmp, 'back.bin'), { to: 'ajc1' });
  },
  'convert(llama2c -> gguf)': async (w, tmp) => () => w.convert(FILES.llama2c, path.join(tmp, 'out.gguf'), { to: 'gguf' }),
  'loadEmbedder(embd-minilm-tiny)': async (w) => () => w.loadEmbedder(FILES.embd, { threads: 1 }).then((e) => e.dispose?.()),
  '3 generations x 240 tokens (ajc1)': async (w) => {
    const model = await w.loadModel(AJC1, { threads: 1 });
    return () => Promise.all([0, 1, 2].map((seed) => model.generate('Once upon a time', { maxTokens: 240, temperature: 0.8, seed, stopTokens: [] }).text()));
  },
};

/** One file of each fixture format (readWeights and loadModel rows below). */
const FILES = {
  ajc1: AJC1,
  embd: path.join(FIX, 'embd-minilm-tiny', 'model.weights'),
  gguf: path.join(FIX, 'llama-stories260k', 'stories260K.gguf'),
  'gguf Q4_K_M': path.join(FIX, 'gguf-quants', 'qwen3-qknorm', 'qwen3-qknorm.Q4_K_M.gguf'),
  llama2c: path.join(FIX, 'llama-stories260k', 'stories260K.bin'),
  sepweight: path.join(FIX, 'llama-stories260k', 'sepweight'),
  moon: path.join(FIX, 'moon-tiny', 'model.moon'),
  tllm: path.join(FIX, 'tllm-tiny', 'model.tllm'),
};
for (const [name, file] of Object.entries(FILES)) {
  CALLS[`readWeights(${name})`] = async (w) => async () => w.closeWeights(await w.readWeights(file));
  if (name === 'embd') continue; // an embedding model: loadEmbedder above
  CALLS[`loadModel(${name})`] = async (w) => async () => (await w.loadModel(file, { threads: 1 })).dispose();
}

async function child(name, tmp) {
  const w = require(path.join(root, 'dist', 'cjs', 'index.js'));
  const run = await CALLS[name](w, tmp);
  if (!run) return { skipped: true };
  // 1 ms timers (not a chain of immediates, which would keep the loop from ever waiting, count as
  // busy throughout and take a core from any worker thread): the longest gap between two.
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let longest = 0;
  let done = false;
  let last = performance.now();
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (!done) setTimeout(tick, 1);
  };
  await new Promise((resolve) => setImmediate(resolve)); // eventLoopUtilization counts from the loop's start
  histogram.enable();
  setTimeout(tick, 1);
  const elu = performance.eventLoopUtilization();
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  const busy = performance.eventLoopUtilization(elu).active;
  await new Promise((resolve) => setTimeout(resolve, 2)); // the timer that a final block delayed
  done = true;
  histogram.disable();
  return { ms, longest, histogramMax: histogram.max / 1e6, busy };
}

/**
 * Where loadModel's time goes, step by step in one fresh process (the steps loadModel runs, here
 * one after another): module load, readWeights, the engine, the tokenizer, the first token.
 */
async function phases(file, tmp) {
  const t = [['start', performance.now()]];
  const mark = (name) => t.push([name, performance.now()]);
  const w = require(path.join(root, 'dist', 'cjs', 'index.js'));
  const { DecoderEngine } = require(path.join(root, 'dist', 'cjs', 'engines', 'decoder.js'));
  mark('require weightmap');
  const weights = await w.readWeights(file);
  mark('readWeights');
  const engine = await DecoderEngine.load(weights, { threads: 1 });
  mark('engine load');
  const tokenizer = weights.tokenizer && weights.format === 'ajc1' ? await w.loadTokenizer(`${file}.tokenizer`) : await w.loadTokenizer(path.join(FIX, 'tokenizers', 'qwen3'));
  mark('tokenizer (worker, cache)');
  const session = engine.createSession({ contextLength: 256 });
  const ids = tokenizer.encode('Hello');
  await session.eval(ids);
  mark('first token (prefill)');
  session.dispose();
  engine.dispose();
  w.closeWeights(weights);
  const out = {};
  for (let i = 1; i < t.length; i++) out[t[i][0]] = +(t[i][1] - t[i - 1][1]).toFixed(1);
  out.total = +(t[t.length - 1][1] - t[0][1]).toFixed(1);
  return out;
}

function main() {
  const only = opt('only', '').split(',').filter(Boolean);
  const runs = Number(opt('runs', '3'));
  const names = Object.keys(CALLS).filter((n) => only.length === 0 || only.some((o) => n.includes(o)));
  console.log(`root ${root}   load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}   median of ${runs} fresh processes`);
  console.log(`${'call'.padEnd(46)} ${'pass'.padEnd(5)} ${'wall ms'.padStart(9)} ${'longest block ms'.padStart(17)} ${'(histogram max)'.padStart(16)} ${'busy ms'.padStart(9)}`);
  for (const name of names) {
    const passes = name.startsWith('loadTokenizer') ? ['cold', 'warm'] : ['-'];
    const results = Object.fromEntries(passes.map((p) => [p, []]));
    for (let r = 0; r < runs; r++) {
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-bench-load-'));
      try {
        for (const pass of passes) {
          const out = execFileSync(process.execPath, [__filename, '--child', name, '--root', root, '--tmp', tmp], {
            env: { ...process.env, WEIGHTMAP_CACHE: path.join(tmp, 'cache') },
            encoding: 'utf8',
          });
          results[pass].push(JSON.parse(out.trim().split('\n').pop()));
        }
      } finally {
        fs.rmSync(tmp, { recursive: true, force: true });
      }
    }
    for (const pass of passes) {
      const rs = results[pass];
      if (rs[0].skipped) {
        console.log(`${name.padEnd(46)} ${pass.padEnd(5)} (not in this checkout)`);
        continue;
      }
      const med = (key) => rs.map((x) => x[key]).sort((a, b) => a - b)[rs.length >> 1];
      console.log(`${name.padEnd(46)} ${pass.padEnd(5)} ${med('ms').toFixed(1).padStart(9)} ${med('longest').toFixed(1).padStart(17)} ${med('histogramMax').toFixed(1).padStart(16)} ${med('busy').toFixed(1).padStart(9)}`);
    }
  }
  if (only.length > 0 && !only.includes('phases')) return;
  // Phases with the tokenizer cache warm (a first process fills it), as loadModel runs them.
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-bench-load-'));
  try {
    const env = { ...process.env, WEIGHTMAP_CACHE: path.join(tmp, 'cache') };
    const gguf = path.join(tmp, 'qwen3-tiny.gguf');
    const w = require(path.join(root, 'dist', 'cjs', 'index.js'));
    return w.convert(AJC1, gguf, { to: 'gguf' }).then(() => {
      for (const file of [AJC1, gguf]) {
        const run = () => JSON.parse(execFileSync(process.execPath, [__filename, '--phases', file, '--root', root, '--tmp', tmp], { env, encoding: 'utf8' }).trim().split('\n').pop());
        run();
        console.log(`phases ${path.basename(file)} (ms, cache warm): ${JSON.stringify(run())}`);
      }
      fs.rmSync(tmp, { recursive: true, force: true });
    });
  } catch (e) {
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }
}

if (args.includes('--phases')) {
  phases(opt('phases'), opt('tmp')).then((r) => {
    console.log(JSON.stringify(r));
    process.exit(0);
  });
} else if (args.includes('--child')) {
  child(opt('child'), opt('tmp')).then(
    (r) => {
      console.log(JSON.stringify(r));
      process.exit(0);
    },
    (e) => {
      console.error(e);
      process.exit(1);
    },
  );
} else {
  main();
}
