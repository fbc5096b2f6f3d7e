#!/usr/bin/env node
// Writes an ajc1 (qwen3.c) checkpoint of a real model's shape with random Q8_0 weights, streaming
// (a few MB in memory at a time), for the decoder benchmark (FORMATS.md §5.1-5.2: 256-byte header,
// f32 norms, then int8 values followed by f32 group scales per tensor, per layer).
//   node scripts/bench/make-ajc1.js OUT [--shape qwen3-0.6b] [--seed 1]
'use strict';
require('../args').scriptArgs('make-ajc1.js OUT [--shape qwen3-0.6b] [--seed N]', { options: { shape: 'string', seed: 'string' }, positionals: [1, 1] });
const fs = require('node:fs');

const SHAPES = {
  // Qwen3-0.6B: dim 1024, 28 layers, 16 heads, 8 kv heads, head_dim 128, hidden 3072, tied.
  'qwen3-0.6b': { dim: 1024, hidden: 3072, layers: 28, heads: 16, kvHeads: 8, vocab: 151936, maxSeqLen: 40960, headDim: 128, shared: 1, group: 64 },
  'qwen3-1.7b': { dim: 2048, hidden: 6144, layers: 28, heads: 16, kvHeads: 8, vocab: 151936, maxSeqLen: 40960, headDim: 128, shared: 1, group: 64 },
};

/** xorshift32: fast, seeded, good enough for random weights. */
function rng(seed) {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s;
  };
}

async function main() {
  const args = process.argv.slice(2);
  const out = args[0];
  const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
  const c = SHAPES[opt('shape', 'qwen3-0.6b')];
  if (!out || !c) {
    console.error(`usage: make-ajc1.js OUT [--shape ${Object.keys(SHAPES).join('|')}] [--seed N]`);
    process.exit(1);
  }
  const next = rng(Number(opt('seed', '1')));
  // Written 4 MB at a time at 4 MB-aligned offsets (as lib/formats/writing/sink.ts does): the page cache of
  // a buffered write gets folios as large as the write allows, so the file is cached in 2 MB folios
  // that the decoder maps by PMD; the stream's 64 KB writes left ~27% of it so.
  const stream = fs.createWriteStream(out, { highWaterMark: 4 << 20 });
  const pending = Buffer.allocUnsafe(4 << 20);
  let used = 0;
  const flush = () => {
    const chunk = Buffer.from(pending.subarray(0, used));
    used = 0;
    return stream.write(chunk) ? Promise.resolve() : new Promise((r) => stream.once('drain', r));
  };
  const write = async (buf) => {
    for (let at = 0; at < buf.length; ) {
      const n = Math.min(pending.length - used, buf.length - at);
      buf.copy(pending, used, at, at + n);
      used += n;
      at += n;
      if (used === pending.length) await flush();
    }
  };

  const header = Buffer.alloc(256);
  [0x616a6331, 1, c.dim, c.hidden, c.layers, c.heads, c.kvHeads, c.vocab, c.maxSeqLen, c.headDim, c.shared, c.group].forEach((v, i) =>
    header.writeInt32LE(v | 0, i * 4),
  );
  await write(header);

  // Norm weights near 1.
  const norms = async (count) => {
    const f = new Float32Array(count);
    for (let i = 0; i < count; i++) f[i] = 0.9 + (next() % 1000) / 5000;
    await write(Buffer.from(f.buffer));
  };
  await norms(c.layers * c.dim); // rms_att
  await norms(c.layers * c.dim); // rms_ffn
  await norms(c.dim); // rms_final
  await norms(c.layers * c.headDim); // q_norm
  await norms(c.layers * c.headDim); // k_norm

  // A Q8_0 tensor: int8 values in [-127, 127], then one scale per group (weights of about ±0.04).
  const CHUNK = 1 << 22;
  const q8 = async (numel) => {
    for (let done = 0; done < numel; done += CHUNK) {
      const n = Math.min(CHUNK, numel - done);
      const q = Buffer.allocUnsafe(n);
      for (let i = 0; i < n; i += 4) q.writeUInt32LE(next(), i);
      for (let i = 0; i < n; i++) if (q[i] === 0x80) q[i] = 0x81; // no -128
      await write(q);
    }
    const s = new Float32Array(numel / c.group);
    for (let i = 0; i < s.length; i++) s[i] = (0.02 + (next() % 1000) / 25000) / 127;
    await write(Buffer.from(s.buffer));
  };
  const qd = c.heads * c.headDim;
  const kvd = c.kvHeads * c.headDim;
  await q8(c.vocab * c.dim); // tok_emb
  for (const numel of [qd * c.dim, kvd * c.dim, kvd * c.dim, c.dim * qd, c.hidden * c.dim, c.dim * c.hidden, c.hidden * c.dim]) {
    for (let l = 0; l < c.layers; l++) await q8(numel); // wq, wk, wv, wo, w1, w2, w3
  }
  if (!c.shared) await q8(c.vocab * c.dim);
  if (used > 0) await flush();
  await new Promise((resolve, reject) => stream.end((e) => (e ? reject(e) : resolve())));
  console.log(JSON.stringify({ out, bytes: fs.statSync(out).size, ...c }));
}

main().catch((e) => {
  console.error(e);
  process.exit(1);
});
