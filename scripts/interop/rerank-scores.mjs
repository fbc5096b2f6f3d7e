#!/usr/bin/env node
/**
 * weightmap's cross-encoder scores against llama.cpp's ranking (node-llama-cpp's
 * LlamaRankingContext over its prebuilt CPU build, installed in the peer cache as
 * scripts/bench/peers/cache.js says; not a dependency), on demand, not in CI.
 *
 * It writes a random-weight BertForSequenceClassification HF folder (MiniLM-L6 shapes by default,
 * the real MiniLM tokenizer from ../shared/fixtures), converts it with weightmap's GGUF writer
 * (which keeps the pooler as `cls.weight`), ranks the same pairs in both and prints the largest
 * differences. llama.cpp's BERT ranking differs from Hugging Face's in three ways, so the
 * comparison of the engines runs weightmap's engine the llama.cpp way on the same ids:
 *   - its pair is [CLS] query [SEP] document (no final [SEP]: add_eos is off for WPM vocabularies),
 *   - every token has type 0 (src/models/bert.cpp adds token_types row 0 to all),
 *   - its GELU is ggml's tanh approximation (HF BERT's is erf);
 * node-llama-cpp reports sigmoid(logit). The HF-semantics difference (weightmap's default) is
 * printed too, for what a user switching between the two sees.
 *
 *   npm run build:ts && node scripts/interop/rerank-scores.mjs [--hidden 384 --layers 6 --heads 12 --intermediate 1536 --seed 1]
 */
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

if (process.argv.includes('--help') || process.argv.includes('-h')) {
  console.log('node scripts/interop/rerank-scores.mjs [--hidden 384 --layers 6 --heads 12 --intermediate 1536 --seed 1]  (after npm run build:ts; installs node-llama-cpp into the peer cache)');
  process.exit(0);
}
const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { nodeLlamaCpp } = require('../bench/peers/cache');
const dist = (p) => require(path.join(root, 'dist', 'cjs', p));
const { convert } = dist('convert.js');
const { readWeights } = dist('formats/index.js');
const { closeWeights } = dist('weights.js');
const { BertEngine } = dist('engines/bert.js');
const { loadReranker } = dist('reranker.js');

const args = process.argv.slice(2);
const opt = (name, fallback) => Number(args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : fallback);
const H = opt('hidden', 384);
const L = opt('layers', 6);
const HEADS = opt('heads', 12);
const I = opt('intermediate', 1536);
const SEED = opt('seed', 1);
const fixtures = path.join(root, '..', 'shared', 'fixtures', 'tokenizers', 'minilm');

const QUERY = 'How many people live in Berlin?';
const DOCS = [
  'Berlin has a population of 3,520,031 registered inhabitants in an area of 891.82 square kilometers.',
  'New York City is famous for the Metropolitan Museum of Art.',
  'Berlin is the capital and largest city of Germany, both by area and by population.',
  'The giant panda is a bear species endemic to China.',
  'In 2020 the population of Berlin was estimated at about 3.6 million.',
  'Héllo wörld, naïve café owners count people.',
];

function mulberry32(seed) {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The HF folder: config.json, model.safetensors (bert.-prefixed keys, pooler, classifier [1, H]), the MiniLM tokenizer. */
function writeFolder(dir) {
  const vocab = 30522;
  const P = 512;
  const rand = mulberry32(SEED);
  const tensors = [];
  const add = (key, shape, fill) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = fill();
    tensors.push({ key, shape, data });
  };
  const w = (scale) => () => (rand() * 2 - 1) * scale;
  const gain = () => 1 + (rand() * 2 - 1) * 0.2;
  const linear = (name, out, inn) => {
    add(`${name}.weight`, [out, inn], w(1.5 / Math.sqrt(inn)));
    add(`${name}.bias`, [out], w(0.1));
  };
  const norm = (name) => {
    add(`${name}.weight`, [H], gain);
    add(`${name}.bias`, [H], w(0.1));
  };
  add('bert.embeddings.word_embeddings.weight', [vocab, H], w(1));
  add('bert.embeddings.position_embeddings.weight', [P, H], w(0.5));
  add('bert.embeddings.token_type_embeddings.weight', [2, H], w(1));
  norm('bert.embeddings.LayerNorm');
  for (let l = 0; l < L; l++) {
    const p = `bert.encoder.layer.${l}.`;
    linear(`${p}attention.self.query`, H, H);
    linear(`${p}attention.self.key`, H, H);
    linear(`${p}attention.self.value`, H, H);
    linear(`${p}attention.output.dense`, H, H);
    norm(`${p}attention.output.LayerNorm`);
    linear(`${p}intermediate.dense`, I, H);
    linear(`${p}output.dense`, H, I);
    norm(`${p}output.LayerNorm`);
  }
  linear('bert.pooler.dense', H, H);
  add('classifier.weight', [1, H], w(2 / Math.sqrt(H)));
  add('classifier.bias', [1], w(0.5));
  const header = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    header[t.key] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  fs.mkdirSync(dir, { recursive: true });
  fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([len, Buffer.from(json), ...tensors.map((t) => Buffer.from(t.data.buffer))]));
  const config = {
    architectures: ['BertForSequenceClassification'], model_type: 'bert', hidden_size: H, num_hidden_layers: L, num_attention_heads: HEADS,
    intermediate_size: I, vocab_size: vocab, max_position_embeddings: P, type_vocab_size: 2, layer_norm_eps: 1e-12, hidden_act: 'gelu',
    id2label: { 0: 'LABEL_0' }, label2id: { LABEL_0: 0 },
  };
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(config, null, 2));
  for (const f of ['tokenizer.json', 'vocab.txt']) fs.copyFileSync(path.join(fixtures, f), path.join(dir, f));
}

