#!/usr/bin/env node
// Writes a mixture-of-experts GGUF of a released model's shape with random ggml blocks, for the
// side-by-side benchmark's MoE rows (moe.js), streaming:
//  - qwen3moe: Qwen3-30B-A3B (hidden 2048, 48 layers, 32 q / 4 kv heads of 128, 128 experts, 8 active,
//    expert FFN 768, vocab 151936) in llama-quantize's Q4_K_M mix: Q4_K everywhere, Q6_K for the
//    (untied) output and for attn_v / ffn_down_exps of the "more bits" layers (the first and last
//    eighth and every third in between; llama.cpp's use_more_bits), the router (ffn_gate_inp) f32;
//  - gpt-oss: gpt-oss-20b (hidden 2880, 24 layers, 64 q / 8 kv heads of 64, 32 experts, 4 active,
//    expert FFN 2880, vocab 201088, sliding window 128 on alternate layers) in llama-quantize's
//    MXFP4_MOE mix: the stacked experts MXFP4, every other matrix Q8_0, biases, sinks and norms f32.
// As make-gguf.js: no quantizer is involved, every block is random bytes with its scale fields set
// to small finite values (a valid block of its type by construction). The random blocks come from
// a pool of 16 MB per type, read from a random block offset for each tensor (writing 17 GB of fresh
// random numbers in JavaScript would take longer than the benchmark). Norms are f32 ones; the
// router and the biases are random f32 (uniform, a few units of logit spread: routing is not
// degenerate, every expert is chosen across tokens). A byte-level vocabulary (make-gguf.js --vocab)
// lets llama.cpp load the file. --layers writes fewer layers than the model has.
//   node scripts/bench/make-moe-gguf.js OUT --arch qwen3moe|gpt-oss [--layers N] [--seed 1]
'use strict';
const fs = require('node:fs');
const { BLOCKS, ggufHeader, rng, kvU32, kvF32, kvStr, vocabKv } = require('./make-gguf');

const SHAPES = {
  qwen3moe: { dim: 2048, layers: 48, heads: 32, kvHeads: 4, headDim: 128, experts: 128, used: 8, expertFfn: 768, vocab: 151936, ctx: 40960, ftype: 15 },
  'gpt-oss': { dim: 2880, layers: 24, heads: 64, kvHeads: 8, headDim: 64, experts: 32, used: 4, expertFfn: 2880, vocab: 201088, ctx: 131072, ftype: 38 },
};
const F32 = 0, Q8_0 = 8, Q4_K = 12, Q6_K = 14, MXFP4 = 39;
// MXFP4: 32 e2m1 values per block, one e8m0 exponent byte then 16 bytes of nibbles
const POOL_BLOCKS = { ...BLOCKS, [MXFP4]: [32, 17, []] };

const moreBits = (i, n) => i < n / 8 || i >= (7 * n) / 8 || (i - Math.floor(n / 8)) % 3 === 2;

/** [name, dims (ggml order: fastest first), type, fill] of every tensor; fill 'ones' | 'random' | 'blocks'. */
function tensorList(arch, s) {
  const out = [];
  const mat = (name, rows, cols, type, experts) => out.push({ name, dims: experts ? [cols, rows, experts] : [cols, rows], type, fill: type === F32 ? 'random' : 'blocks' });
  const vec = (name, n, fill = 'ones') => out.push({ name, dims: [n], type: F32, fill });
  const { dim, heads, kvHeads, headDim, experts, expertFfn, vocab } = s;
  if (arch === 'qwen3moe') {
    mat('token_embd.weight', vocab, dim, Q4_K);
    vec('output_norm.weight', dim);
    mat('output.weight', vocab, dim, Q6_K);
    for (let l = 0; l < s.layers; l++) {
      const b = `blk.${l}.`, more = moreBits(l, s.layers);
      vec(`${b}attn_norm.weight`, dim); vec(`${b}ffn_norm.weight`, dim);
      vec(`${b}attn_q_norm.weight`, headDim); vec(`${b}attn_k_norm.weight`, headDim);
      mat(`${b}attn_q.weight`, heads * headDim, dim, Q4_K);
      mat(`${b}attn_k.weight`, kvHeads * headDim, dim, Q4_K);
      mat(`${b}attn_v.weight`, kvHeads * headDim, dim, more ? Q6_K : Q4_K);
      mat(`${b}attn_output.weight`, dim, heads * headDim, Q4_K);
      mat(`${b}ffn_gate_inp.weight`, experts, dim, F32);
      mat(`${b}ffn_gate_exps.weight`, expertFfn, dim, Q4_K, experts);
      mat(`${b}ffn_up_exps.weight`, expertFfn, dim, Q4_K, experts);
      mat(`${b}ffn_down_exps.weight`, dim, expertFfn, more ? Q6_K : Q4_K, experts);
    }
  } else {
    mat('token_embd.weight', vocab, dim, Q8_0);
    vec('output_norm.weight', dim);
    mat('output.weight', vocab, dim, Q8_0);
    for (let l = 0; l < s.layers; l++) {
      const b = `blk.${l}.`;
      vec(`${b}attn_norm.weight`, dim); vec(`${b}post_attention_norm.weight`, dim);
      mat(`${b}attn_q.weight`, heads * headDim, dim, Q8_0); vec(`${b}attn_q.bias`, heads * headDim, 'random');
      mat(`${b}attn_k.weight`, kvHeads * headDim, dim, Q8_0); vec(`${b}attn_k.bias`, kvHeads * headDim, 'random');
      mat(`${b}attn_v.weight`, kvHeads * headDim, dim, Q8_0); vec(`${b}attn_v.bias`, kvHeads * headDim, 'random');
      mat(`${b}attn_output.weight`, dim, heads * headDim, Q8_0); vec(`${b}attn_output.bias`, dim, 'random');
      vec(`${b}attn_sinks.weight`, heads, 'random');
      mat(`${b}ffn_gate_inp.weight`, experts, dim, F32); vec(`${b}ffn_gate_inp.bias`, experts, 'random');
      mat(`${b}ffn_gate_exps.weight`, expertFfn, dim, MXFP4, experts); mat(`${b}ffn_gate_exps.bias`, experts, expertFfn, F32);
      mat(`${b}ffn_up_exps.weight`, expertFfn, dim, MXFP4, experts); mat(`${b}ffn_up_exps.bias`, experts, expertFfn, F32);
      mat(`${b}ffn_down_exps.weight`, dim, expertFfn, MXFP4, experts); mat(`${b}ffn_down_exps.bias`, experts, dim, F32);
    }
  }
  for (const t of out) {
    const [values, bytes] = POOL_BLOCKS[t.type];
    t.bytes = (t.dims.reduce((a, b) => a * b, 1) / values) * bytes;
  }
  return out;
}

