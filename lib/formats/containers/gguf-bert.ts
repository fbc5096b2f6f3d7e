/**
 * BERT in GGUF as llama.cpp writes and reads it (`general.architecture` "bert"; llama.cpp's
 * conversion/bert.py and src/models/bert.cpp): the tensor names, the `bert.*` keys, and the WPM
 * vocabulary in llama.cpp's "phantom space" form (a word-initial piece is `▁piece`, a `##piece`
 * continuation is `piece`, control tokens stay as they are).
 *
 * A cross-encoder is a BERT with `cls.output.weight` (the classifier, [labels, H]); `cls.weight`
 * is the pooler (dense + tanh on the [CLS] row). llama.cpp's converter drops HF's
 * `bert.pooler.dense`, so its BertForSequenceClassification GGUFs hold no `cls.weight` and run the
 * classifier on the [CLS] row itself (pooler: false here too: the file is run as it is); weightmap's
 * writer keeps the pooler as `cls.weight`, which llama.cpp applies when present. The labels are
 * `bert.classifier.output_labels`; `bert.pooling_type` 4 (RANK) marks a reranker, 1 (MEAN) / 2
 * (CLS) an embedder. GGUF records no activation: the encoder runs HF BERT's erf GELU (llama.cpp
 * uses ggml's tanh approximation).
 */
import { BERT_GGUF_ARCHITECTURE, BERT_NAMES, bertMaxSequence, isNomicBertGguf, type BertClassifierConfig, type BertConfig } from '../../architectures/bert';
import { UnsupportedError } from '../../base/errors';
import type { TokenizerData } from '../../addon/weights';
import { fail } from './bytes';

/** llama.cpp's pooling types (LLAMA_POOLING_TYPE_*). */
const POOLING_MEAN = 1;
const POOLING_CLS = 2;
const POOLING_RANK = 4;
/** llama.cpp's token types: NORMAL, CONTROL. */
const TOKEN_NORMAL = 1;
const TOKEN_CONTROL = 3;
const SPACE_MARK = '\u2581';

const GLOBAL: Record<string, string> = {
  token_embd: 'embeddings.word_embeddings',
  token_types: 'embeddings.token_type_embeddings',
  position_embd: 'embeddings.position_embeddings',
  token_embd_norm: 'embeddings.LayerNorm',
  cls: 'pooler.dense',
  'cls.output': 'classifier',
};

const LAYER: Record<string, string> = {
  attn_q: 'attention.self.query',
  attn_k: 'attention.self.key',
  attn_v: 'attention.self.value',
  attn_output: 'attention.output.dense',
  attn_output_norm: 'attention.output.LayerNorm',
  ffn_up: 'intermediate.dense',
  ffn_gate: 'intermediate.gate',
  attn_qkv: 'attention.self.qkv',
  ffn_down: 'output.dense',
  layer_output_norm: 'output.LayerNorm',
};

/** The canonical (HF) name of a llama.cpp BERT tensor, or undefined for one the encoder does not use. */
export function bertCanonicalName(gguf: string): string | undefined {
  const m = /^(?:blk\.(\d+)\.)?(.+)\.(weight|bias)$/.exec(gguf);
  if (!m) return undefined;
  const [, layer, base, kind] = m;
  const mapped = layer === undefined ? GLOBAL[base] : LAYER[base];
  if (mapped === undefined) return undefined;
  return layer === undefined ? `${mapped}.${kind}` : `encoder.layer.${layer}.${mapped}.${kind}`;
}

const GLOBAL_BACK = Object.fromEntries(Object.entries(GLOBAL).map(([k, v]) => [v, k]));
const LAYER_BACK = Object.fromEntries(Object.entries(LAYER).map(([k, v]) => [v, k]));

/** The llama.cpp name of a canonical BERT tensor; undefined for a name that is none (a GGUF's own extra tensor). */
export function bertGgufName(canonical: string): string | undefined {
  const layer = /^encoder\.layer\.(\d+)\.(.+)\.(weight|bias)$/.exec(canonical);
  if (layer && LAYER_BACK[layer[2]]) return `blk.${layer[1]}.${LAYER_BACK[layer[2]]}.${layer[3]}`;
  const global = /^(.+)\.(weight|bias)$/.exec(canonical);
  if (global && GLOBAL_BACK[global[1]]) return `${GLOBAL_BACK[global[1]]}.${global[2]}`;
  return undefined;
}

