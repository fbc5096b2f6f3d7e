#!/usr/bin/env node
// Writes a GGUF of Qwen3-0.6B's shape whose matrices are random ggml blocks of a llama.cpp file
// type, streaming, for the decoder benchmark. No quantizer is involved: every block is random
// bytes with its f16 scale fields set to small finite values, so each is a valid block of its
// type by construction (the layouts of native/kernels/ggml_blocks.h). Norms are f32 ones.
// The per-tensor mix follows llama-quantize's rules for these types: Q4_K_M uses Q6_K for the
// tied embedding and for attn_v / ffn_down of the "more bits" layers (the first and last eighth
// and every third in between), Q4_0 and Q6_K use Q6_K for the embedding, Q8_0 uses Q8_0 for all.
// --vocab adds a byte-level BPE vocabulary of the model's size (the 256 byte symbols, then
// placeholder tokens, no merges), which llama.cpp needs to load the file at all.
//   node scripts/bench/make-gguf.js OUT --type q4_k_m|q4_0|q6_k|q8_0 [--seed 1] [--vocab]
'use strict';
const fs = require('node:fs');

const SHAPE = { dim: 1024, hidden: 3072, layers: 28, heads: 16, kvHeads: 8, headDim: 128, vocab: 151936, ctx: 40960 };

// ggml type id: [values per block, bytes per block, byte offsets of the f16 scale fields]
const BLOCKS = {
  0: [1, 4, []], // F32
  2: [32, 18, [0]], // Q4_0
  8: [32, 34, [0]], // Q8_0
  12: [256, 144, [0, 2]], // Q4_K
  14: [256, 210, [208]], // Q6_K
};
const FTYPES = { q4_0: 2, q8_0: 7, q4_k_m: 15, q6_k: 18 };
// ggml type id of each block type above, by llama.cpp's name
const BLOCK_IDS = { q4_0: 2, q8_0: 8, q4_k: 12, q6_k: 14 };

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

/** The ggml type of each matrix under file type `ftype`. */
function matrixType(ftype, name, layer) {
  const moreBits = (i, n) => i < n / 8 || i >= (7 * n) / 8 || (i - Math.floor(n / 8)) % 3 === 2;
  switch (ftype) {
    case 'q8_0': return 8;
    case 'q6_k': return 14;
    case 'q4_0': return name === 'token_embd.weight' ? 14 : 2;
    case 'q4_k_m':
      if (name === 'token_embd.weight') return 14;
      if ((name.endsWith('attn_v.weight') || name.endsWith('ffn_down.weight')) && moreBits(layer, SHAPE.layers)) return 14;
      return 12;
  }
  throw new Error(`unknown type ${ftype}`);
}

function tensorList(ftype) {
  const { dim, hidden, heads, kvHeads, headDim, vocab, layers } = SHAPE;
  const m = (name, rows, cols, layer) => ({ name, dims: [cols, rows], type: matrixType(ftype, name, layer) });
  const v = (name, n) => ({ name, dims: [n], type: 0 });
  const out = [m('token_embd.weight', vocab, dim, -1), v('output_norm.weight', dim)];
  for (let l = 0; l < layers; l++) {
    const b = `blk.${l}.`;
    out.push(
      v(`${b}attn_norm.weight`, dim), v(`${b}ffn_norm.weight`, dim), v(`${b}attn_q_norm.weight`, headDim), v(`${b}attn_k_norm.weight`, headDim),
      m(`${b}attn_q.weight`, heads * headDim, dim, l), m(`${b}attn_k.weight`, kvHeads * headDim, dim, l), m(`${b}attn_v.weight`, kvHeads * headDim, dim, l),
      m(`${b}attn_output.weight`, dim, heads * headDim, l), m(`${b}ffn_gate.weight`, hidden, dim, l), m(`${b}ffn_up.weight`, hidden, dim, l),
      m(`${b}ffn_down.weight`, dim, hidden, l),
    );
  }
  for (const t of out) {
    const [values, bytes] = BLOCKS[t.type];
    t.bytes = ((t.dims[0] * (t.dims[1] ?? 1)) / values) * bytes;
  }
  return out;
}

const str = (s) => {
  const b = Buffer.from(s, 'utf8');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(b.length));
  return Buffer.concat([len, b]);
};
const u32 = (n) => { const b = Buffer.alloc(4); b.writeUInt32LE(n); return b; };
const u64 = (n) => { const b = Buffer.alloc(8); b.writeBigUInt64LE(BigInt(n)); return b; };
const f32 = (x) => { const b = Buffer.alloc(4); b.writeFloatLE(x); return b; };
const kvU32 = (k, n) => Buffer.concat([str(k), u32(4), u32(n)]);
const kvF32 = (k, x) => Buffer.concat([str(k), u32(6), f32(x)]);
const kvStr = (k, s) => Buffer.concat([str(k), u32(8), str(s)]);
const kvArr = (k, type, items) => Buffer.concat([str(k), u32(9), u32(type), u64(items.length), ...items]);

/**
 * tokenizer.ggml.* of a byte-level BPE vocabulary of `size` tokens: GPT-2's byte-to-symbol map
 * for ids 0..255 (printable bytes stand for themselves, the rest map to U+0100 upwards), then
 * placeholders; the last id is end of text.
 */
