#!/usr/bin/env node
// Sentence-embedding throughput of a MiniLM-shaped encoder (hidden 384, 6 layers, 12 heads,
// intermediate 1536, vocab 30522) with random weights: sentences/s at batch 1 and 32, for
// 18-token and 128-token inputs, per thread count, as the median of several runs with their
// spread, next to the compute bound of this CPU: its measured per-core peak (scripts/bench/peak.js)
// for the linear layers (int8 peak for the int8 paths, f32 otherwise) plus the f32 attention.
//
// The model is generated once, streaming: a sentence-transformers folder (random f32
// safetensors + the real MiniLM vocab.txt from ../shared/fixtures), then written as EMBD with
// weightmap's own reader + writer. Needs `npm run build:ts` (dist/) and the addon.
//   node scripts/bench/embed.js [--model FILE] [--threads 1,2] [--quant f32,int8,q8_0] [--runs 5] [--json] [--root CHECKOUT]
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { performance } = require('node:perf_hooks');
const { ROOT, dist } = require('./checkout');
const { closeWeights, loadEmbedder, readWeights, writeWeights } = require(dist('index.js'));
const { measurePeak } = require('./peak.js');

const SHAPE = { hidden: 384, layers: 6, heads: 12, intermediate: 1536, vocab: 30522, positions: 512 };
const WORK_DIR = path.join(os.tmpdir(), 'weightmap-bench-embed');
const VOCAB = path.resolve(__dirname, '..', '..', '..', 'shared', 'fixtures', 'tokenizers', 'minilm', 'vocab.txt');

function arg(rest, name, fallback) {
  const i = rest.indexOf(`--${name}`);
  return i < 0 ? fallback : rest[i + 1];
}

// HF BertModel tensors in sentence-transformers naming, [out,in].
function tensorList(c) {
  const h = c.hidden, f = c.intermediate;
  const list = [
    ['embeddings.word_embeddings.weight', [c.vocab, h]],
    ['embeddings.position_embeddings.weight', [c.positions, h]],
    ['embeddings.token_type_embeddings.weight', [2, h]],
    ['embeddings.LayerNorm.weight', [h]],
    ['embeddings.LayerNorm.bias', [h]],
  ];
  for (let l = 0; l < c.layers; l++) {
    const p = `encoder.layer.${l}.`;
    for (const m of ['attention.self.query', 'attention.self.key', 'attention.self.value', 'attention.output.dense']) {
      list.push([`${p}${m}.weight`, [h, h]], [`${p}${m}.bias`, [h]]);
    }
    list.push([`${p}attention.output.LayerNorm.weight`, [h]], [`${p}attention.output.LayerNorm.bias`, [h]]);
    list.push([`${p}intermediate.dense.weight`, [f, h]], [`${p}intermediate.dense.bias`, [f]]);
    list.push([`${p}output.dense.weight`, [h, f]], [`${p}output.dense.bias`, [h]]);
    list.push([`${p}output.LayerNorm.weight`, [h]], [`${p}output.LayerNorm.bias`, [h]]);
  }
  return list;
}

