#!/usr/bin/env node
// Loading and long-text calls against the event loop: for each call, in a fresh process, the wall
// time and the longest time the event loop went without a turn (a setImmediate chain measures the
// gaps; monitorEventLoopDelay's max is printed beside it), and, for a second call in the same
// process, the time the loop was busy (eventLoopUtilization). Tokenizer loads run twice on one
// empty cache folder (WEIGHTMAP_CACHE): "cold" builds and stores the packed form, "warm" reads it.
// Compare two checkouts by pointing --root at each (their dist/ must be built):
//   node scripts/bench/load.js [--root /work/main] [--only NAME,...] [--runs 3]
'use strict';
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
};

async function child(name, tmp, rerun) {
  const w = require(path.join(root, 'dist', 'cjs', 'index.js'));
  const run = await CALLS[name](w, tmp);
  if (!run) return { skipped: true };
  const histogram = monitorEventLoopDelay({ resolution: 1 });
  let longest = 0;
  let done = false;
  let last = performance.now();
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    if (!done) setImmediate(tick);
  };
  histogram.enable();
  setImmediate(tick);
  const t0 = performance.now();
  await run();
  const ms = performance.now() - t0;
  done = true;
  histogram.disable();
  // Busy time is measured in a second run without the setImmediate chain (which keeps the loop
  // from ever waiting): performance.eventLoopUtilization's active time.
  let busy = null;
  if (rerun) {
    const again = await CALLS[name](w, tmp);
    const elu = performance.eventLoopUtilization();
    await again();
    busy = performance.eventLoopUtilization(elu).active;
  }
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
  console.log(`${'call'.padEnd(46)} ${'pass'.padEnd(5)} ${'wall ms'.padStart(9)} ${'longest block ms'.padStart(17)} ${'(histogram max)'.padStart(16)} ${'busy ms (2nd call)'.padStart(19)}`);
  for (const name of names) {
    const passes = name.startsWith('loadTokenizer') ? ['cold', 'warm'] : ['-'];
    const results = Object.fromEntries(passes.map((p) => [p, []]));
    for (let r = 0; r < runs; r++) {
      const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-bench-load-'));
      try {
        for (const pass of passes) {
          const out = execFileSync(process.execPath, [__filename, '--child', name, '--root', root, '--tmp', tmp, ...(pass === 'cold' ? [] : ['--busy'])], {
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
      const busy = rs[0].busy === null ? '' : med('busy').toFixed(1);
      console.log(`${name.padEnd(46)} ${pass.padEnd(5)} ${med('ms').toFixed(1).padStart(9)} ${med('longest').toFixed(1).padStart(17)} ${med('histogramMax').toFixed(1).padStart(16)} ${busy.padStart(19)}`);
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
  child(opt('child'), opt('tmp'), args.includes('--busy')).then(
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