function vocabKv(size) {
  const symbols = [];
  let extra = 0;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 0x21 && b <= 0x7e) || (b >= 0xa1 && b <= 0xac) || b >= 0xae;
    symbols.push(String.fromCodePoint(printable ? b : 0x100 + extra++));
  }
  const tokens = Array.from({ length: size }, (_, i) => (i < 256 ? symbols[i] : i === size - 1 ? '<|endoftext|>' : `<t${i}>`));
  return [
    kvStr('tokenizer.ggml.model', 'gpt2'), kvStr('tokenizer.ggml.pre', 'qwen2'),
    kvArr('tokenizer.ggml.tokens', 8, tokens.map(str)),
    kvArr('tokenizer.ggml.token_type', 5, tokens.map((_, i) => u32(i === size - 1 ? 3 : 1))),
    kvArr('tokenizer.ggml.merges', 8, []),
    kvU32('tokenizer.ggml.eos_token_id', size - 1), kvU32('tokenizer.ggml.bos_token_id', size - 1),
    Buffer.concat([str('tokenizer.ggml.add_bos_token'), u32(7), Buffer.from([0])]),
  ];
}

async function main() {
  const args = process.argv.slice(2);
  const out = args[0];
  const opt = (name, def) => (args.includes(`--${name}`) ? args[args.indexOf(`--${name}`) + 1] : def);
  const ftype = opt('type', 'q4_k_m');
  if (!out || FTYPES[ftype] === undefined) {
    console.error(`usage: make-gguf.js OUT --type ${Object.keys(FTYPES).join('|')} [--seed N] [--vocab]`);
    process.exit(1);
  }
  const { dim, hidden, layers, heads, kvHeads, headDim, ctx } = SHAPE;
  const kv = [
    kvStr('general.architecture', 'qwen3'), kvU32('general.file_type', FTYPES[ftype]),
    kvU32('qwen3.context_length', ctx), kvU32('qwen3.embedding_length', dim), kvU32('qwen3.feed_forward_length', hidden),
    kvU32('qwen3.block_count', layers), kvU32('qwen3.attention.head_count', heads), kvU32('qwen3.attention.head_count_kv', kvHeads),
    kvU32('qwen3.attention.key_length', headDim), kvU32('qwen3.attention.value_length', headDim),
    kvF32('qwen3.rope.freq_base', 1e6), kvF32('qwen3.attention.layer_norm_rms_epsilon', 1e-6),
    ...(args.includes('--vocab') ? vocabKv(SHAPE.vocab) : []),
  ];
  const tensors = tensorList(ftype);
  const header = ggufHeader(kv, tensors);

  const stream = fs.createWriteStream(out);
  const write = (buf) => (stream.write(buf) ? Promise.resolve() : new Promise((r) => stream.once('drain', r)));
  await write(header);
  const next = rng(Number(opt('seed', '1')));
  const chunk = Buffer.alloc(1 << 20);
  for (const t of tensors) {
    const [, bytes, scales] = BLOCKS[t.type];
    if (t.type === 0) {
      const ones = Buffer.alloc(t.bytes);
      for (let i = 0; i < t.bytes; i += 4) ones.writeFloatLE(1, i);
      await write(ones);
    } else {
      const perChunk = Math.floor(chunk.length / bytes) * bytes;
      for (let done = 0; done < t.bytes; done += perChunk) {
        const n = Math.min(perChunk, t.bytes - done);
        const buf = Buffer.alloc(n);
        for (let i = 0; i + 4 <= n; i += 4) buf.writeUInt32LE(next(), i);
        // f16 scales of about 2^-10 (0x1400), so the random values stay small and finite
        for (let b = 0; b < n; b += bytes) for (const s of scales) buf.writeUInt16LE(0x1400 | (next() & 0x3ff), b + s);
        await write(buf);
      }
    }
    await write(Buffer.alloc(Math.ceil(t.bytes / 32) * 32 - t.bytes));
  }
  await new Promise((resolve, reject) => stream.end((e) => (e ? reject(e) : resolve())));
}

/** A GGUF v3 header (32-byte aligned) for `kv` entries and `tensors` ({ name, dims, type, bytes }), their data packed in order at 32-byte offsets. */
function ggufHeader(kv, tensors) {
  let offset = 0;
  const infos = tensors.map((t) => {
    const info = Buffer.concat([str(t.name), u32(t.dims.length), ...t.dims.map(u64), u32(t.type), u64(offset)]);
    offset += Math.ceil(t.bytes / 32) * 32;
    return info;
  });
  const header = Buffer.concat([Buffer.from('GGUF'), u32(3), u64(tensors.length), u64(kv.length), ...kv, ...infos]);
  return Buffer.concat([header, Buffer.alloc(Math.ceil(header.length / 32) * 32 - header.length)]);
}

module.exports = { ggufHeader, SHAPE, BLOCKS, BLOCK_IDS, rng, str, u32, u64, kvU32, kvF32, kvStr, kvArr, vocabKv };

if (require.main === module) {
  require('../args').scriptArgs('make-gguf.js OUT --type q4_k_m|q4_0|q6_k|q8_0 [--seed N] [--vocab]', { options: { type: 'string', seed: 'string', vocab: 'boolean' }, positionals: [1, 1] });
  main().catch((e) => {
    console.error(e);
    process.exit(1);
  });
}