// The folder, written in 4 MiB chunks: U(-0.05, 0.05) weights and biases, LayerNorm gains ~1.
function writeHfFolder(dir, c) {
  fs.mkdirSync(path.join(dir, '1_Pooling'), { recursive: true });
  const json = (name, v) => fs.writeFileSync(path.join(dir, name), JSON.stringify(v, null, 2));
  json('config.json', {
    architectures: ['BertModel'], model_type: 'bert', hidden_size: c.hidden, num_hidden_layers: c.layers,
    num_attention_heads: c.heads, intermediate_size: c.intermediate, vocab_size: c.vocab,
    max_position_embeddings: c.positions, type_vocab_size: 2, layer_norm_eps: 1e-12, hidden_act: 'gelu',
  });
  json('modules.json', [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
  ]);
  json('sentence_bert_config.json', { max_seq_length: 256, do_lower_case: false });
  json(path.join('1_Pooling', 'config.json'), {
    word_embedding_dimension: c.hidden, pooling_mode_cls_token: false, pooling_mode_mean_tokens: true,
    pooling_mode_max_tokens: false, pooling_mode_mean_sqrt_len_tokens: false,
  });
  fs.copyFileSync(VOCAB, path.join(dir, 'vocab.txt'));
  json('tokenizer_config.json', { do_lower_case: true });

  const tensors = tensorList(c);
  const header = {};
  let offset = 0;
  for (const [name, shape] of tensors) {
    const bytes = shape.reduce((a, b) => a * b, 1) * 4;
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let text = JSON.stringify(header);
  text += ' '.repeat((8 - (text.length % 8)) % 8);
  const fd = fs.openSync(path.join(dir, 'model.safetensors'), 'w');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(text.length));
  fs.writeSync(fd, len);
  fs.writeSync(fd, text);
  let s = 0x2545f491;
  const chunk = new Float32Array(1 << 20);
  for (const [name, shape] of tensors) {
    const gain = name.endsWith('LayerNorm.weight');
    let remaining = shape.reduce((a, b) => a * b, 1);
    while (remaining > 0) {
      const n = Math.min(remaining, chunk.length);
      for (let i = 0; i < n; i++) {
        s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
        const u = (s >>> 0) / 4294967296 - 0.5;
        chunk[i] = gain ? 1 + 0.2 * u : 0.1 * u;
      }
      fs.writeSync(fd, Buffer.from(chunk.buffer, 0, n * 4));
      remaining -= n;
    }
  }
  fs.closeSync(fd);
}

async function ensureModel() {
  const file = path.join(WORK_DIR, 'minilm-random.embd');
  if (fs.existsSync(file)) return file;
  const folder = path.join(WORK_DIR, 'minilm-random-hf');
  fs.rmSync(folder, { recursive: true, force: true });
  const t0 = performance.now();
  writeHfFolder(folder, SHAPE);
  // Reader + writer; the safetensors reader leaves vocab.txt to the tokenizers, so the
  // vocabulary is attached here for EMBD to embed it.
  const weights = await readWeights(folder);
  const tokens = fs.readFileSync(VOCAB, 'utf8').split('\n').slice(0, SHAPE.vocab);
  weights.tokenizer = { kind: 'wordpiece', tokens, specialIds: { pad: 0, unk: 100, cls: 101, sep: 102, mask: 103 }, doLowerCase: true };
  try {
    await writeWeights(weights, file, { format: 'embd' });
  } finally {
    closeWeights(weights);
  }
  fs.rmSync(folder, { recursive: true, force: true });
  console.error(`generated ${file} (${(fs.statSync(file).size / 1e6).toFixed(1)} MB) in ${((performance.now() - t0) / 1000).toFixed(1)} s`);
  return file;
}

// `count` texts of exactly `tokens` ids ([CLS] + words + [SEP]): whole-word vocabulary entries.
function makeTexts(embedder, tokens, count) {
  const words = fs
    .readFileSync(VOCAB, 'utf8')
    .split('\n')
    .slice(2000)
    .filter((w) => /^[a-z]{3,9}$/.test(w));
  let s = 12345;
  const pick = () => {
    s = (Math.imul(s, 1103515245) + 12345) >>> 0;
    return words[s % words.length];
  };
  const texts = [];
  for (let i = 0; i < count; i++) {
    const text = Array.from({ length: tokens - 2 }, pick).join(' ');
    const n = embedder.tokenizer.encode(text).length;
    if (n !== tokens) throw new Error(`text tokenizes to ${n} ids, not ${tokens}`);
    texts.push(text);
  }
  return texts;
}

// Multiply-adds of one sentence of T tokens: the six linear layers, and the two attention products.
function macsPerSentence(c, T) {
  return {
    linear: c.layers * T * (4 * c.hidden * c.hidden + 2 * c.hidden * c.intermediate),
    attention: c.layers * 2 * T * T * c.hidden,
  };
}

// Sentences/s if every multiply-add ran at the measured peak: the linear layers at the int8 or
// f32 peak (by `quant`), attention at the f32 peak.
function boundPerSecond(peak, quant, T) {
  const m = macsPerSentence(SHAPE, T);
  const linearPeak = quant === 'f32' ? peak.f32MacsPerSecond : peak.int8MacsPerSecond;
  return 1 / (m.linear / linearPeak + m.attention / peak.f32MacsPerSecond);
}

