#!/usr/bin/env node
/**
 * Interop check: do GGUF files weightmap writes load in llama.cpp (through node-llama-cpp, whose npm
 * package ships prebuilt llama.cpp binaries), tokenize the same and generate the same greedy tokens?
 *
 *   npm run build:ts && node scripts/interop/node-llama-cpp.js [--tokens 24]
 *
 * node-llama-cpp is installed once into a cache folder outside the repository
 * (WEIGHTMAP_INTEROP_CACHE, default ~/.cache/weightmap-interop); nothing is added to package.json.
 * For each fixture (stories260K.bin: a llama2.c vocabulary; ajc1-qwen3-tiny: a byte-level BPE one)
 * the script converts it to GGUF with weightmap, then prints one JSON line: whether llama.cpp
 * loaded it, whether both tokenize a text prompt alike, and the greedy tokens of each from the same
 * prompt ids (temperature 0, no stop tokens). Exit code 1 when any of them differs.
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { convert, loadModel } = require('../../dist/cjs/index.js');

const root = path.resolve(__dirname, '..', '..');
const fixtures = path.resolve(root, '..', 'shared', 'fixtures');
const cache = process.env.WEIGHTMAP_INTEROP_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-interop');
const tokensArg = process.argv.indexOf('--tokens');
const GEN = tokensArg > 0 ? Number(process.argv[tokensArg + 1]) : 24;

const CASES = [
  { name: 'stories260K', source: path.join(fixtures, 'llama-stories260k', 'stories260K.bin'), prompt: 'Once upon a time, Lily met a big dog.' },
  { name: 'ajc1-qwen3-tiny', source: path.join(fixtures, 'ajc1-qwen3-tiny', 'model.bin'), prompt: 'Héllo, wörld! 1234 你好 and the end' },
];

function installNodeLlamaCpp() {
  const entry = path.join(cache, 'node_modules', 'node-llama-cpp', 'package.json');
  if (!fs.existsSync(entry)) {
    fs.mkdirSync(cache, { recursive: true });
    console.error(`installing node-llama-cpp into ${cache} ...`);
    // Its prebuilt llama.cpp binaries come as optional dependencies; no install script is needed.
    execFileSync('npm', ['install', '--prefix', cache, '--no-audit', '--no-fund', '--ignore-scripts', 'node-llama-cpp'], { stdio: 'inherit' });
  }
  const pkg = JSON.parse(fs.readFileSync(entry, 'utf8'));
  const main = typeof pkg.exports === 'object' ? (pkg.exports['.']?.import ?? pkg.exports['.']?.default ?? pkg.main) : pkg.main;
  return { version: pkg.version, url: pathToFileURL(path.join(path.dirname(entry), typeof main === 'string' ? main : main.default)).href };
}

async function weightmapSide(file, prompt) {
  const model = await loadModel(file, { threads: 1, contextLength: 256 });
  try {
    const ids = model.encode(prompt);
    const generation = model.generate(ids, { temperature: 0, maxTokens: GEN, stopTokens: [] });
    await generation.text();
    return { ids, tokens: [...generation.tokens] };
  } finally {
    model.dispose();
  }
}

async function llamaCppSide(llama, file, prompt, ids) {
  const model = await llama.loadModel({ modelPath: file });
  try {
    const context = await model.createContext({ contextSize: 256, threads: 1 });
    try {
      // tokenize() leaves BOS to the evaluation APIs; weightmap's encode adds it where the vocabulary says so.
      const bos = model.tokens.bos;
      const tokenized = [...(bos !== null && model.tokens.shouldPrependBosToken ? [bos] : []), ...model.tokenize(prompt, true)];
      const sequence = context.getSequence();
      const tokens = [];
      for await (const token of sequence.evaluate(ids, { temperature: 0 })) {
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

async function main() {
  const { version, url } = installNodeLlamaCpp();
  const { getLlama } = await import(url);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-interop-'));
  let failed = false;
  try {
    for (const c of CASES) {
      const gguf = path.join(out, `${c.name}.gguf`);
      await convert(c.source, gguf, { to: 'gguf' });
      const mine = await weightmapSide(gguf, c.prompt);
      let result;
      try {
        const theirs = await llamaCppSide(llama, gguf, c.prompt, mine.ids);
        result = {
          loaded: true,
          sameTokenization: JSON.stringify(theirs.ids) === JSON.stringify(mine.ids),
          sameGreedyTokens: JSON.stringify(theirs.tokens) === JSON.stringify(mine.tokens),
          weightmap: mine,
          llamaCpp: theirs,
        };
      } catch (error) {
        result = { loaded: false, error: String(error && error.message ? error.message : error), weightmap: mine };
      }
      failed ||= !(result.loaded && result.sameTokenization && result.sameGreedyTokens);
      console.log(JSON.stringify({ fixture: c.name, nodeLlamaCpp: version, ...result }));
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
