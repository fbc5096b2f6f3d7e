#!/usr/bin/env node
/**
 * Regenerates the llama.cpp reference tables of test/engines/decoder-families.test.ts: runs that
 * test with WEIGHTMAP_FAMILY_MODELS=<temp dir> (it leaves there the GGUF files it converts from its
 * seeded HF folders), loads each in llama.cpp through node-llama-cpp (its prebuilt CPU build,
 * installed in the peer cache as scripts/bench/peers/cache.js says; not a dependency), and prints
 * for each family the logits at every prompt position (argmax, the two largest, ids 0..3) and the
 * greedy tokens after the prompt, as the test's REFERENCE entries.
 *
 *   node scripts/interop/family-logits.mjs [--only granite,smollm3] [--greedy 6] [--test test/engines/decoder-qwen3-moe.test.ts]
 *
 * --test: another test that leaves GGUF files under WEIGHTMAP_FAMILY_MODELS (the Qwen3-MoE one).
 * --prompt: the test's own prompt as JSON, for a test with a vocabulary of its own (gpt-oss's).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { nodeLlamaCpp } = require('../bench/peers/cache');
const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const GREEDY = Number(opt('greedy', '6'));

// The prompt of test/engines/family-models.ts (PROMPT).
const source = fs.readFileSync(path.join(root, 'test', 'engines', 'family-models.ts'), 'utf8');
const PROMPT = JSON.parse(opt('prompt', /export const PROMPT = (\[[^\]]*\])/.exec(source)[1]));

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-families-'));
try {
  try {
    execFileSync('npx', ['jest', opt('test', 'test/engines/decoder-families.test.ts')], { cwd: root, env: { ...process.env, WEIGHTMAP_FAMILY_MODELS: dir }, stdio: 'ignore' });
  } catch {
    // The test fails while its tables are stale; the files are written before it compares.
  }
  const only = opt('only')?.split(',');
  const files = fs.readdirSync(dir).filter((f) => f.endsWith('.gguf') && (!only || only.includes(f.slice(0, -5))));
  const { entry } = nodeLlamaCpp();
  const { getLlama } = await import(entry);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  for (const file of files.sort()) {
    const model = await llama.loadModel({ modelPath: path.join(dir, file) });
    const context = await model.createContext({ contextSize: 64, threads: 1, batchSize: 64, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
    const sequence = context.getSequence();
    const input = PROMPT.map((token) => [token, { generateNext: { logits: true } }]);
    const out = await sequence.controlledEvaluate(input);
    const positions = out.map((o) => {
      const logits = o.next.logits;
      const sorted = [...logits.entries()].sort((a, b) => b[1] - a[1]);
      return { argmax: sorted[0][0], top: [sorted[0][1], sorted[1][1]], first: [0, 1, 2, 3].map((id) => logits.get(id)) };
    });
    await sequence.clearHistory();
    const greedy = [];
    for await (const token of sequence.evaluate(PROMPT, { temperature: 0, yieldEogToken: true })) {
      greedy.push(token);
      if (greedy.length >= GREEDY) break;
    }
    const f = (x) => Number(x.toPrecision(7));
    console.log(`  ${file.slice(0, -5)}: {\n    positions: [\n${positions.map((p) => `      { argmax: ${p.argmax}, top: [${p.top.map(f).join(', ')}], first: [${p.first.map(f).join(', ')}] },`).join('\n')}\n    ],\n    greedy: [${greedy.join(', ')}],\n  },`);
    await context.dispose();
    await model.dispose();
  }
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
