#!/usr/bin/env node
// Writes a Hugging Face-style model folder (config.json + model.safetensors) with random weights
// of a real model's shape, streaming (never more than a few MB in memory). For benchmarks:
//   node scripts/bench/make-hf-model.js qwen3-0.6b /tmp/qwen3-0.6b-hf [--dtype bf16|f32|f16]
'use strict';
require('../args').scriptArgs('make-hf-model.js qwen3-0.6b|qwen3-1.7b|stories15m OUT_DIR [--dtype bf16|f16|f32]', { options: { dtype: 'string' }, positionals: [2, 2] });
const fs = require('node:fs');
const path = require('node:path');

const SHAPES = {
  'qwen3-0.6b': { model_type: 'qwen3', architectures: ['Qwen3ForCausalLM'], hidden_size: 1024, intermediate_size: 3072, num_hidden_layers: 28, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, max_position_embeddings: 40960, rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true, bos_token_id: 151643, eos_token_id: 151645 },
  'qwen3-1.7b': { model_type: 'qwen3', architectures: ['Qwen3ForCausalLM'], hidden_size: 2048, intermediate_size: 6144, num_hidden_layers: 28, num_attention_heads: 16, num_key_value_heads: 8, head_dim: 128, vocab_size: 151936, max_position_embeddings: 40960, rms_norm_eps: 1e-6, rope_theta: 1000000, tie_word_embeddings: true, bos_token_id: 151643, eos_token_id: 151645 },
  'stories15m': { model_type: 'llama', architectures: ['LlamaForCausalLM'], hidden_size: 288, intermediate_size: 768, num_hidden_layers: 6, num_attention_heads: 6, num_key_value_heads: 6, head_dim: 48, vocab_size: 32000, max_position_embeddings: 256, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: true, bos_token_id: 1, eos_token_id: 2 },
};

function tensorList(c) {
  const d = c.hidden_size, f = c.intermediate_size, q = c.num_attention_heads * c.head_dim, kv = c.num_key_value_heads * c.head_dim;
  const list = [['model.embed_tokens.weight', [c.vocab_size, d]]];
  for (let l = 0; l < c.num_hidden_layers; l++) {
    const p = `model.layers.${l}.`;
    list.push([`${p}input_layernorm.weight`, [d]], [`${p}self_attn.q_proj.weight`, [q, d]], [`${p}self_attn.k_proj.weight`, [kv, d]],
      [`${p}self_attn.v_proj.weight`, [kv, d]], [`${p}self_attn.o_proj.weight`, [d, q]]);
    if (c.model_type === 'qwen3') list.push([`${p}self_attn.q_norm.weight`, [c.head_dim]], [`${p}self_attn.k_norm.weight`, [c.head_dim]]);
    list.push([`${p}post_attention_layernorm.weight`, [d]], [`${p}mlp.gate_proj.weight`, [f, d]], [`${p}mlp.up_proj.weight`, [f, d]],
      [`${p}mlp.down_proj.weight`, [d, f]]);
  }
  list.push(['model.norm.weight', [d]]);
  if (!c.tie_word_embeddings) list.push(['lm_head.weight', [c.vocab_size, d]]);
  return list;
}

const DTYPES = { bf16: ['BF16', 2], f16: ['F16', 2], f32: ['F32', 4] };

function main() {
  const [shape, out, ...rest] = process.argv.slice(2);
  const dtype = rest.includes('--dtype') ? rest[rest.indexOf('--dtype') + 1] : 'bf16';
  if (!SHAPES[shape] || !out || !DTYPES[dtype]) {
    console.error(`usage: make-hf-model.js <${Object.keys(SHAPES).join('|')}> OUT_DIR [--dtype bf16|f16|f32]`);
    process.exit(1);
  }
  const config = { ...SHAPES[shape], torch_dtype: dtype === 'f32' ? 'float32' : dtype === 'f16' ? 'float16' : 'bfloat16' };
  const [stDtype, size] = DTYPES[dtype];
  const tensors = tensorList(config);
  const header = {};
  let offset = 0;
  for (const [name, shp] of tensors) {
    const bytes = shp.reduce((a, b) => a * b, 1) * size;
    header[name] = { dtype: stDtype, shape: shp, data_offsets: [offset, offset + bytes] };
    offset += bytes;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  fs.mkdirSync(out, { recursive: true });
  fs.writeFileSync(path.join(out, 'config.json'), JSON.stringify(config, null, 2));
  const fd = fs.openSync(path.join(out, 'model.safetensors'), 'w');
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(json.length));
  fs.writeSync(fd, len);
  fs.writeSync(fd, json);
  // Random values ~ U(-0.05, 0.05) (norm weights ~ 1), from xorshift32: deterministic and fast.
  let s = 0x12345678;
  const chunkElems = 1 << 20;
  const f32 = new Float32Array(chunkElems);
  const u32 = new Uint32Array(f32.buffer);
  const u16 = new Uint16Array(chunkElems);
  const f16 = (x) => { // f32 -> f16 bits, round to nearest (values here are small and normal or zero)
    const b = new Float32Array([x]); const i = new Uint32Array(b.buffer)[0];
    const sign = (i >>> 16) & 0x8000; const e = ((i >>> 23) & 0xff) - 112; const m = i & 0x7fffff;
    if (e <= 0) return sign; return sign | (e << 10) | ((m + 0x1000) >>> 13);
  };
  for (const [name, shp] of tensors) {
    let remaining = shp.reduce((a, b) => a * b, 1);
    const isNorm = name.endsWith('norm.weight');
    while (remaining > 0) {
      const n = Math.min(remaining, chunkElems);
      for (let i = 0; i < n; i++) {
        s ^= s << 13; s ^= s >>> 17; s ^= s << 5;
        f32[i] = isNorm ? 1 + ((s >>> 0) / 4294967296 - 0.5) * 0.2 : ((s >>> 0) / 4294967296 - 0.5) * 0.1;
      }
      let buf;
      if (dtype === 'f32') buf = Buffer.from(f32.buffer, 0, n * 4);
      else {
        for (let i = 0; i < n; i++) u16[i] = dtype === 'bf16' ? (u32[i] + 0x8000) >>> 16 : f16(f32[i]);
        buf = Buffer.from(u16.buffer, 0, n * 2);
      }
      fs.writeSync(fd, buf);
      remaining -= n;
    }
  }
  fs.closeSync(fd);
  console.log(`${out}: ${tensors.length} tensors, ${(offset / 1e9).toFixed(2)} GB of ${dtype}`);
}

main();
