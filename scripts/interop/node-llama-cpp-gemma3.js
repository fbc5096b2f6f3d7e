#!/usr/bin/env node
/**
 * Interop check for Gemma 3: does the GGUF weightmap writes from a Gemma 3 HF folder load in
 * llama.cpp (through node-llama-cpp), and does llama.cpp generate from it the greedy tokens
 * weightmap generates from the HF folder (so the GGUF's conventions, norms stored as 1 + w among
 * them, are llama.cpp's)?
 *
 *   npm run build:ts && node scripts/interop/node-llama-cpp-gemma3.js [--tokens 16]
 *
 * node-llama-cpp comes from the cache folder of scripts/interop/node-llama-cpp.js
 * (WEIGHTMAP_INTEROP_CACHE, default ~/.cache/weightmap-interop; installed there when absent).
 * The model is random (seeded): Gemma3ForCausalLM's config.json at a tiny size (6 layers, the
 * 6th global, the others sliding with a window of 4, as the 1B's pattern) and f32 safetensors,
 * in a temporary folder. weightmap has no Gemma vocabulary converter, so the GGUF gets a
 * synthetic SentencePiece vocabulary (control tokens, the 256 byte tokens, filler pieces) that
 * llama.cpp accepts; prompts are token ids (12 of them, 3 to 14 ids, each greedy-continued: a
 * random model soon repeats one token, so one long run would compare little). Prints one JSON
 * line; exit code 1 when the tokens differ.
 */
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { pathToFileURL } = require('node:url');
const { readWeights, writeWeights } = require('../../dist/cjs/formats/index.js');
const { DecoderEngine } = require('../../dist/cjs/engines/decoder.js');
const { closeWeights } = require('../../dist/cjs/weights.js');

const cache = process.env.WEIGHTMAP_INTEROP_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-interop');
const tokensArg = process.argv.indexOf('--tokens');
const GEN = tokensArg > 0 ? Number(process.argv[tokensArg + 1]) : 6;

const HIDDEN = 64, INTER = 128, LAYERS = 6, HEADS = 4, KV_HEADS = 1, HEAD_DIM = 16, VOCAB = 320;
const CONFIG = {
  architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: HIDDEN, intermediate_size: INTER,
  num_hidden_layers: LAYERS, num_attention_heads: HEADS, num_key_value_heads: KV_HEADS, head_dim: HEAD_DIM, vocab_size: VOCAB,
  max_position_embeddings: 256, rms_norm_eps: 1e-6, rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 4,
  sliding_window_pattern: 6, query_pre_attn_scalar: HEAD_DIM, hidden_activation: 'gelu_pytorch_tanh', bos_token_id: 2, eos_token_id: 1,
};

function installedNodeLlamaCpp() {
  const entry = path.join(cache, 'node_modules', 'node-llama-cpp', 'package.json');
  if (!fs.existsSync(entry)) {
    // The other interop script installs it (and knows how); run it once first.
    throw new Error(`node-llama-cpp is not in ${cache}: run scripts/interop/node-llama-cpp.js once, or set WEIGHTMAP_INTEROP_CACHE`);
  }
  const pkg = JSON.parse(fs.readFileSync(entry, 'utf8'));
  const main = typeof pkg.exports === 'object' ? (pkg.exports['.']?.import ?? pkg.exports['.']?.default ?? pkg.main) : pkg.main;
  return { version: pkg.version, url: pathToFileURL(path.join(path.dirname(entry), typeof main === 'string' ? main : main.default)).href };
}

/** BOS then 2..13 filler ids: prompts shorter and longer than the window, so that random weights' greedy runs differ. */
function prompts() {
  const state = { s: 777 };
  return Array.from({ length: 12 }, (_, i) => [2, ...Array.from(uniform(i + 2, 0.5, 0.5, state), (u) => 260 + Math.floor(u * (VOCAB - 260)))]);
}

/** Seeded uniform values in [center - scale, center + scale). */
function uniform(n, scale, center, state) {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    state.s = (Math.imul(state.s, 1664525) + 1013904223) >>> 0;
    out[i] = center + scale * (2 * (state.s / 4294967296) - 1);
  }
  return out;
}

