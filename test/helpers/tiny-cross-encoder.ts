/**
 * A random-weight BERT cross-encoder (BertForSequenceClassification, ms-marco-MiniLM's layout:
 * `bert.`-prefixed encoder keys, the pooler, a one-label classifier) written as an HF folder
 * (config.json + model.safetensors) with the real MiniLM tokenizer files from the fixtures.
 * Small sizes, so that a float64 reference in plain JS runs it in milliseconds.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fixture } from './fixtures';
import { mulberry32 } from './rng';

export interface TinyCrossEncoderOptions {
  hidden?: number;
  layers?: number;
  heads?: number;
  intermediate?: number;
  maxPositions?: number;
  seed?: number;
  /** config.json's extra keys (sentence_transformers.activation_fn, id2label, ...). */
  extraConfig?: Record<string, unknown>;
  /** Leave the pooler out of the checkpoint (a broken one). */
  dropPooler?: boolean;
  /** Rows of the classifier (default 1; id2label says as many labels). */
  numLabels?: number;
  /**
   * XLMRobertaForSequenceClassification instead (bge-reranker-v2-m3's layout): `roberta.` keys,
   * the head as classifier.dense / classifier.out_proj, positions from padding_idx + 1 (two
   * random rows stored in front of the table `tensors` holds), one token type, and the MiniLM
   * tokenizer.json with RoBERTa's pair post-processor (`[CLS] a [SEP] [SEP] b [SEP]`, types 0).
   */
  xlmRoberta?: boolean;
}

export interface TinyCrossEncoder {
  dir: string;
  /** Every tensor by canonical name (no `bert.` prefix), as float64 copies of the stored f32 values. */
  tensors: Map<string, { shape: number[]; data: Float64Array }>;
  config: { hidden: number; layers: number; heads: number; intermediate: number; vocab: number; maxPositions: number; typeVocab: number; eps: number };
}

const VOCAB = 30522; // the MiniLM tokenizer's

