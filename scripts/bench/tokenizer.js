#!/usr/bin/env node
// Tokenizer throughput: encodes ~1 MB of mixed text (English prose, code, numbers, accented
// Latin, Cyrillic, CJK, emoji) with weightmap's tokenizers and with Hugging Face's Rust
// tokenizers (@anush008/tokenizers, a devDependency), checks both give the same ids and
// reports MB/s (best of --runs, after one warm-up run that fills the word caches).
//   node scripts/bench/tokenizer.js [--mb 1] [--runs 5] [--dist dist/cjs]
'use strict';
require('../args').scriptArgs('tokenizer.js [--mb 1] [--runs 5] [--dist dist/cjs]', { options: { mb: 'string', runs: 'string', dist: 'string' } });
const fs = require('node:fs');
const path = require('node:path');
const { performance } = require('node:perf_hooks');

const args = process.argv.slice(2);
const opt = (name, def) => {
  const i = args.indexOf(`--${name}`);
  return i >= 0 ? args[i + 1] : def;
};
const root = path.resolve(__dirname, '..', '..');
const dist = path.resolve(root, opt('dist', 'dist/cjs'));
const lib = { ...require(path.join(dist, 'tokenizers')), ...require(path.join(dist, 'tokenizer-loading')) };
const HF = require('@anush008/tokenizers');
const FIX = path.resolve(root, '..', 'shared', 'fixtures', 'tokenizers');
const mb = Number(opt('mb', '1'));
const runs = Number(opt('runs', '5'));

const SAMPLES = [
  'The quick brown fox jumps over the lazy dog. It wasn\'t the first time, and it won\'t be the last!',
  'In 2023, revenue grew 17.4% to $1,299,000 (compared with $1,106,500 in 2022).',
  'function add(a, b) {\n    return a + b; // sum\n}\n\nconst xs = [1, 2, 3].map((x) => x * 2);\n',
  'def main():\n\tfor i in range(10):\n\t\tprint(f"{i:>3}")\n',
  'Café naïve résumé — Ångström coöperation, straße, İstanbul.',
  'Привет, как дела? Всё хорошо, спасибо.',
  '東京は日本の首都です。北京欢迎你！한국어도 있습니다.',
  'Emoji time 😀🎉👩‍💻🏳️‍🌈 and symbols ©®™ ± ½.',
  '    Indented line with    multiple   spaces\n\n\nand newlines\r\n',
  '<div class="note">Hello &amp; welcome</div>',
];

function makeText(bytes) {
  let seed = 12345;
  const next = () => ((seed = (Math.imul(seed, 1103515245) + 12345) >>> 0) / 4294967296);
  const parts = [];
  let size = 0;
  while (size < bytes) {
    const s = SAMPLES[Math.floor(next() * SAMPLES.length)] + (next() < 0.3 ? '\n' : ' ');
    parts.push(s);
    size += Buffer.byteLength(s);
  }
  return parts.join('');
}

function qwen3Json() {
  const vocab = JSON.parse(fs.readFileSync(path.join(FIX, 'qwen3', 'vocab.json'), 'utf8'));
  const merges = fs.readFileSync(path.join(FIX, 'qwen3', 'merges.txt'), 'utf8').split('\n').filter((l, i) => i > 0 && l);
  const config = JSON.parse(fs.readFileSync(path.join(FIX, 'qwen3', 'tokenizer_config.json'), 'utf8'));
  const added = Object.entries(config.added_tokens_decoder).map(([id, t]) => ({ id: Number(id), ...t }));
  const bl = { type: 'ByteLevel', add_prefix_space: false, trim_offsets: false, use_regex: false };
  return {
    version: '1.0', truncation: null, padding: null, added_tokens: added, normalizer: { type: 'NFC' },
    pre_tokenizer: { type: 'Sequence', pretokenizers: [{ type: 'Split', pattern: { Regex: lib.QWEN2_PATTERN }, behavior: 'Isolated', invert: false }, bl] },
    post_processor: bl, decoder: bl,
    model: { type: 'BPE', dropout: null, unk_token: null, continuing_subword_prefix: '', end_of_word_suffix: '', fuse_unk: false, byte_fallback: false, vocab, merges },
  };
}

async function time(label, text, fn) {
  await fn(); // warm-up
  let best = Infinity;
  let ids;
  for (let r = 0; r < runs; r++) {
    const t0 = performance.now();
    ids = await fn();
    best = Math.min(best, performance.now() - t0);
  }
  const mbps = Buffer.byteLength(text) / 1e6 / (best / 1000);
  console.log(`${label.padEnd(34)} ${best.toFixed(1).padStart(8)} ms  ${mbps.toFixed(2).padStart(7)} MB/s  ${ids.length} ids`);
  return { ids, mbps };
}

async function compare(name, ours, hf, text, opts) {
  console.log(`\n${name}: ${(Buffer.byteLength(text) / 1e6).toFixed(2)} MB`);
  const a = await time('weightmap', text, () => ours.encode(text, opts.ours));
  const b = await time('@anush008/tokenizers (HF Rust)', text, async () => (await hf.encode(text, null, opts.hf)).getIds());
  const same = a.ids.length === b.ids.length && a.ids.every((id, i) => id === b.ids[i]);
  console.log(`same ids: ${same}   ratio weightmap/HF: ${(a.mbps / b.mbps).toFixed(2)}x`);
  if (!same) process.exitCode = 1;
}

(async () => {
  const text = makeText(mb * 1e6);
  const json = qwen3Json();
  await compare('Qwen3 byte-level BPE', lib.tokenizerFromJson(json, 'qwen3'), HF.Tokenizer.fromString(JSON.stringify(json)), text, {
    ours: { addSpecialTokens: false },
    hf: { addSpecialTokens: false },
  });
  const hfBert = HF.Tokenizer.fromFile(path.join(FIX, 'minilm', 'tokenizer.json'));
  hfBert.disableTruncation();
  hfBert.disablePadding();
  await compare('MiniLM WordPiece', lib.loadTokenizerSync(path.join(FIX, 'minilm', 'tokenizer.json')), hfBert, text, {
    ours: { maxLength: Infinity },
    hf: { addSpecialTokens: true },
  });
})();
