// The embedding rows of peers.js: MiniLM-L6-shaped random weights (embed.js's generator) as a
// sentence-transformers folder that weightmap loads directly and transformers.js loads through its
// ONNX export (minilm-onnx.js); TEXTS texts of TOKENS tokens in batches of BATCH, weightmap f32 and
// int8 against transformers.js fp32, interleaved. The first text's embeddings of weightmap f32 and
// transformers.js are compared (cosine), which shows both compute the same model.
'use strict';
const fs = require('node:fs');
const path = require('node:path');
const { loadEmbedder } = require('../../../dist/cjs/index.js');
const { makeTexts, macsPerSentence, writeHfFolder, SHAPE } = require('../embed.js');
const { writeMiniLmOnnx } = require('./minilm-onnx');
const { runJson } = require('./run-json');

const TOKENS = 18;
const TEXTS = 32;
const BATCH = 32;
const ROUNDS = 8;
const TOKENIZER_JSON = path.resolve(__dirname, '..', '..', '..', '..', 'shared', 'fixtures', 'tokenizers', 'minilm', 'tokenizer.json');

async function ensureModel(cacheDir) {
  const dir = path.join(cacheDir, 'models', 'minilm-random');
  if (fs.existsSync(path.join(dir, 'onnx', 'model.onnx'))) return dir;
  const partial = `${dir}.partial`;
  fs.rmSync(partial, { recursive: true, force: true });
  writeHfFolder(partial, SHAPE);
  writeMiniLmOnnx(partial, TOKENIZER_JSON);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.renameSync(partial, dir);
  return dir;
}

function cosine(a, b) {
  let ab = 0, aa = 0, bb = 0;
  for (let i = 0; i < a.length; i++) (ab += a[i] * b[i]), (aa += a[i] * a[i]), (bb += b[i] * b[i]);
  return ab / Math.sqrt(aa * bb);
}

/** { info, rows } in the shape of peers.js's interleave(). */
async function embedRows({ threads: threadList, interleave, cache }) {
  const peer = cache.transformers();
  const dir = await ensureModel(cache.CACHE);
  const textsFile = path.join(dir, `texts-${TEXTS}x${TOKENS}.json`);
  {
    const embedder = await loadEmbedder(dir, { threads: 1 });
    fs.writeFileSync(textsFile, JSON.stringify(makeTexts(embedder, TOKENS, TEXTS)));
    embedder.dispose();
  }
  const macs = macsPerSentence(SHAPE, TOKENS);
  const bound = (linearPeak) => (peak) => ({ embed: 1 / (macs.linear / peak[linearPeak] + macs.attention / peak.f32MacsPerSecond) });
  const firsts = {};
  const measured = (name, run) => () => {
    const { first, ...rates } = run();
    firsts[name] = first;
    return rates;
  };
  const rows = [];
  let agreement = null;
  for (const threads of threadList) {
    const mine = (quant) => () => runJson(process.execPath, [path.join(__dirname, 'embed-weightmap.js'), dir, quant, threads, textsFile, BATCH, ROUNDS]);
    const sides = {
      'weightmap f32': { measure: measured('f32', mine('f32')), bound: bound('f32MacsPerSecond') },
      'weightmap int8': { measure: measured('int8', mine('int8')), bound: bound('int8MacsPerSecond') },
      'transformers.js': {
        measure: measured('transformers', () => runJson(process.execPath, [path.join(__dirname, 'embed-transformers.mjs'), peer.entry, dir, threads, textsFile, BATCH, ROUNDS])),
        bound: bound('f32MacsPerSecond'),
      },
    };
    const result = await interleave(`MiniLM ${threads}t`, sides, threads);
    agreement ??= { f32: cosine(firsts.f32, firsts.transformers), int8: cosine(firsts.int8, firsts.transformers) };
    rows.push({ model: `MiniLM-L6 ${TEXTS}×${TOKENS} tokens, batch ${BATCH}`, threads, ...result });
  }
  const describe = `${TEXTS} texts × ${TOKENS} tokens × ${ROUNDS} rounds per run, ${((macs.linear + macs.attention) / 1e6).toFixed(0)}M multiply-adds per sentence; ` +
    `cosine of the first text's embedding to transformers.js: weightmap f32 ${agreement.f32.toFixed(6)}, int8 ${agreement.int8.toFixed(6)}`;
  return { info: { transformers: peer.version, onnxruntime: peer.onnxruntime, describe, agreement }, rows };
}

module.exports = embedRows;