/** What the config reader needs of a GGUF's key/values (gguf.ts's Kv). */
export interface GgufKeys {
  has(key: string): boolean;
  int(key: string, fallback?: number, min?: number): number;
  float(key: string, fallback: number): number;
  value(key: string): unknown;
}

/**
 * The config of a llama.cpp BERT GGUF: a cross-encoder when it has `cls.output.weight`, else an
 * embedder. `shapeOf` gives a tensor's [rows, cols] by GGUF name.
 */
export function bertConfigFromGguf(kv: GgufKeys, shapeOf: (name: string) => number[] | undefined, path: string, arch = BERT_GGUF_ARCHITECTURE): BertConfig | BertClassifierConfig {
  const embed = shapeOf('token_embd.weight');
  if (!embed || embed.length !== 2) return fail('MISSING_TENSOR', 'the BERT model has no token_embd.weight matrix', { path, expected: 'token_embd.weight', found: 'absent' });
  const a = arch;
  const hiddenSize = kv.int(`${a}.embedding_length`);
  const types = shapeOf('token_types.weight');
  // nomic-bert: rotary positions (rope.freq_base) and a SwiGLU feed-forward (ffn_gate).
  const nomic = isNomicBertGguf(arch);
  const encoder = {
    ...(nomic ? { modelType: 'nomic-bert' as const, ropeTheta: kv.float(`${a}.rope.freq_base`, 10000) } : {}),
    hiddenSize,
    numLayers: kv.int(`${a}.block_count`),
    numHeads: kv.int(`${a}.attention.head_count`),
    intermediateSize: kv.int(`${a}.feed_forward_length`),
    vocabSize: embed[0],
    maxPositionEmbeddings: kv.int(`${a}.context_length`),
    typeVocabSize: kv.int('tokenizer.ggml.token_type_count', types?.[0] ?? 2),
    layerNormEps: kv.float(`${a}.attention.layer_norm_epsilon`, 1e-12),
    hiddenAct: nomic ? ('swiglu' as const) : ('gelu' as const),
  };
  if (hiddenSize % encoder.numHeads !== 0) fail('CONFIG_MISMATCH', `${a}.embedding_length is not a multiple of ${a}.attention.head_count`, { path, expected: `multiple of ${encoder.numHeads}`, found: hiddenSize });
  if (nomic && (hiddenSize / encoder.numHeads) % 2 !== 0) fail('CONFIG_MISMATCH', 'rotary positions need an even head size', { path, expected: 'even', found: hiddenSize / encoder.numHeads });
  const pooling = kv.has(`${a}.pooling_type`) ? kv.int(`${a}.pooling_type`, undefined, 0) : undefined;
  const head = shapeOf('cls.output.weight');
  if (head) {
    const raw = kv.value(`${a}.classifier.output_labels`);
    const numLabels = head[0];
    let labels = Array.from({ length: numLabels }, (_, i) => `LABEL_${i}`);
    if (raw !== undefined) {
      if (!Array.isArray(raw) || raw.length !== numLabels || !raw.every((l) => typeof l === 'string')) {
        fail('CONFIG_MISMATCH', "'bert.classifier.output_labels' does not name one label per row of cls.output.weight", { path, expected: numLabels, found: Array.isArray(raw) ? raw.length : typeof raw });
      }
      labels = raw as string[];
    }
    return { architecture: 'bert-classifier', ...encoder, maxSeqLength: encoder.maxPositionEmbeddings, numLabels, labels, pooler: shapeOf('cls.weight') !== undefined };
  }
  if (pooling === POOLING_RANK) return fail('MISSING_TENSOR', 'a rank-pooling BERT needs cls.output.weight', { path, expected: 'cls.output.weight', found: 'absent' });
  if (pooling !== undefined && pooling !== POOLING_MEAN && pooling !== POOLING_CLS) {
    return fail('UNSUPPORTED', `BERT pooling type ${pooling}`, { path, expected: `${POOLING_MEAN} (mean) or ${POOLING_CLS} (cls)`, found: pooling });
  }
  // Normalized as llama.cpp's embedding tools and llama-server's /v1/embeddings return them.
  return { architecture: 'bert', ...encoder, maxSeqLength: encoder.maxPositionEmbeddings, pooling: pooling === POOLING_CLS ? 'cls' : 'mean', normalize: true };
}

type GgufVocabulary = Extract<TokenizerData, { kind: 'gguf' }>;
type KvEntry = [key: string, type: string, value: unknown];

