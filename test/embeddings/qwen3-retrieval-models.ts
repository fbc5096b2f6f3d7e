/**
 * Tiny random-weight Qwen3-Embedding and Qwen3-Reranker models (the real Qwen3 tokenizer of
 * ../shared/fixtures, 151,936 ids; QK-norm, GQA, a tied head as Qwen3-0.6B's), made into a test's
 * folder from one seeded checkpoint:
 *   - the GGUFs llama.cpp's converter writes for them (scripts/interop/qwen3-retrieval-gguf.py,
 *     llama.cpp's own gguf-py, from the plain qwen3 GGUF weightmap converts the checkpoint to):
 *     pooling_type LAST with EOS appended, its Q8_0 form, and pooling_type RANK with the yes/no rows
 *     as cls.output.weight;
 *   - the HF folders: the embedder as sentence-transformers lays out Qwen3-Embedding (modules.json,
 *     1_Pooling/config.json with pooling_mode_lasttoken, 2_Normalize, config_sentence_transformers.json
 *     prompts, tokenizer.json whose post-processor appends <|endoftext|>), the reranker as
 *     Qwen3-Reranker's (a plain Qwen3ForCausalLM whose README says what it is).
 * `retrievalUsable` says whether gguf-py and python3 with numpy are there (the GGUFs need them).
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { fixture } from '../helpers/fixtures';
import { LLAMA_CPP } from '../engines/gptoss-models';
import { tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';

export const retrievalUsable = fs.existsSync(path.join(LLAMA_CPP, 'gguf-py', 'gguf', 'quants.py')) && spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;

export const QWEN3_TINY = {
  architectures: ['Qwen3ForCausalLM'],
  model_type: 'qwen3',
  hidden_size: 64,
  intermediate_size: 128,
  num_hidden_layers: 2,
  num_attention_heads: 4,
  num_key_value_heads: 2,
  head_dim: 16,
  vocab_size: 151936,
  max_position_embeddings: 1024,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  hidden_act: 'silu',
  attention_bias: false,
  tie_word_embeddings: true,
  bos_token_id: 151643,
  eos_token_id: 151645,
};
export const SEED = 61;
const EMBED_SCALE = 0.15;

/** The model card's default retrieval instruction (Qwen3-Embedding's `query` prompt, Qwen3-Reranker's default). */
export const WEB_SEARCH = 'Given a web search query, retrieve relevant passages that answer the query';

export interface RetrievalModels {
  /** The checkpoint as a plain Qwen3ForCausalLM folder with the fixture's tokenizer files. */
  lm: string;
  embedderFolder: string;
  rerankerFolder: string;
  /** The GGUFs (absent without gguf-py). */
  embedderGguf?: string;
  embedderQ8?: string;
  rerankerGguf?: string;
}

const QWEN3_TOKENIZER = ['vocab.json', 'merges.txt', 'tokenizer_config.json'];

/** Writes every form into `dir` (created). */
export async function retrievalModels(dir: string): Promise<RetrievalModels> {
  fs.mkdirSync(dir, { recursive: true });
  const tokenizerFiles = Object.fromEntries(QWEN3_TOKENIZER.map((f) => [f, fs.readFileSync(fixture('tokenizers', 'qwen3', f), 'utf8')]));
  const model = tinyDecoder(QWEN3_TINY, SEED);
  // The tied head's logits (and the yes/no difference) a few units wide, not tens: P(yes) away from 0 and 1.
  const embed = model.weights.get('model.embed_tokens.weight')!;
  for (let i = 0; i < embed.length; i++) embed[i] *= EMBED_SCALE;
  const lm = writeHfFolder(model, path.join(dir, 'qwen3-lm'), tokenizerFiles);

  const rerankerFolder = writeHfFolder(model, path.join(dir, 'reranker-hf'), {
    ...tokenizerFiles,
    'README.md': '---\nlicense: apache-2.0\n---\n# Qwen3-Reranker-tiny\n\nA random-weight model of Qwen3-Reranker-0.6B\'s layout.\n',
  });

  const embedderFolder = writeHfFolder(model, path.join(dir, 'embedder-hf'), {
    ...tokenizerFiles,
    'tokenizer.json': JSON.stringify(await qwen3EmbeddingTokenizerJson(lm, dir)),
    'modules.json': JSON.stringify([
      { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
      { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
      { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
    ]),
    'config_sentence_transformers.json': JSON.stringify({ prompts: { query: `Instruct: ${WEB_SEARCH}\nQuery:`, document: '' }, default_prompt_name: null, similarity_fn_name: 'cosine' }),
  });
  fs.mkdirSync(path.join(embedderFolder, '1_Pooling'));
  fs.writeFileSync(path.join(embedderFolder, '1_Pooling', 'config.json'), JSON.stringify({
    word_embedding_dimension: QWEN3_TINY.hidden_size, pooling_mode_cls_token: false, pooling_mode_mean_tokens: false, pooling_mode_max_tokens: false,
    pooling_mode_mean_sqrt_len_tokens: false, pooling_mode_weightedmean_tokens: false, pooling_mode_lasttoken: true, include_prompt: true,
  }));
  fs.mkdirSync(path.join(embedderFolder, '2_Normalize'));

  if (!retrievalUsable) return { lm, embedderFolder, rerankerFolder };
  const plain = path.join(dir, 'qwen3-lm.gguf');
  await convert(lm, plain, { to: 'gguf' });
  const run = spawnSync('python3', [path.join(__dirname, '..', '..', 'scripts', 'interop', 'qwen3-retrieval-gguf.py'), LLAMA_CPP, plain, dir], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`qwen3-retrieval-gguf.py failed: ${run.stderr}`);
  return {
    lm,
    embedderFolder,
    rerankerFolder,
    embedderGguf: path.join(dir, 'qwen3-embedding.gguf'),
    embedderQ8: path.join(dir, 'qwen3-embedding-q8_0.gguf'),
    rerankerGguf: path.join(dir, 'qwen3-reranker.gguf'),
  };
}

/**
 * The fixture's vocabulary as a tokenizer.json (weightmap's GGUF writer and its HF tokenizer
 * writer), with Qwen3-Embedding's post-processor: `$A <|endoftext|>`.
 */
async function qwen3EmbeddingTokenizerJson(lm: string, dir: string): Promise<Record<string, unknown>> {
  const gguf = path.join(dir, 'vocab-only.gguf');
  const back = path.join(dir, 'vocab-only-hf');
  await convert(lm, gguf, { to: 'gguf' });
  fs.mkdirSync(back);
  await convert(gguf, back, { to: 'safetensors' });
  const json = JSON.parse(fs.readFileSync(path.join(back, 'tokenizer.json'), 'utf8')) as Record<string, unknown>;
  fs.rmSync(gguf);
  fs.rmSync(back, { recursive: true });
  const eos = '<|endoftext|>';
  const byteLevel = json.post_processor;
  json.post_processor = {
    type: 'Sequence',
    processors: [
      byteLevel,
      {
        type: 'TemplateProcessing',
        single: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: eos, type_id: 0 } }],
        pair: [{ Sequence: { id: 'A', type_id: 0 } }, { SpecialToken: { id: eos, type_id: 0 } }, { Sequence: { id: 'B', type_id: 1 } }, { SpecialToken: { id: eos, type_id: 1 } }],
        special_tokens: { [eos]: { id: eos, ids: [151643], tokens: [eos] } },
      },
    ],
  };
  return json;
}
