#!/usr/bin/env node
/**
 * Interop check: do GGUF files `weightmap convert` writes load in llama.cpp (through node-llama-cpp,
 * whose npm package ships prebuilt llama.cpp binaries), tokenize the same and generate the same
 * greedy tokens as weightmap on the same file?
 *
 *   npm run build:ts && node scripts/interop/node-llama-cpp.js [--tokens 24] [--only NAME,...]
 *
 * node-llama-cpp is installed once into the benchmarks' peer cache outside the repository
 * (scripts/bench/peers/cache.js: WEIGHTMAP_PEERS_CACHE, default ~/.cache/weightmap-peers); nothing
 * is added to package.json. Sources, each converted with the CLI (`weightmap convert SRC OUT.gguf
 * --to gguf [--quant q8_0]`):
 *  - llama2.c: stories260K.bin (a real trained model; llama2.c vocabulary -> SentencePiece "llama");
 *  - ajc1: ajc1-qwen3-tiny (Qwen3 with QK-norm; its real byte-level BPE vocabulary -> "gpt2"),
 *    with f32 weights and re-quantized to Q8_0;
 *  - safetensors: Hugging Face folders (model.safetensors + config.json + tokenizer files) that
 *    `weightmap convert --to safetensors` makes from those two, so the GGUF comes from the HF reader.
 * Each prints one JSON line: whether the conversion worked and llama.cpp loaded the file, whether
 * both tokenize the fixture's text alike, the greedy tokens of each from the fixture's prompt ids
 * (temperature 0; weightmap without stop tokens, llama.cpp until its first end-of-generation token)
 * and how many of them agree with the fixture's reference greedy run. Exit code 1 when a conversion
 * fails, llama.cpp refuses a file, the two differ, or an f32 case departs from the reference.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { loadModel } = require('../../dist/cjs/index.js');
const { nodeLlamaCpp } = require('../bench/peers/cache');

const root = path.resolve(__dirname, '..', '..');
const fixtures = path.resolve(root, '..', 'shared', 'fixtures');
const cli = path.join(root, 'dist', 'cjs', 'cli', 'main.js');
const args = process.argv.slice(2);
const opt = (name, fallback) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const GEN = Number(opt('tokens', '24'));

// The fixtures' own references: a text to tokenize, and prompt ids with the reference's greedy tokens.
const STORIES = path.join(fixtures, 'llama-stories260k', 'stories260K.bin');
const QWEN3 = path.join(fixtures, 'ajc1-qwen3-tiny', 'model.bin');
const storiesGreedy = require(path.join(fixtures, 'llama-stories260k', 'expected.json')).greedy;
const qwenCase = require(path.join(fixtures, 'ajc1-qwen3-tiny', 'expected.json')).cases[0];
const STORIES_REF = { text: 'Once upon a time, Lily met a big dog.', ids: [storiesGreedy.start_token], expected: storiesGreedy.tokens };
const QWEN_REF = { text: qwenCase.prompt.text, ids: qwenCase.prompt.ids, expected: qwenCase.greedy.tokens };

/**
 * Each case: a source (through a folder made with convert --to safetensors where viaSafetensors)
 * and the GGUF options. `exact`: f32 weights as the reference computed them, so both sides must
 * reproduce the fixture's greedy tokens; quantized cases are compared with each other only.
 */
const CASES = [
  { name: 'llama2c-stories260K', source: STORIES, ref: STORIES_REF, exact: true },
  { name: 'ajc1-qwen3-tiny', source: QWEN3, ref: QWEN_REF, exact: true },
  { name: 'ajc1-qwen3-tiny-q8_0', source: QWEN3, quant: 'q8_0', ref: QWEN_REF },
  { name: 'safetensors-stories260K', source: STORIES, viaSafetensors: true, ref: STORIES_REF, exact: true },
  { name: 'safetensors-qwen3-tiny', source: QWEN3, viaSafetensors: true, ref: QWEN_REF, exact: true },
  { name: 'safetensors-qwen3-tiny-q8_0', source: QWEN3, viaSafetensors: true, quant: 'q8_0', ref: QWEN_REF },
];

function convert(source, out, ...options) {
  execFileSync(process.execPath, [cli, 'convert', source, out, '--no-progress', ...options], { stdio: ['ignore', 'ignore', 'pipe'], encoding: 'utf8' });
}