const sigmoid = (x) => 1 / (1 + Math.exp(-x));
const logit = (p) => Math.log(p / (1 - p));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-rerank-interop-'));
try {
  const folder = path.join(tmp, 'ce');
  writeFolder(folder);
  const gguf = path.join(tmp, 'ce.gguf');
  await convert(folder, gguf, { to: 'gguf' });

  // weightmap, Hugging Face semantics (what loadReranker gives).
  const reranker = await loadReranker(gguf, { threads: 1 });
  const hfScores = (await reranker.score(QUERY, DOCS)).scores;
  const tokenize = (text) => reranker.tokenizer.encode(text, { addSpecialTokens: false, maxLength: Infinity });
  const { cls, sep } = reranker.tokenizer.specialIds;
  const q = tokenize(QUERY);
  const docs = DOCS.map(tokenize);
  reranker.dispose();

  // weightmap's engine on llama.cpp's input: [CLS] q [SEP] d, types 0, tanh GELU.
  const weights = await readWeights(gguf);
  const engine = await BertEngine.load({ ...weights, config: { ...weights.config, hiddenAct: 'gelu_tanh' } }, { threads: 1 });
  const pairs = docs.map((d) => [cls, ...q, sep, ...d]);
  const ids = Int32Array.from(pairs.flat());
  const lengths = Int32Array.from(pairs, (p) => p.length);
  const llamaWay = Array.from(await engine.classify(ids, null, lengths));
  engine.dispose();
  closeWeights(weights);

  // llama.cpp.
  const { entry, version } = nodeLlamaCpp();
  const { getLlama } = await import(entry);
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const model = await llama.loadModel({ modelPath: gguf });
  const ranking = await model.createRankingContext({ contextSize: 512, threads: 1 });
  const probabilities = await ranking.rankAll(q, docs);
  const input = ranking.calculateInputLength(q, docs[0]);
  await ranking.dispose();
  await model.dispose();

  let engineLogit = 0;
  let engineProb = 0;
  let hfLogit = 0;
  const rows = DOCS.map((_, i) => {
    const theirs = logit(probabilities[i]);
    engineLogit = Math.max(engineLogit, Math.abs(llamaWay[i] - theirs));
    engineProb = Math.max(engineProb, Math.abs(sigmoid(llamaWay[i]) - probabilities[i]));
    hfLogit = Math.max(hfLogit, Math.abs(hfScores[i] - theirs));
    return { doc: i, 'llama.cpp p': probabilities[i], 'llama.cpp logit': theirs, 'weightmap (llama.cpp input)': llamaWay[i], 'weightmap (HF pairs)': hfScores[i] };
  });
  console.table(rows);
  const order = (s) => s.map((_, i) => i).sort((a, b) => s[b] - s[a]).join(',');
  console.log(`node-llama-cpp ${version}; MiniLM-shaped random cross-encoder H=${H} L=${L} heads=${HEADS} I=${I} seed=${SEED}; llama.cpp's first pair has ${input} tokens ([CLS] q [SEP] d: ${pairs[0].length})`);
  console.log(`same input, engines: max |Δlogit| ${engineLogit.toExponential(2)}, max |Δp| ${engineProb.toExponential(2)}, order ${order(llamaWay) === order(probabilities) ? 'same' : 'DIFFERENT'}`);
  console.log(`HF pairs (weightmap's default) vs llama.cpp: max |Δlogit| ${hfLogit.toExponential(2)}, order ${order(hfScores) === order(probabilities) ? 'same' : 'different'}`);
} finally {
  fs.rmSync(tmp, { recursive: true, force: true });
}