const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];

async function main() {
  const rest = process.argv.slice(2);
  const threadList = arg(rest, 'threads', '1,2').split(',').map(Number);
  const quants = arg(rest, 'quant', 'f32,int8').split(',');
  const runs = Number(arg(rest, 'runs', '5'));
  const file = arg(rest, 'model') ?? (await ensureModel());
  const peaks = new Map();
  for (const threads of threadList) peaks.set(threads, await measurePeak(threads));
  const results = [];
  for (const quant of quants) {
    for (const threads of threadList) {
      const peak = peaks.get(threads);
      const embedder = await loadEmbedder(file, { threads, quant });
      const info = embedder.info;
      for (const tokens of [18, 128]) {
        for (const batch of [1, 32]) {
          // About a quarter second of work per run at the target rates.
          const count = Math.max(batch, Math.round(((tokens === 18 ? 300 : 48) * (batch === 1 ? 0.5 : 1)) / batch) * batch);
          const texts = makeTexts(embedder, tokens, count);
          await embedder.embed(texts.slice(0, batch * 2), { batchSize: batch }); // warm-up
          const rates = [];
          for (let r = 0; r < runs; r++) {
            const t0 = performance.now();
            await embedder.embed(texts, { batchSize: batch });
            rates.push(count / ((performance.now() - t0) / 1000));
          }
          const m = macsPerSentence(SHAPE, tokens);
          const bound = peak ? boundPerSecond(peak, quant, tokens) : null;
          const row = {
            quant, threads, isa: info.isa, tokens, batch, texts: count, runs,
            median: median(rates), min: Math.min(...rates), max: Math.max(...rates),
            gmacs: (median(rates) * (m.linear + m.attention)) / 1e9, bound,
          };
          results.push(row);
          if (!rest.includes('--json')) {
            console.log(
              `${quant.padEnd(5)} threads ${threads}  ${String(tokens).padStart(3)} tokens  batch ${String(batch).padStart(2)}: ` +
                `${row.median.toFixed(1).padStart(7)} sentences/s (min ${row.min.toFixed(1)}, max ${row.max.toFixed(1)}; ${runs} runs of ${count})  ` +
                `${row.gmacs.toFixed(0)} GMAC/s` +
                (bound ? ` = ${((100 * row.median) / bound).toFixed(0)}% of the bound ${bound.toFixed(0)}/s` : ''),
            );
          }
        }
      }
      embedder.dispose();
    }
  }
  const describe = (T) => {
    const m = macsPerSentence(SHAPE, T);
    return `${(m.linear / 1e6).toFixed(0)}M linear + ${(m.attention / 1e6).toFixed(1)}M attention multiply-adds at ${T} tokens`;
  };
  const peakText = [...peaks]
    .map(([t, p]) => (p ? `${t} thread(s): int8 ${(p.int8MacsPerSecond / 1e9).toFixed(0)}, f32 ${(p.f32MacsPerSecond / 1e9).toFixed(0)} GMAC/s` : `${t} thread(s): not measured`))
    .join('; ');
  const note = `bound = the multiply-adds of a sentence (${describe(18)}; ${describe(128)}) at the measured peak (${peakText}; scripts/bench/peak.js), linear layers at the int8 peak for int8/q8_0`;
  if (rest.includes('--json')) console.log(JSON.stringify({ command: `node scripts/bench/embed.js ${rest.join(' ')}`.trim(), machine: require('./machine').machine(), root: ROOT, model: file, shape: SHAPE, cpu: os.cpus()[0].model, peaks: Object.fromEntries(peaks), note, results }, null, 2));
  else console.log(`${note}; checkout ${ROOT}`);
}

module.exports = { ensureModel, makeTexts, macsPerSentence, writeHfFolder, SHAPE, VOCAB };
if (require.main === module) {
  require('../args').scriptArgs('embed.js [--model FILE] [--threads 1,2] [--quant f32,int8,q8_0] [--runs 5] [--json] [--root CHECKOUT]', { options: { model: 'string', threads: 'string', quant: 'string', runs: 'string', json: 'boolean', root: 'string' } });
  main().catch((error) => {
    console.error(error);
    process.exitCode = 1;
  });
}