/** The GGUF of a case, written under `dir`. */
function ggufOf(c, dir) {
  let source = c.source;
  if (c.viaSafetensors) {
    const folder = path.join(dir, `${c.name}-hf`);
    fs.mkdirSync(folder);
    convert(c.source, path.join(folder, 'model.safetensors'), '--to', 'safetensors');
    source = folder;
  }
  const gguf = path.join(dir, `${c.name}.gguf`);
  convert(source, gguf, '--to', 'gguf', ...(c.quant ? ['--quant', c.quant] : []));
  return gguf;
}

async function weightmapSide(file, { text, ids }) {
  const model = await loadModel(file, { threads: 1, contextLength: 256 });
  try {
    const tokenized = model.encode(text);
    const generation = model.generate(ids, { temperature: 0, maxTokens: GEN, stopTokens: [] });
    await generation.text();
    return { ids: tokenized, tokens: [...generation.tokens] };
  } finally {
    model.dispose();
  }
}

async function llamaCppSide(llama, file, { text, ids }) {
  const model = await llama.loadModel({ modelPath: file });
  try {
    const context = await model.createContext({ contextSize: 256, threads: 1 });
    try {
      // tokenize() leaves BOS to the evaluation APIs; weightmap's encode adds it where the vocabulary says so.
      const bos = model.tokens.bos;
      const tokenized = [...(bos !== null && model.tokens.shouldPrependBosToken ? [bos] : []), ...model.tokenize(text, true)];
      const sequence = context.getSequence();
      const tokens = [];
      // With yieldEogToken, an end-of-generation token is yielded, and generation may end there.
      for await (const token of sequence.evaluate(ids, { temperature: 0, yieldEogToken: true })) {
        tokens.push(token);
        if (tokens.length >= GEN) break;
      }
      return { ids: tokenized, tokens };
    } finally {
      await context.dispose();
    }
  } finally {
    await model.dispose();
  }
}

/** How many leading tokens of `tokens` equal the reference's greedy run (which may end sooner, at its stop token). */
function agreement(tokens, expected) {
  const n = Math.min(tokens.length, expected.length);
  const first = tokens.slice(0, n).findIndex((t, i) => t !== expected[i]);
  return { agree: first < 0 ? n : first, of: n };
}

async function runCase(llama, c, dir) {
  let gguf;
  try {
    gguf = ggufOf(c, dir);
  } catch (error) {
    return { passed: false, converted: false, error: String(error.stderr || error.message).trim() };
  }
  const mine = await weightmapSide(gguf, c.ref);
  const expected = c.ref.expected.slice(0, GEN);
  const fixture = { weightmap: agreement(mine.tokens, expected) };
  let theirs;
  try {
    theirs = await llamaCppSide(llama, gguf, c.ref);
  } catch (error) {
    return { passed: false, converted: true, bytes: fs.statSync(gguf).size, loaded: false, error: String(error.message ?? error), weightmap: mine, fixture };
  }
  fixture.llamaCpp = agreement(theirs.tokens, expected);
  const sameTokenization = JSON.stringify(theirs.ids) === JSON.stringify(mine.ids);
  // node-llama-cpp ends a generation at an end-of-generation token; weightmap runs on (no stop
  // tokens), so its tokens are compared up to where llama.cpp stopped, the EOG token included.
  const sameGreedyTokens = JSON.stringify(theirs.tokens) === JSON.stringify(mine.tokens.slice(0, theirs.tokens.length));
  const matchesFixture = fixture.weightmap.agree === fixture.weightmap.of && fixture.llamaCpp.agree === fixture.llamaCpp.of;
  return {
    passed: sameTokenization && sameGreedyTokens && (!c.exact || matchesFixture),
    converted: true,
    bytes: fs.statSync(gguf).size,
    loaded: true,
    sameTokenization,
    sameGreedyTokens,
    fixture,
    weightmap: mine,
    llamaCpp: theirs,
  };
}

async function main() {
  const only = opt('only')?.split(',');
  const { version, entry } = nodeLlamaCpp();
  const { getLlama } = await import(entry);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-interop-'));
  let failed = false;
  try {
    for (const c of CASES.filter((k) => !only || only.includes(k.name))) {
      const result = await runCase(llama, c, out);
      failed ||= !result.passed;
      console.log(JSON.stringify({ case: c.name, nodeLlamaCpp: version, ...result }));
    }
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
  process.exitCode = failed ? 1 : 0;
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