/** A WordPiece vocabulary in llama.cpp's form (model "bert"). */
export function bertGgufVocabulary(t: Extract<TokenizerData, { kind: 'wordpiece' }>): GgufVocabulary {
  const special = new Set(Object.values(t.specialIds));
  const tokens = t.tokens.map((tok, id) => (special.has(id) ? tok : tok.startsWith('##') ? tok.slice(2) : SPACE_MARK + tok));
  return {
    kind: 'gguf',
    model: 'bert',
    tokens,
    tokenTypes: Int32Array.from(t.tokens, (_, id) => (special.has(id) ? TOKEN_CONTROL : TOKEN_NORMAL)),
    unkId: t.specialIds.unk,
    padId: t.specialIds.pad,
    clsId: t.specialIds.cls,
    sepId: t.specialIds.sep,
    maskId: t.specialIds.mask,
  };
}

/** llama.cpp's BERT vocabulary back to WordPiece (for an HF folder's vocab.txt); undefined when it names no [UNK]/[CLS]/[SEP]. */
export function wordPieceFromGguf(t: GgufVocabulary): Extract<TokenizerData, { kind: 'wordpiece' }> | undefined {
  const control = (id: number, tok: string) => (t.tokenTypes ? t.tokenTypes[id] === TOKEN_CONTROL : tok.startsWith('[') && tok.endsWith(']'));
  const tokens = t.tokens.map((tok, id) => (control(id, tok) ? tok : tok.startsWith(SPACE_MARK) ? tok.slice(SPACE_MARK.length) : `##${tok}`));
  const named = (id: number | undefined, name: string) => id ?? (tokens.indexOf(name) >= 0 ? tokens.indexOf(name) : undefined);
  const ids = { pad: named(t.padId, '[PAD]'), unk: named(t.unkId, '[UNK]'), cls: named(t.clsId, '[CLS]'), sep: named(t.sepId, '[SEP]'), mask: named(t.maskId, '[MASK]') };
  if (ids.pad === undefined || ids.unk === undefined || ids.cls === undefined || ids.sep === undefined || ids.mask === undefined) return undefined;
  // llama.cpp's WPM tokenizer lower-cases (and strips accents), as uncased BERT vocabularies do.
  return { kind: 'wordpiece', tokens, specialIds: { pad: ids.pad, unk: ids.unk, cls: ids.cls, sep: ids.sep, mask: ids.mask }, doLowerCase: true };
}

/** The rows of a canonical tensor GGUF stores: XLM-RoBERTa's position table from row positionOffset; undefined for every other tensor (all rows). */
export function bertGgufPositionRows(c: BertConfig | BertClassifierConfig, canonical: string): { row0: number; rows: number } | undefined {
  if (!c.positionOffset || canonical !== BERT_NAMES.positionEmbeddings) return undefined;
  return { row0: c.positionOffset, rows: bertMaxSequence(c) };
}

/** The `bert.*` key/values of a config (llama.cpp's names), before the vocabulary's. */
export function bertGgufKvs(c: BertConfig | BertClassifierConfig, name: string): KvEntry[] {
  if (c.hiddenAct !== 'gelu') throw new UnsupportedError(`GGUF BERT runs erf GELU; this model uses ${c.hiddenAct}`);
  let pooling = POOLING_RANK;
  if ('pooling' in c) {
    if (c.pooling === 'max') throw new UnsupportedError('GGUF (llama.cpp) has no max pooling');
    pooling = c.pooling === 'cls' ? POOLING_CLS : POOLING_MEAN;
  }
  const out: KvEntry[] = [
    ['general.architecture', 'string', BERT_GGUF_ARCHITECTURE],
    ['general.name', 'string', name],
    // XLM-RoBERTa: the position table is written from row padding_idx + 1 (bertGgufPositionRows), as llama.cpp's converter cuts it.
    ['bert.context_length', 'u32', bertMaxSequence(c)],
    ['bert.embedding_length', 'u32', c.hiddenSize],
    ['bert.feed_forward_length', 'u32', c.intermediateSize],
    ['bert.block_count', 'u32', c.numLayers],
    ['bert.attention.head_count', 'u32', c.numHeads],
    ['bert.attention.layer_norm_epsilon', 'f32', c.layerNormEps],
    ['bert.attention.causal', 'bool', false],
    ['bert.pooling_type', 'u32', pooling],
    ['tokenizer.ggml.token_type_count', 'u32', c.typeVocabSize],
  ];
  if ('labels' in c) out.push(['bert.classifier.output_labels', 'array<string>', c.labels]);
  return out;
}
