#!/usr/bin/env node
/**
 * Regenerates the llama.cpp reference values of test/embeddings/qwen3-retrieval.test.ts (REFERENCE)
 * and test/embeddings/embeddinggemma.test.ts (LLAMA_CPP_VECTORS): runs those tests with
 * WEIGHTMAP_RETRIEVAL_MODELS=<temp dir> (they leave there the GGUFs they make,
 * test/embeddings/qwen3-retrieval-models.ts and scripts/interop/embeddinggemma-gguf.py, with the
 * token ids they embed and rank: inputs.json, embeddinggemma.json),
 * then runs llama.cpp on the same files and ids through node-llama-cpp (its prebuilt CPU build,
 * installed in the peer cache as scripts/bench/peers/cache.js says; not a dependency):
 * (f32 KV caches, no flash attention: llama.cpp's exact path)
 *   - LlamaEmbeddingContext on qwen3-embedding.gguf and qwen3-embedding-q8_0.gguf (pooling LAST:
 *     the final-norm hidden state of the last token), each vector L2-normalized;
 *   - LlamaRankingContext's evaluation of each reranker prompt's ids on qwen3-reranker.gguf
 *     (pooling RANK: softmax over the yes/no rows at the last token, P(yes)), and whether
 *     llama.cpp's own tokenization of the file's rerank template with the default instruction
 *     gives the ids the test ranks.
 *   - LlamaEmbeddingContext on embeddinggemma.gguf (gemma-embedding: bidirectional, pooling MEAN,
 *     dense_2 and dense_3), each vector L2-normalized.
 * Prints the two tests' tables.
 *
 *   node scripts/interop/retrieval-references.mjs
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import { createRequire } from 'node:module';
import * as os from 'node:os';
import * as path from 'node:path';
import { fileURLToPath } from 'node:url';

const require = createRequire(import.meta.url);
const root = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');
const { nodeLlamaCpp } = require('../bench/peers/cache');
const TESTS = ['test/embeddings/qwen3-retrieval.test.ts', 'test/embeddings/embeddinggemma.test.ts'];

const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'weightmap-retrieval-'));
try {
  for (const test of TESTS) {
    try {
      execFileSync('npx', ['jest', test], { cwd: root, env: { ...process.env, WEIGHTMAP_RETRIEVAL_MODELS: dir }, stdio: 'ignore' });
    } catch {
      // A test fails while its tables are stale; the files are written before it compares.
    }
  }
  const inputs = JSON.parse(fs.readFileSync(path.join(dir, 'inputs.json'), 'utf8'));
  const { entry, version } = nodeLlamaCpp();
  const { getLlama, LlamaEmbeddingContext, LlamaRankingContext } = await import(entry);
  // The contexts of createEmbeddingContext / createRankingContext, with an f32 KV cache and no
  // flash attention (llama.cpp's exact path; the defaults store keys and values as f16).
  const exact = { contextSize: 512, batchSize: 512, threads: 1, flashAttention: false, experimentalKvCacheKeyType: 'F32', experimentalKvCacheValueType: 'F32', _embeddings: true };
  const llama = await getLlama({ gpu: false, build: 'never', logLevel: 'error' });
  const round = (x) => Number(x.toPrecision(7));
  const normalized = (v) => {
    const n = Math.sqrt(v.reduce((s, x) => s + x * x, 0));
    return v.map((x) => x / n);
  };

  const embed = async (file, sequences = inputs.embed) => {
    const model = await llama.loadModel({ modelPath: file });
    const context = new LlamaEmbeddingContext({ _llamaContext: await model.createContext(exact) });
    const vectors = [];
    for (const ids of sequences) vectors.push(normalized(Array.from((await context.getEmbeddingFor(ids)).vector)));
    await context.dispose();
    await model.dispose();
    return vectors.map((v) => v.map(round));
  };
  const reference = { 'node-llama-cpp': version, f32: await embed(path.join(dir, 'qwen3-embedding.gguf')), q8_0: await embed(path.join(dir, 'qwen3-embedding-q8_0.gguf')) };

  const model = await llama.loadModel({ modelPath: path.join(dir, 'qwen3-reranker.gguf') });
  const ranking = new LlamaRankingContext({ _llamaContext: await model.createContext({ ...exact, _ranking: true }), _template: undefined });
  reference.rank = [];
  for (const ids of inputs.rank) reference.rank.push(round(await ranking._evaluateRankingForInput(ids)));
  // llama.cpp's own prompt: the file's rerank template with {query} and {document} (examples/embedding/embedding.cpp), tokenized with special tokens.
  const template = model.fileInfo.metadata.tokenizer['chat_template.rerank'];
  const own = inputs.pairs.map(([query, document]) => Array.from(model.tokenize(template.replaceAll('{query}', query).replaceAll('{document}', document), true)));
  const same = own.every((ids, i) => ids.length === inputs.rank[i].length && ids.every((id, j) => id === inputs.rank[i][j]));
  await ranking.dispose();
  await model.dispose();
  console.log(`llama.cpp's tokenization of its rerank template ${same ? 'equals' : 'DIFFERS from'} the test's prompts`);
  console.log(JSON.stringify(reference));
  const gemma = JSON.parse(fs.readFileSync(path.join(dir, 'embeddinggemma.json'), 'utf8'));
  console.log(JSON.stringify({ embeddinggemma: await embed(path.join(dir, 'embeddinggemma.gguf'), gemma.embed) }));
} finally {
  fs.rmSync(dir, { recursive: true, force: true });
}