function metadata(arch, s) {
  const a = (k) => `${arch}.${k}`;
  const kv = [
    kvStr('general.architecture', arch), kvU32('general.file_type', s.ftype),
    kvU32(a('context_length'), s.ctx), kvU32(a('embedding_length'), s.dim), kvU32(a('feed_forward_length'), arch === 'qwen3moe' ? 6144 : s.expertFfn),
    kvU32(a('block_count'), s.layers), kvU32(a('attention.head_count'), s.heads), kvU32(a('attention.head_count_kv'), s.kvHeads),
    kvU32(a('attention.key_length'), s.headDim), kvU32(a('attention.value_length'), s.headDim),
    kvU32(a('expert_count'), s.experts), kvU32(a('expert_used_count'), s.used), kvU32(a('expert_feed_forward_length'), s.expertFfn),
    kvF32(a('attention.layer_norm_rms_epsilon'), arch === 'qwen3moe' ? 1e-6 : 1e-5),
  ];
  if (arch === 'qwen3moe') kv.push(kvF32(a('rope.freq_base'), 1e6));
  else {
    kv.push(
      kvF32(a('rope.freq_base'), 150000), kvU32(a('attention.sliding_window'), 128),
      kvStr(a('rope.scaling.type'), 'yarn'), kvF32(a('rope.scaling.factor'), 32), kvU32(a('rope.scaling.original_context_length'), 4096),
    );
  }
  return [...kv, ...vocabKv(s.vocab)];
}

/** A pool of random blocks of `type` (16 MB), scale fields set small and finite. */
function blockPool(type, next) {
  const [, bytes, scales] = POOL_BLOCKS[type];
  const n = Math.floor((16 << 20) / bytes);
  const buf = Buffer.alloc(n * bytes);
  for (let i = 0; i + 4 <= buf.length; i += 4) buf.writeUInt32LE(next(), i);
  for (let b = 0; b < buf.length; b += bytes) {
    for (const at of scales) buf.writeUInt16LE(0x1400 | (next() & 0x3ff), b + at); // f16 about 2^-10
    if (type === MXFP4) buf[b] = 117 + (next() & 3); // e8m0 2^-10 .. 2^-7: values up to 6 · 2^-7
  }
  return buf;
}

function main() {
  const args = process.argv.slice(2);
  const out = args[0];
  const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
  const arch = opt('arch', 'qwen3moe');
  if (!SHAPES[arch]) throw new Error(`--arch: one of ${Object.keys(SHAPES).join(', ')}`);
  const s = { ...SHAPES[arch] };
  s.layers = Number(opt('layers', String(s.layers)));
  const next = rng(Number(opt('seed', '1')));
  const tensors = tensorList(arch, s);
  const kv = metadata(arch, s);
  const header = ggufHeader(kv, tensors);
  const fd = fs.openSync(out, 'w');
  fs.writeSync(fd, header);
  const pools = new Map();
  const uniform = (n, scale) => {
    const b = Buffer.alloc(n * 4);
    for (let i = 0; i < n; i++) b.writeFloatLE(scale * ((next() / 2 ** 32) * 2 - 1), i * 4);
    return b;
  };
  for (const t of tensors) {
    if (t.fill === 'ones') {
      const b = Buffer.alloc(t.bytes);
      for (let i = 0; i < t.bytes; i += 4) b.writeFloatLE(1, i);
      fs.writeSync(fd, b);
    } else if (t.fill === 'random') {
      // router rows: logits of about ±3 over a unit-RMS input (0.1 · √(dim/3)); biases about ±0.1
      fs.writeSync(fd, uniform(t.bytes / 4, t.name.endsWith('ffn_gate_inp.weight') ? 0.1 : 0.1));
    } else {
      if (!pools.has(t.type)) pools.set(t.type, blockPool(t.type, next));
      const pool = pools.get(t.type);
      const bytes = POOL_BLOCKS[t.type][1];
      let at = (next() % (pool.length / bytes)) * bytes;
      for (let done = 0; done < t.bytes; ) {
        const n = Math.min(pool.length - at, t.bytes - done);
        fs.writeSync(fd, pool, at, n);
        done += n;
        at = 0;
      }
    }
    fs.writeSync(fd, Buffer.alloc(Math.ceil(t.bytes / 32) * 32 - t.bytes));
  }
  fs.closeSync(fd);
}

module.exports = { SHAPES, tensorList };

if (require.main === module) {
  require('../args').scriptArgs('make-moe-gguf.js OUT --arch qwen3moe|gpt-oss [--layers N] [--seed N]', { options: { arch: 'string', layers: 'string', seed: 'string' }, positionals: [1, 1] });
  main();
}