/** Writes the folder into `dir` (created if needed). */
export function writeTinyCrossEncoder(dir: string, o: TinyCrossEncoderOptions = {}): TinyCrossEncoder {
  const H = o.hidden ?? 32;
  const L = o.layers ?? 2;
  const heads = o.heads ?? 4;
  const I = o.intermediate ?? 64;
  const P = o.maxPositions ?? 64;
  const xlmr = o.xlmRoberta === true;
  const config = { hidden: H, layers: L, heads, intermediate: I, vocab: VOCAB, maxPositions: P, typeVocab: xlmr ? 1 : 2, eps: 1e-12 };
  const rand = mulberry32(o.seed ?? 1234);
  const tensors = new Map<string, { shape: number[]; data: Float64Array }>();
  const stored: { key: string; shape: number[]; data: Float32Array }[] = [];
  const add = (name: string, shape: number[], fill: () => number, key = `${xlmr ? 'roberta' : 'bert'}.${name}`) => {
    const data = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < data.length; i++) data[i] = fill();
    stored.push({ key, shape, data });
    tensors.set(name, { shape, data: Float64Array.from(data) });
  };
  const weight = (scale: number) => () => (rand() * 2 - 1) * scale;
  const gain = () => 1 + (rand() * 2 - 1) * 0.2;
  add('embeddings.word_embeddings.weight', [VOCAB, H], weight(1));
  add('embeddings.position_embeddings.weight', [P, H], weight(0.5));
  if (xlmr) {
    // Rows 0 and 1 (padding_idx + 1 = 2 is the first position): never read.
    const table = stored[stored.length - 1];
    const front = Float32Array.from({ length: 2 * H }, weight(3));
    table.data = Float32Array.from([...front, ...table.data]);
    table.shape = [P + 2, H];
  }
  add('embeddings.token_type_embeddings.weight', [config.typeVocab, H], weight(1));
  add('embeddings.LayerNorm.weight', [H], gain);
  add('embeddings.LayerNorm.bias', [H], weight(0.1));
  const linear = (name: string, out: number, inn: number) => {
    add(`${name}.weight`, [out, inn], weight(1.5 / Math.sqrt(inn)));
    add(`${name}.bias`, [out], weight(0.1));
  };
  const norm = (name: string) => {
    add(`${name}.weight`, [H], gain);
    add(`${name}.bias`, [H], weight(0.1));
  };
  for (let l = 0; l < L; l++) {
    const p = `encoder.layer.${l}.`;
    linear(`${p}attention.self.query`, H, H);
    linear(`${p}attention.self.key`, H, H);
    linear(`${p}attention.self.value`, H, H);
    linear(`${p}attention.output.dense`, H, H);
    norm(`${p}attention.output.LayerNorm`);
    linear(`${p}intermediate.dense`, I, H);
    linear(`${p}output.dense`, H, I);
    norm(`${p}output.LayerNorm`);
  }
  if (!o.dropPooler) linear('pooler.dense', H, H);
  const labels = o.numLabels ?? 1;
  add('classifier.weight', [labels, H], weight(2 / Math.sqrt(H)), 'classifier.weight');
  add('classifier.bias', [labels], weight(0.5), 'classifier.bias');
  if (xlmr) {
    for (const t of stored) {
      t.key = t.key.replace(/^roberta\.pooler\.dense\./, 'classifier.dense.').replace(/^classifier\.(weight|bias)$/, 'classifier.out_proj.$1');
    }
  }

  fs.mkdirSync(dir, { recursive: true });
  writeSafetensors(path.join(dir, 'model.safetensors'), stored);
  fs.writeFileSync(
    path.join(dir, 'config.json'),
    JSON.stringify(
      {
        architectures: [xlmr ? 'XLMRobertaForSequenceClassification' : 'BertForSequenceClassification'],
        model_type: xlmr ? 'xlm-roberta' : 'bert',
        ...(xlmr ? { pad_token_id: 1 } : {}),
        hidden_size: H,
        num_hidden_layers: L,
        num_attention_heads: heads,
        intermediate_size: I,
        vocab_size: VOCAB,
        max_position_embeddings: xlmr ? P + 2 : P,
        type_vocab_size: config.typeVocab,
        layer_norm_eps: config.eps,
        hidden_act: 'gelu',
        position_embedding_type: 'absolute',
        id2label: Object.fromEntries(Array.from({ length: labels }, (_, i) => [i, `LABEL_${i}`])),
        label2id: Object.fromEntries(Array.from({ length: labels }, (_, i) => [`LABEL_${i}`, i])),
        ...o.extraConfig,
      },
      null,
      2,
    ),
  );
  if (xlmr) {
    const tokenizer = JSON.parse(fs.readFileSync(fixture('tokenizers', 'minilm', 'tokenizer.json'), 'utf8'));
    tokenizer.post_processor = { type: 'RobertaProcessing', sep: ['[SEP]', 102], cls: ['[CLS]', 101], trim_offsets: true, add_prefix_space: false };
    fs.writeFileSync(path.join(dir, 'tokenizer.json'), JSON.stringify(tokenizer));
  } else {
    for (const name of ['tokenizer.json', 'vocab.txt']) fs.copyFileSync(fixture('tokenizers', 'minilm', name), path.join(dir, name));
  }
  return { dir, tensors, config };
}

/** safetensors: u64 header length, JSON header (space-padded to 8 bytes), raw little-endian f32 data. */
function writeSafetensors(file: string, tensors: { key: string; shape: number[]; data: Float32Array }[]): void {
  const header: Record<string, unknown> = { __metadata__: { format: 'pt' } };
  let offset = 0;
  for (const t of tensors) {
    header[t.key] = { dtype: 'F32', shape: t.shape, data_offsets: [offset, offset + t.data.byteLength] };
    offset += t.data.byteLength;
  }
  let json = JSON.stringify(header);
  json += ' '.repeat((8 - (Buffer.byteLength(json) % 8)) % 8);
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(Buffer.byteLength(json)));
  fs.writeFileSync(file, Buffer.concat([len, Buffer.from(json), ...tensors.map((t) => Buffer.from(t.data.buffer, t.data.byteOffset, t.data.byteLength))]));
}