/** config.json and model.safetensors (F32) of a random Gemma 3. */
function writeRandomGemma3(dir) {
  const state = { s: 12345 };
  const tensors = [];
  const matrix = (name, rows, cols) => tensors.push([name, [rows, cols], uniform(rows * cols, Math.sqrt(3 / cols), 0, state)]);
  const norm = (name, n, center = 0) => tensors.push([name, [n], uniform(n, 0.3, center, state)]); // scaled by 1 + w
  tensors.push(['model.embed_tokens.weight', [VOCAB, HIDDEN], uniform(VOCAB * HIDDEN, 1, 0, state)]);
  for (let l = 0; l < LAYERS; l++) {
    const p = `model.layers.${l}.`;
    norm(`${p}input_layernorm.weight`, HIDDEN);
    norm(`${p}pre_feedforward_layernorm.weight`, HIDDEN);
    // Block outputs larger than the scaled embedding, which alone would make every token predict itself (tied head).
    norm(`${p}post_attention_layernorm.weight`, HIDDEN, 3);
    norm(`${p}post_feedforward_layernorm.weight`, HIDDEN, 3);
    norm(`${p}self_attn.q_norm.weight`, HEAD_DIM);
    norm(`${p}self_attn.k_norm.weight`, HEAD_DIM);
    matrix(`${p}self_attn.q_proj.weight`, HEADS * HEAD_DIM, HIDDEN);
    matrix(`${p}self_attn.k_proj.weight`, KV_HEADS * HEAD_DIM, HIDDEN);
    matrix(`${p}self_attn.v_proj.weight`, KV_HEADS * HEAD_DIM, HIDDEN);
    matrix(`${p}self_attn.o_proj.weight`, HIDDEN, HEADS * HEAD_DIM);
    matrix(`${p}mlp.gate_proj.weight`, INTER, HIDDEN);
    matrix(`${p}mlp.up_proj.weight`, INTER, HIDDEN);
    matrix(`${p}mlp.down_proj.weight`, HIDDEN, INTER);
  }
  norm('model.norm.weight', HIDDEN);
  const header = {};
  let offset = 0;
  for (const [name, shape, values] of tensors) {
    header[name] = { dtype: 'F32', shape, data_offsets: [offset, offset + values.byteLength] };
    offset += values.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (json.length % 8)) % 8);
  const size = Buffer.alloc(8);
  size.writeBigUInt64LE(BigInt(json.length));
  fs.mkdirSync(dir);
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(CONFIG));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([size, Buffer.from(json), ...tensors.map(([, , v]) => Buffer.from(v.buffer))]));
}

/** A SentencePiece vocabulary llama.cpp accepts: <pad> <eos> <bos> <unk>, <0x00>..<0xFF>, then filler pieces. */
function syntheticVocabulary() {
  const tokens = ['<pad>', '<eos>', '<bos>', '<unk>'];
  const types = [3, 3, 3, 2]; // control, control, control, unknown
  for (let b = 0; b < 256; b++) {
    tokens.push(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`);
    types.push(6); // byte
  }
  while (tokens.length < VOCAB) {
    tokens.push(`\u2581w${tokens.length}`);
    types.push(1); // normal
  }
  return { kind: 'gguf', model: 'llama', tokens, scores: new Float32Array(VOCAB).map((_, i) => -i), tokenTypes: Int32Array.from(types), padId: 0, eosId: 1, bosId: 2, unkId: 3, addBos: true, addEos: false };
}

/** weightmap's greedy tokens after each prompt, from `file` (the HF folder: its own reading of Gemma's norms). */
async function weightmapGreedy(file) {
  const weights = await readWeights(file);
  const engine = await DecoderEngine.load(weights, { threads: 1 });
  try {
    const runs = [];
    for (const prompt of prompts()) {
      const session = engine.createSession({ contextLength: 256 });
      const tokens = [];
      let logits = await session.eval(prompt);
      for (let i = 0; i < GEN; i++) {
        let best = 0;
        for (let v = 1; v < logits.length; v++) if (logits[v] > logits[best]) best = v;
        tokens.push(best);
        if (i + 1 < GEN) logits = await session.eval([best]);
      }
      session.dispose();
      runs.push(tokens);
    }
    return runs;
  } finally {
    engine.dispose();
    closeWeights(weights);
  }
}

async function llamaCppGreedy(llama, file) {
  const model = await llama.loadModel({ modelPath: file });
  try {
    const runs = [];
    for (const prompt of prompts()) {
      const context = await model.createContext({ contextSize: 256, threads: 1 });
      try {
        const tokens = [];
        for await (const token of context.getSequence().evaluate(prompt, { temperature: 0 })) {
          tokens.push(token);
          if (tokens.length >= GEN) break;
        }
        runs.push(tokens);
      } finally {
        await context.dispose();
      }
    }
    return runs;
  } finally {
    await model.dispose();
  }
}

async function main() {
  const { version, url } = installedNodeLlamaCpp();
  const out = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-interop-gemma3-'));
  try {
    const folder = path.join(out, 'gemma3');
    writeRandomGemma3(folder);
    const gguf = path.join(out, 'gemma3.gguf');
    const hf = await readWeights(folder);
    try {
      await writeWeights({ ...hf, tokenizer: syntheticVocabulary() }, gguf, { format: 'gguf' });
    } finally {
      closeWeights(hf);
    }
    const mine = await weightmapGreedy(folder);
    const { getLlama } = await import(url);
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
    let result;
    try {
      const theirs = await llamaCppGreedy(llama, gguf);
      const distinct = new Set(mine.flat()).size;
      result = { loaded: true, sameGreedyTokens: JSON.stringify(theirs) === JSON.stringify(mine), distinctTokens: distinct, weightmap: mine, llamaCpp: theirs };
    } catch (error) {
      result = { loaded: false, error: String(error && error.message ? error.message : error), weightmap: mine };
    }
    console.log(JSON.stringify({ model: 'gemma3 (random, tiny)', nodeLlamaCpp: version, ...result }));
    process.exitCode = result.loaded && result.sameGreedyTokens ? 0 : 1;
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
