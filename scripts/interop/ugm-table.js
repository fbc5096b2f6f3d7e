#!/usr/bin/env node
/**
 * Writes the reference table of a GGUF UGM vocabulary ("t5": XLM-R's, as llama.cpp's converter
 * writes it) that test/tokenizers/ugm-llama-cpp.test.ts checks weightmap against: llama.cpp's own
 * tokenization and detokenization (through node-llama-cpp, a vocabulary-only load) of every string
 * of test/tokenizers/ugm-corpus.ts (TypeScript, read through the compiler's transpiler).
 *
 *   node scripts/interop/ugm-table.js [--vocab nomic-bert-moe]
 *
 * The vocabulary is llama.cpp's models/ggml-vocab-<name>.gguf in the peer cache's llama.cpp clone
 * (scripts/bench/peers/cache.js: WEIGHTMAP_PEERS_CACHE, default ~/.cache/weightmap-peers); the
 * table goes to test/tokenizers/tables/ugm-<name>.json with the file's SHA-256, the llama.cpp
 * release and node-llama-cpp version, and per string: the ids with special tokens parsed
 * (`ids`), without (`plain`, when they differ), and the text of the ids with BOS/EOS added,
 * detokenized with special tokens removed (`text`) and kept (`special`). Ids are space-separated.
 */
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const path = require('node:path');
const { CACHE, nodeLlamaCpp } = require('../bench/peers/cache');
const { scriptArgs } = require('../args');

const root = path.resolve(__dirname, '..', '..');

/** A TypeScript module of the tests, loaded through the compiler's transpiler. */
function requireTs(file) {
  const ts = require('typescript');
  const previous = require.extensions['.ts'];
  require.extensions['.ts'] = (module, filename) => {
    const { outputText } = ts.transpileModule(fs.readFileSync(filename, 'utf8'), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } });
    module._compile(outputText, filename);
  };
  try {
    return require(file);
  } finally {
    require.extensions['.ts'] = previous;
  }
}

async function main() {
  const { values } = scriptArgs('ugm-table.js [--vocab nomic-bert-moe]', { options: { vocab: 'string' } });
  const name = values.vocab ?? 'nomic-bert-moe';
  const file = path.join(CACHE, 'llama.cpp', 'models', `ggml-vocab-${name}.gguf`);
  if (!fs.existsSync(file)) throw new Error(`${file} is missing: the peer cache's llama.cpp clone (scripts/bench/peers/cache.js) has it`);
  const { version, entry } = nodeLlamaCpp();
  const release = JSON.parse(fs.readFileSync(path.join(path.dirname(path.dirname(entry)), 'llama', 'llama.cpp.info.json'), 'utf8')).tag;
  const { getLlama } = await import(entry);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const model = await llama.loadModel({ modelPath: file, vocabOnly: true });
  const corpus = requireTs(path.join(root, 'test', 'tokenizers', 'ugm-corpus.ts')).ugmCorpus();
  const bos = model.tokens.bos;
  const eos = model.tokens.eos;
  const cases = corpus.map((text) => {
    const ids = [...model.tokenize(text, true)];
    const plain = [...model.tokenize(text, false)];
    const wrapped = [bos, ...ids, eos];
    const row = { ids: ids.join(' '), text: model.detokenize(wrapped, false), special: model.detokenize(wrapped, true) };
    if (plain.join(' ') !== row.ids) row.plain = plain.join(' ');
    return row;
  });
  const table = {
    vocab: path.basename(file),
    sha256: crypto.createHash('sha256').update(fs.readFileSync(file)).digest('hex'),
    llamaCpp: release,
    nodeLlamaCpp: version,
    bos,
    eos,
    corpusSha256: crypto.createHash('sha256').update(JSON.stringify(corpus)).digest('hex'),
    cases,
  };
  const out = path.join(root, 'test', 'tokenizers', 'tables', `ugm-${name}.json`);
  fs.mkdirSync(path.dirname(out), { recursive: true });
  fs.writeFileSync(out, JSON.stringify(table, null, 0).replace(/\},\{/g, '},\n{') + '\n');
  console.log(JSON.stringify({ out: path.relative(root, out), strings: cases.length, bytes: fs.statSync(out).size }));
  await model.dispose();
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
