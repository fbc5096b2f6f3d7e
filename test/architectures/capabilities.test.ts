/**
 * The registry capabilities that formats and loaders ask instead of comparing family names
 * (lib/architectures/index.ts), each checked through the code that asks it: sentenceTransformers
 * (hf-config.ts reads a folder's sentence-transformers files), modelClass and quantizesOnLoad
 * (loadModel), defaultChatTemplate (a Qwen3 model that brings no template). ggufEncoder (gguf-writer.ts: llama.cpp's BERT layout) is checked by
 * test/embeddings/reranker-gguf.test.ts.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ARCHITECTURES } from '../../lib/architectures';
import { readHfFolderConfig } from '../../lib/formats/containers/hf-config';
import type { BertConfig } from '../../lib/architectures/bert';
import { loadModel } from '../../lib/models/model';
import { UnsupportedError } from '../../lib/base/errors';
import { writeTinyCrossEncoder } from '../helpers/tiny-cross-encoder';
import { fixture, tempDir } from '../helpers/fixtures';

const BERT_JSON = {
  hidden_size: 32, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 64, vocab_size: 50,
  max_position_embeddings: 64, type_vocab_size: 2, layer_norm_eps: 1e-12, hidden_act: 'gelu', position_embedding_type: 'absolute',
};

function writeFolder(dir: string, classes: string[], pooling: string): void {
  const json = (name: string, value: unknown) => {
    fs.mkdirSync(path.dirname(path.join(dir, name)), { recursive: true });
    fs.writeFileSync(path.join(dir, name), typeof value === 'string' ? value : JSON.stringify(value));
  };
  json('config.json', { architectures: classes, model_type: 'bert', ...BERT_JSON });
  json('modules.json', [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
  ]);
  json(path.join('1_Pooling', 'config.json'), pooling);
}

test('a BERT embedder reads its sentence-transformers pooling; a cross-encoder reads none of those files', () => {
  const { dir, cleanup } = tempDir('wm-capabilities-');
  try {
    const embedder = path.join(dir, 'embedder');
    writeFolder(embedder, ['BertModel'], JSON.stringify({ word_embedding_dimension: 32, pooling_mode_cls_token: true }));
    // Without the files a BERT reads as mean pooling (bert/config-json.ts): cls proves they were read.
    expect((readHfFolderConfig(embedder)!.config as BertConfig).pooling).toBe('cls');

    const reranker = path.join(dir, 'reranker');
    writeFolder(reranker, ['BertForSequenceClassification'], '{ not json');
    // Read, the broken pooling file would be a BAD_HEADER error.
    expect(readHfFolderConfig(reranker)!.config.architecture).toBe('bert-classifier');
    writeFolder(embedder, ['BertModel'], '{ not json');
    expect(() => readHfFolderConfig(embedder)).toThrow(expect.objectContaining({ code: 'BAD_HEADER' }));
  } finally {
    cleanup();
  }
});

test('loadModel sends an embedder and a cross-encoder to their own loaders (modelClass), and a quant to the decoder engine alone (quantizesOnLoad)', async () => {
  await expect(loadModel(fixture('embd-minilm-tiny', 'model.weights'))).rejects.toThrow(/BERT embedding model: load it with loadEmbedder\(\)/);
  const { dir, cleanup } = tempDir('wm-capabilities-');
  try {
    const ce = writeTinyCrossEncoder(path.join(dir, 'ce'), { seed: 3 });
    await expect(loadModel(ce.dir)).rejects.toThrow(/cross-encoder: load it with loadReranker\(\)/);
  } finally {
    cleanup();
  }
  await expect(loadModel(fixture('tllm-tiny', 'model.tllm'), { quant: 'q8_0' })).rejects.toThrow(UnsupportedError);
  await expect(loadModel(fixture('tllm-tiny', 'model.tllm'), { quant: 'q8_0' })).rejects.toThrow(/the tllm engine has no quant option/);
});

test("a Qwen3 model that brings no chat template renders with Qwen3's (defaultChatTemplate), as qwen3.c's export writes it", async () => {
  const { dir, cleanup } = tempDir('wm-capabilities-');
  try {
    // The ajc1 fixture without its .template sidecars: weights and tokenizer only.
    for (const f of ['model.bin', 'model.bin.tokenizer']) fs.copyFileSync(fixture('ajc1-qwen3-tiny', f), path.join(dir, f));
    const model = await loadModel(path.join(dir, 'model.bin'), { threads: 1 });
    try {
      const exported = fs.readFileSync(fixture('ajc1-qwen3-tiny', 'model.bin.template'), 'utf8');
      expect(model.renderChat([{ role: 'user', content: 'Why is the sky blue?' }])).toBe(exported.replace('%s', 'Why is the sky blue?'));
    } finally {
      model.dispose();
    }
  } finally {
    cleanup();
  }
});
