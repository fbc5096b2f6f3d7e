#!/usr/bin/env node
/**
 * Qwen3-MoE in llama-quantize's types against llama.cpp: takes the f32 GGUF that
 * test/engines/decoder-qwen3-moe.test.ts converts from its tiny random-weight model (run with
 * WEIGHTMAP_FAMILY_MODELS=<temp dir>), quantizes it with llama.cpp's own llama-quantize (built
 * from node-llama-cpp's source bundle: scripts/bench/peers/cache.js) into each type, and runs
 * every file in llama.cpp (node-llama-cpp's prebuilt CPU build, f32 KV cache, no flash
 * attention) and in weightmap (dist/, build it first): per type the largest |Δ logit| over the
 * prompt's positions (at the argmax, the runner-up and ids 0..3, as the test compares), each
 * engine's largest distance from the exact path on the same quantized weights (weightmap with
 * quant 'f32': dequantized once, no activation quantization), the positions whose argmax differs
 * with llama.cpp's and the exact run's margins there, and whether the greedy tokens agree. The test
 * itself compares these types with llama.cpp's tables (its llama-quantize forms); this script adds
 * the distances from the exact run, which tell one engine's activation rounding from the other's
 * (a wide one on one side only: look for a router near tie on that type's weights).
 *
 *   npm run build:ts && node scripts/interop/moe-quants.mjs [--types Q4_K_M,Q6_K,Q8_0] [--greedy 6]
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { nodeLlamaCpp, llamaQuantize } = require('../bench/peers/cache');
const weightmap = { ...require(path.join(root, 'dist', 'cjs')), ...require(path.join(root, 'dist', 'cjs', 'engines', 'decoder')) };
const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const TYPES = opt('types', 'Q4_K_M,Q6_K,Q8_0').split(',');
const GREEDY = Number(opt('greedy', '6'));
const source = fs.readFileSync(path.join(root, 'test', 'engines', 'family-models.ts'), 'utf8');
const PROMPT = JSON.parse(/export const PROMPT = (\[[^\]]*\])/.exec(source)[1]);

async function llamaCpp(llama, file) {
  const model = await llama.loadModel({ modelPath: file });
  const context = await model.createContext({ contextSize: 64, threads: 1, batchSize: 64, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
  const sequence = context.getSequence();
  const out = await sequence.controlledEvaluate(PROMPT.map((token) => [token, { generateNext: { logits: true } }]));
  const rows = out.map((o) => o.next.logits);
  await sequence.clearHistory();
  const greedy = [];
  for await (const token of sequence.evaluate(PROMPT, { temperature: 0, yieldEogToken: true })) {
    greedy.push(token);
    if (greedy.length >= GREEDY) break;
  }
  await context.dispose();
  await model.dispose();
  return { rows, greedy };
}

async function ours(file, quant) {
  const weights = await weightmap.readWeights(file);
  const engine = await weightmap.DecoderEngine.load(weights, { threads: 2, ...(quant ? { quant } : {}) });
  const session = engine.createSession({ contextLength: 64, kvCache: 'f32' });
  const all = await session.eval(PROMPT, { allLogits: true });
  session.dispose();
  const s2 = engine.createSession({ contextLength: 64, kvCache: 'f32' });
  const greedy = [];
  let logits = await s2.eval(PROMPT);
  for (let i = 0; i < GREEDY; i++) {
    let best = 0;
    for (let j = 1; j < logits.length; j++) if (logits[j] > logits[best]) best = j;
    greedy.push(best);
    if (i < GREEDY - 1) logits = await s2.eval([best]);
  }
  s2.dispose();
  engine.dispose();
  weightmap.closeWeights(weights);
  return { all, vocab: weights.config.vocabSize, greedy };
}

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-moe-quants-'));
try {
  try {
    execFileSync('npx', ['jest', 'test/engines/decoder-qwen3-moe.test.ts', '-t', 'GGUF'], { cwd: root, env: { ...process.env, WEIGHTMAP_FAMILY_MODELS: dir }, stdio: 'ignore' });
  } catch {
    // the files are written before the test compares
  }
  const f32 = path.join(dir, 'qwen3moe-f32.gguf');
  const quantize = llamaQuantize();
  const { entry } = nodeLlamaCpp();
  const { getLlama } = await import(entry);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  console.log(`llama-quantize ${quantize.release} (${quantize.commit}); CPU: ${os.cpus()[0].model}`);
  for (const type of TYPES) {
    const file = path.join(dir, `qwen3moe-${type}.gguf`);
    execFileSync(quantize.path, [f32, file, type], { stdio: 'ignore' });
    const ref = await llamaCpp(llama, file);
    const got = await ours(file);
    // The same quantized weights dequantized to f32 and run without activation quantization: what
    // each engine's 8-bit activations (llama.cpp: Q8_K / Q8_0 blocks; weightmap: its own) add.
    const exact = await ours(file, 'f32');
    let worst = 0, maxLogit = 0, oursVsExact = 0, llamaVsExact = 0;
    const flips = [];
    const argmax = (row) => {
      let b = 0;
      for (let i = 1; i < row.length; i++) if (row[i] > row[b]) b = i;
      return b;
    };
    ref.rows.forEach((want, t) => {
      const row = got.all.subarray(t * got.vocab, (t + 1) * got.vocab);
      const ex = exact.all.subarray(t * got.vocab, (t + 1) * got.vocab);
      const sorted = [...want.entries()].sort((a, b) => b[1] - a[1]);
      const [best, second] = sorted;
      const ourBest = argmax(row), exactBest = argmax(ex);
      for (const id of [best[0], second[0], 0, 1, 2, 3]) {
        worst = Math.max(worst, Math.abs(row[id] - want.get(id)));
        oursVsExact = Math.max(oursVsExact, Math.abs(row[id] - ex[id]));
        llamaVsExact = Math.max(llamaVsExact, Math.abs(want.get(id) - ex[id]));
      }
      maxLogit = Math.max(maxLogit, Math.abs(best[1]));
      const exSorted = [...ex].sort((a, b) => b - a);
      if (ourBest !== best[0]) flips.push(`position ${t} (llama.cpp margin ${(best[1] - second[1]).toFixed(4)}, exact-f32 margin ${(exSorted[0] - exSorted[1]).toFixed(4)}; argmax llama.cpp ${best[0]}, weightmap ${ourBest}, exact ${exactBest})`);
    });
    console.log(`${type}: max |Δ logit| ${worst.toExponential(2)} (|logit| up to ${maxLogit.toFixed(1)}); from the exact f32 run on the same weights: weightmap ${oursVsExact.toExponential(2)}, llama.cpp ${llamaVsExact.toExponential(2)}; argmax differs at ${flips.length ? flips.join(', ') : 'no position'}; greedy ${JSON.stringify(got.greedy) === JSON.stringify(ref.greedy) ? 'equal' : `differs: ${got.greedy} vs ${ref.greedy}`}`);
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
