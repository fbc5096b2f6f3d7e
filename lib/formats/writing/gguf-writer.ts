/**
 * Writing GGUF v3 (FORMATS.md §7, "W optional").
 *
 * Weights read from a GGUF file are written back with their own key/values (in order, with the
 * value types recorded in metadata['gguf.types']) and every tensor, including those of types
 * weightmap cannot use (copied as raw blocks): reading a GGUF file and writing it again gives the
 * same bytes when nothing was converted. Weights from other formats must be a BERT embedder or
 * cross-encoder (llama.cpp's layout, gguf-bert.ts) or a decoder whose fields the keys hold (Llama, Qwen3, Mistral, Gemma 3,
 * Qwen3-MoE; gpt-oss with its biases, sinks and YaRN keys, DecoderVariant.ggufHolds): the `llama.*` / `qwen3.*` / `gemma3.*` keys are derived from the config
 * (Mistral as llama.cpp converts it: `llama`, plus `llama.attention.sliding_window`), q/k rows are
 * put in the order llama.cpp expects (Meta 'interleaved' for llama, 'half' for qwen3 and gemma3),
 * Gemma's norm weights w are stored as 1 + w as llama.cpp's converter does, and the source's
 * vocabulary becomes `tokenizer.ggml.*` (vocab-convert.ts: a llama2.c one as model "llama", an
 * ajc1 or HF byte-level BPE one as model "gpt2" with its merges, a byte-fallback BPE one (Gemma 3)
 * as model "llama" with scores from its merge ranks) with its Jinja chat template as
 * `tokenizer.chat_template`.
 *
 * Tensor types: F32, F16, BF16 as stored, ggml block types copied, llama2.c/ajc1 q8_0 dequantized to
 * F32; options.dtype converts every float matrix (rank ≥ 2; vectors stay F32, as llama.cpp keeps them).
 * options.quant 'q8_0' writes ggml Q8_0 (ggml-q8.ts) for the tensors llama-quantize quantizes in a
 * Q8_0 file (token embedding and output included; norms and vectors stay as stored), F16 for those
 * whose rows are no whole number of 32-element blocks (llama-quantize's fallback), and records
 * `general.file_type` 7 (LLAMA_FTYPE_MOSTLY_Q8_0) and `general.quantization_version` 2. Float
 * sources are quantized directly; ajc1/llama2.c q8_0 (own group size and float32 scales) is
 * re-quantized from its dequantized float32 values (with groups of 32 this gives back the stored
 * int8 values, their scales rounded to f16); ggml block tensors of a GGUF source are copied.
 * Tensors start at multiples of the alignment (32, or the source's general.alignment), padded with
 * zeros; the file ends with the last tensor.
 */
import { rangeError, UnsupportedError } from '../../base/errors';
import { numel, rowBlockView, type ModelWeights, type TensorView, type TokenizerData } from '../../addon/weights';
import type { FloatDType } from '../quantization/dtype-convert';
import { DECODER_VARIANTS, decoderFusedTensors, EXPERT_FIELDS, expertStacks, expertStackShape, isDecoderConfig, SCALAR_FIELDS, unheldFields, variantNames, variantScalars, type DecoderConfig, type DecoderVariant } from '../../architectures/decoder';
import { decodeVocabularySteps } from '../../tokenizers/deferred-vocabulary';
import { architectureOf } from '../../architectures';
import type { BertClassifierConfig, BertConfig } from '../../architectures/bert';
import { bertGgufKvs, bertGgufName, bertGgufPositionRows, bertGgufVocabulary } from '../containers/gguf-bert';
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { readJsonFile, type HfJson } from '../containers/hf-config';
import { hfSideFolder } from '../vocabulary/ajc1-sidecars';
import { ugmVocabularyFromHfFolder } from '../vocabulary/ugm-vocab';
import { GGUF_DEFAULT_ALIGNMENT, GGUF_MAGIC, ggmlBlockTypeId, ggufTensorName } from '../containers/gguf';
import { GGML_Q8_0_TYPE, GGML_Q8_BLOCK, GGML_Q8_BLOCK_BYTES, ggmlQ8Chunks, llamaCppQuantizes } from '../quantization/ggml-q8';
import { permutedRowChunks, qkRowSources } from './rope-order';
import { canonicalShape, f32Chunks, isFloatReadable, rawChunks, releasePages } from '../quantization/tensor-data';
import type { WriteOptions } from '../types';
import { writeOutputs } from './output-files';
import { ggufVocabulary, jinjaChatTemplateOf } from '../vocabulary/vocab-convert';
import { ggufVocabularyOffThread, isEncodedStrings, type EncodedGgufVocabulary, type EncodedStrings } from '../vocabulary/vocab-offload';
import { runWriteJob } from './write-job';
import { runNow, runYielding, type Steps } from '../../base/steps';

const TYPE_CODES: Readonly<Record<string, number>> = {
  u8: 0, i8: 1, u16: 2, i16: 3, u32: 4, i32: 5, f32: 6, bool: 7, string: 8, array: 9, u64: 10, i64: 11, f64: 12,
};

type KvEntry = [key: string, type: string, value: unknown];

function u64(n: number | bigint): Buffer {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
}

function u32(n: number): Buffer {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n >>> 0);
  return b;
}

function encodeString(s: string): Buffer {
  const b = Buffer.from(s, 'utf8');
  return Buffer.concat([u64(b.length), b]);
}

/** The GGUF type name of an array element value (for nested arrays, whose element types are not recorded). */
function typeOfValue(v: unknown): string {
  if (v instanceof Uint8Array && !Buffer.isBuffer(v)) return 'array<u8>';
  if (v instanceof Int8Array) return 'array<i8>';
  if (v instanceof Uint16Array) return 'array<u16>';
  if (v instanceof Int16Array) return 'array<i16>';
  if (v instanceof Uint32Array) return 'array<u32>';
  if (v instanceof Int32Array) return 'array<i32>';
  if (v instanceof Float32Array) return 'array<f32>';
  if (v instanceof Float64Array) return 'array<f64>';
  if (v instanceof BigUint64Array) return 'array<u64>';
  if (v instanceof BigInt64Array) return 'array<i64>';
  if (Array.isArray(v)) {
    if (v.length === 0 || typeof v[0] === 'string') return 'array<string>';
    if (typeof v[0] === 'boolean') return 'array<bool>';
    return 'array<array>';
  }
  if (typeof v === 'string') return 'string';
  if (typeof v === 'boolean') return 'bool';
  throw rangeError(`cannot encode ${typeof v} as a GGUF value`);
}

function encodeScalar(type: string, v: unknown): Buffer {
  const b = Buffer.alloc(8);
  switch (type) {
    case 'u8': b.writeUInt8(v as number); return b.subarray(0, 1);
    case 'i8': b.writeInt8(v as number); return b.subarray(0, 1);
    case 'u16': b.writeUInt16LE(v as number); return b.subarray(0, 2);
    case 'i16': b.writeInt16LE(v as number); return b.subarray(0, 2);
    case 'u32': b.writeUInt32LE(v as number); return b.subarray(0, 4);
    case 'i32': b.writeInt32LE(v as number); return b.subarray(0, 4);
    case 'f32': b.writeFloatLE(v as number); return b.subarray(0, 4);
    case 'f64': b.writeDoubleLE(v as number); return b;
    case 'u64': b.writeBigUInt64LE(BigInt(v as number | bigint)); return b;
    case 'i64': b.writeBigInt64LE(BigInt(v as number | bigint)); return b;
    case 'bool': return Buffer.from([v ? 1 : 0]);
    case 'string': return encodeString(v as string);
    default: throw rangeError(`unknown GGUF value type '${type}'`);
  }
}

/** The payload of a value of `type` (no type code). */
function encodeValue(type: string, v: unknown): Buffer {
  const m = /^array<(.+)>$/.exec(type);
  if (!m) return encodeScalar(type, v);
  const elem = m[1];
  if (elem === 'string') return runNow(encodeStringArraySteps(v as string[]));
  if (ArrayBuffer.isView(v) && !(v instanceof DataView)) {
    // Typed arrays are little-endian on every platform Node runs on: copy their bytes.
    const view = v as unknown as ArrayBufferView & { length: number };
    return Buffer.concat([u32(TYPE_CODES[elem]), u64(view.length), Buffer.from(view.buffer, view.byteOffset, view.byteLength)]);
  }
  const items = v as unknown[];
  if (elem === 'array') {
    // Element type ARRAY, count, then each element as its own (element type, count, items).
    return Buffer.concat([u32(TYPE_CODES.array), u64(items.length), ...items.map((item) => encodeValue(typeOfValue(item), item))]);
  }
  return Buffer.concat([u32(TYPE_CODES[elem]), u64(items.length), ...items.map((x) => encodeScalar(elem, x))]);
}

/** Strings encoded between two checkpoints of encodeStringArraySteps (well under a millisecond; see steps.ts). */
const STRINGS_STEP = 2048;

/**
 * An array of strings into one buffer (vocabularies hold 10^5 tokens and merges: no Buffer per
 * string), in slices (steps.ts).
 */
function* encodeStringArraySteps(items: readonly string[]): Steps<Buffer> {
  let size = 12;
  for (let i = 0; i < items.length; i++) {
    if (i % STRINGS_STEP === STRINGS_STEP - 1) yield;
    size += 8 + Buffer.byteLength(items[i], 'utf8');
  }
  const out = Buffer.allocUnsafe(size);
  out.writeUInt32LE(TYPE_CODES.string, 0);
  out.writeBigUInt64LE(BigInt(items.length), 4);
  let at = 12;
  for (let i = 0; i < items.length; i++) {
    if (i % STRINGS_STEP === STRINGS_STEP - 1) yield;
    const n = out.write(items[i], at + 8, 'utf8');
    out.writeUInt32LE(n, at);
    out.writeUInt32LE(0, at + 4);
    at += 8 + n;
  }
  return out;
}

/** One key/value; a long string array (a vocabulary, its merges) in slices (steps.ts). */
function* encodeKvSteps([key, type, value]: KvEntry): Steps<Buffer> {
  const top = type.startsWith('array<') ? 'array' : type;
  const code = TYPE_CODES[top];
  if (code === undefined) throw rangeError(`unknown GGUF value type '${type}' for '${key}'`);
  const payload = isEncodedStrings(value) ? value.payload : type === 'array<string>' ? yield* encodeStringArraySteps(value as string[]) : encodeValue(type, value);
  // encodeValue of an array starts with its element type: exactly what follows the ARRAY code.
  return Buffer.concat([encodeString(key), u32(code), payload]);
}

// ---------------------------------------------------------------------------------------------
// Key/values

/** The key/values of a GGUF source, as read (our 'gguf.*' bookkeeping keys left out). */
function sourceKvs(weights: ModelWeights): KvEntry[] {
  const types = weights.metadata['gguf.types'] as Record<string, string>;
  return Object.keys(types).map((key) => [key, types[key], weights.metadata[key]] as KvEntry);
}

/**
 * A vocabulary with its string arrays encoded as the writer stores them (the tokenizer worker
 * makes this, vocab-offload.ts).
 */
export function encodeGgufVocabulary(t: Extract<TokenizerData, { kind: 'gguf' }>): EncodedGgufVocabulary {
  const encoded = (items: readonly string[]): EncodedStrings => ({ encodedCount: items.length, payload: runNow(encodeStringArraySteps(items)) });
  return { ...t, tokens: encoded(t.tokens), merges: t.merges && encoded(t.merges) };
}

/**
 * llama.cpp ends generation on EOS, EOT and EOM (and tokens it knows by their text): an HF
 * config's EOS ids beyond the tokenizer's EOS (Gemma 3's <eos> beside <end_of_turn>, Llama 3.1's
 * <|end_of_text|> and <|eom_id|> beside <|eot_id|>) go to eot_token_id, then eom_token_id.
 */
function stopKvs(t: { eosId?: number; tokens: { length: number } | EncodedStrings }, stops: readonly number[] | undefined): KvEntry[] {
  const count = 'encodedCount' in t.tokens ? t.tokens.encodedCount : t.tokens.length;
  const extra = [...new Set(stops ?? [])].filter((id) => id !== t.eosId && id >= 0 && id < count);
  if (extra.length > 2) throw new UnsupportedError(`GGUF holds three ids that end generation (eos, eot, eom), not ${[t.eosId, ...extra].join(', ')}`);
  if (t.eosId === undefined && extra.length > 0) throw new UnsupportedError(`the config names EOS ids ${extra.join(', ')} but the vocabulary has no EOS token`);
  return extra.map((id, i): KvEntry => [`tokenizer.ggml.${i === 0 ? 'eot' : 'eom'}_token_id`, 'u32', id]);
}

function vocabularyKvs(t: Extract<TokenizerData, { kind: 'gguf' }> | EncodedGgufVocabulary | undefined, chatTemplate: string | undefined, stops: readonly number[] | undefined): KvEntry[] {
  if (!t) return [];
  const out: KvEntry[] = [['tokenizer.ggml.model', 'string', t.model]];
  if (t.pre !== undefined) out.push(['tokenizer.ggml.pre', 'string', t.pre]);
  out.push(['tokenizer.ggml.tokens', 'array<string>', t.tokens]);
  if (t.scores) out.push(['tokenizer.ggml.scores', 'array<f32>', t.scores]);
  if (t.tokenTypes) out.push(['tokenizer.ggml.token_type', 'array<i32>', t.tokenTypes]);
  if (t.merges) out.push(['tokenizer.ggml.merges', 'array<string>', t.merges]);
  const ids: [string, number | undefined][] = [
    ['bos_token_id', t.bosId], ['eos_token_id', t.eosId], ['unknown_token_id', t.unkId], ['padding_token_id', t.padId],
    ['cls_token_id', t.clsId], ['seperator_token_id', t.sepId], ['mask_token_id', t.maskId], // llama.cpp's spelling
  ];
  for (const [k, v] of ids) if (v !== undefined) out.push([`tokenizer.ggml.${k}`, 'u32', v]);
  out.push(...stopKvs(t, stops));
  if (t.addBos !== undefined) out.push(['tokenizer.ggml.add_bos_token', 'bool', t.addBos]);
  if (t.addEos !== undefined) out.push(['tokenizer.ggml.add_eos_token', 'bool', t.addEos]);
  if (t.addSpacePrefix !== undefined) out.push(['tokenizer.ggml.add_space_prefix', 'bool', t.addSpacePrefix]);
  if (t.removeExtraWhitespaces !== undefined) out.push(['tokenizer.ggml.remove_extra_whitespaces', 'bool', t.removeExtraWhitespaces]);
  if (t.precompiledCharsmap) out.push(['tokenizer.ggml.precompiled_charsmap', 'array<u8>', t.precompiledCharsmap]);
  if (chatTemplate !== undefined) out.push(['tokenizer.chat_template', 'string', chatTemplate]);
  return out;
}

/** The decoder fields beyond Llama's written from other formats (the keys below; no rope_freqs), less a variant's own (DecoderVariant.ggufHolds). */
const GGUF_WRITER_HOLDS = [
  'qkNorm', 'slidingWindow', 'slidingWindowPattern', 'ropeLocalTheta', 'sandwichNorms', 'activation', 'embeddingScale',
  'queryPreAttnScalar', 'normWeightOffset', 'noRopeLayerInterval', 'ropeDim', ...SCALAR_FIELDS, ...EXPERT_FIELDS,
];

/** The sliding window (Mistral's, which llama.cpp ignores; Gemma 3's, whose pattern and local RoPE base are its family's keys). */
function slidingWindowKvs(c: DecoderConfig, a: string): KvEntry[] {
  return c.slidingWindow === undefined ? [] : [[`${a}.attention.sliding_window`, 'u32', c.slidingWindow]];
}

/** The source's vocabulary for GGUF: converted and encoded in the worker where one is registered, else here. */
async function vocabularyOf(weights: ModelWeights, vocabSize: number): Promise<Extract<TokenizerData, { kind: 'gguf' }> | EncodedGgufVocabulary | undefined> {
  const encoded = await ggufVocabularyOffThread(weights, vocabSize);
  return encoded === 'here' ? ggufVocabulary(weights, vocabSize) : encoded;
}

/** A BERT embedder's or cross-encoder's keys (gguf-bert.ts) and its WordPiece vocabulary in llama.cpp's form. */
function bertKvs(weights: ModelWeights): KvEntry[] {
  const c = weights.config as BertConfig | BertClassifierConfig;
  const t = weights.tokenizer;
  if (c.modelType === 'xlm-roberta') return [...bertGgufKvs(c, nodePath.basename(weights.path).replace(/\.[^.]*$/, '') || 'bert'), ...vocabularyKvs(xlmRobertaVocabulary(weights), undefined, undefined)];
  const vocabulary = t?.kind === 'wordpiece' ? bertGgufVocabulary(t) : t?.kind === 'gguf' && t.model === 'bert' ? t : undefined;
  if (t && !vocabulary) throw new UnsupportedError(`GGUF BERT holds a WordPiece vocabulary, not a ${t.kind} one`);
  return [...bertGgufKvs(c, nodePath.basename(weights.path).replace(/\.[^.]*$/, '') || 'bert'), ...vocabularyKvs(vocabulary, undefined, undefined)];
}

/** An XLM-RoBERTa's UGM vocabulary: a GGUF source's own, else its HF folder's Unigram tokenizer.json as llama.cpp converts it (ugm-vocab.ts). */
function xlmRobertaVocabulary(weights: ModelWeights): Extract<TokenizerData, { kind: 'gguf' }> {
  const t = weights.tokenizer;
  if (t?.kind === 'gguf' && t.model === 't5') return t;
  const dir = hfSideFolder(weights);
  const configFile = dir === undefined ? undefined : nodePath.join(dir, 'config.json');
  const hfConfig = configFile !== undefined && fs.existsSync(configFile) ? (readJsonFile(configFile) as HfJson) : undefined;
  const vocabulary = dir === undefined ? undefined : ugmVocabularyFromHfFolder(dir, hfConfig);
  if (!vocabulary) throw new UnsupportedError('GGUF XLM-RoBERTa holds a SentencePiece Unigram vocabulary: the source has no Unigram tokenizer.json beside it');
  return vocabulary;
}

async function decoderKvs(weights: ModelWeights): Promise<KvEntry[]> {
  const c = weights.config as DecoderConfig;
  const variant = DECODER_VARIANTS[c.architecture];
  const a = variant.ggufArchitecture;
  if (c.noRopeLayerInterval !== variant.noRopeLayerInterval) {
    throw new UnsupportedError(`GGUF ${a} cannot store layers without RoPE every ${c.noRopeLayerInterval ?? 'no'} layers (llama.cpp fixes ${variant.noRopeLayerInterval ?? 'none'})`);
  }
  const familyKvs = (variant.hooks?.toGguf?.(c) ?? []).map(([key, type, value]): KvEntry => [`${a}.${key}`, type, value]);
  return [
    ['general.architecture', 'string', a],
    [`${a}.context_length`, 'u32', c.maxSeqLen],
    [`${a}.embedding_length`, 'u32', c.hiddenSize],
    [`${a}.feed_forward_length`, 'u32', c.intermediateSize],
    [`${a}.block_count`, 'u32', c.numLayers],
    [`${a}.attention.head_count`, 'u32', c.numHeads],
    [`${a}.attention.head_count_kv`, 'u32', c.numKvHeads],
    [`${a}.attention.key_length`, 'u32', c.headDim],
    [`${a}.attention.value_length`, 'u32', c.headDim],
    [`${a}.rope.dimension_count`, 'u32', c.ropeDim ?? c.headDim],
    [`${a}.rope.freq_base`, 'f32', c.ropeTheta],
    [`${a}.attention.layer_norm_rms_epsilon`, 'f32', c.rmsNormEps],
    ...slidingWindowKvs(c, a),
    ...familyKvs,
    ...variantScalars(c.architecture).filter((s) => c[s.field] !== undefined).map((s): KvEntry => [`${a}.${s.gguf}`, 'f32', c[s.field]]),
    ...vocabularyKvs(await vocabularyOf(weights, c.vocabSize), jinjaChatTemplateOf(weights), c.eosTokenIds),
  ];
}

// ---------------------------------------------------------------------------------------------
// Tensors

interface Planned {
  name: string;
  /** The source tensor, when there is one (its pages are released once written). */
  view?: TensorView;
  /** innermost first */
  dims: number[];
  ggmlType: number;
  byteLength: number;
  /** Quantized here (options.quant). */
  quantized?: true;
  emit: () =>
    | Iterable<Uint8Array>
    | { blocks: AsyncIterable<Uint8Array> }
    | { floats: Iterable<Float32Array>; dtype: FloatDType }
    | { view: TensorView; dtype: FloatDType };
}

const FLOAT_TYPES: Record<FloatDType, number> = { f32: 0, f16: 1, bf16: 30 };

function planTensor(weights: ModelWeights, view: TensorView, options: WriteOptions): Planned {
  const c = weights.config;
  const cut = architectureOf(c)?.ggufEncoder === true ? bertGgufPositionRows(c as BertConfig, view.name) : undefined;
  if (cut) {
    const rows = rowBlockView(view, view.name, cut.row0, cut.rows);
    if (!rows) throw new UnsupportedError(`cannot cut the position rows of the ${view.dtype} tensor '${view.name}' in place`);
    view = rows;
  }
  return { ...planTensorBytes(weights, view, options), view };
}

function planTensorBytes(weights: ModelWeights, view: TensorView, options: WriteOptions): Planned {
  const c = weights.config;
  const shape = canonicalShape(view);
  const dims = [...shape].reverse();
  const decoder = isDecoderConfig(c);
  const bert = architectureOf(c)?.ggufEncoder === true;
  const name = decoder ? ggufTensorName(view.name, c.sandwichNorms, [], DECODER_VARIANTS[c.architecture].ggufTensorNames) : bert ? bertGgufName(view.name) ?? view.name : view.name;
  const normShift = decoder ? c.normWeightOffset ?? 0 : 0;
  if (normShift !== 0 && view.name.endsWith('norm.weight')) {
    // GGUF stores Gemma's norms with the offset applied (see gguf.ts).
    const shifted = function* () {
      for (const chunk of f32Chunks(view)) yield chunk.map((v) => v + normShift);
    };
    return { name, dims, ggmlType: FLOAT_TYPES.f32, byteLength: numel(shape) * 4, emit: () => ({ floats: shifted(), dtype: 'f32' }) };
  }
  const rows = decoder ? qkRowSources(c, view.name, DECODER_VARIANTS[c.architecture].ggufRopePairing) : undefined;
  const n = numel(shape);
  const requested = options.dtype && shape.length >= 2 ? options.dtype : undefined;
  const blocks = ggmlBlockTypeId(view.dtype);
  if (blocks !== undefined && !requested && !rows && !view.transposed) {
    return { name, dims, ggmlType: blocks, byteLength: view.byteLength, emit: () => rawChunks(view) };
  }
  const stored = view.dtype === 'f32' || view.dtype === 'f16' || view.dtype === 'bf16' ? view.dtype : undefined;
  const quantize = options.quant === 'q8_0' && llamaCppQuantizes(name, shape.length) && isFloatReadable(view);
  const wholeBlocks = shape[shape.length - 1] % GGML_Q8_BLOCK === 0;
  if (quantize && wholeBlocks) {
    const byteLength = (n / GGML_Q8_BLOCK) * GGML_Q8_BLOCK_BYTES;
    return { name, dims, ggmlType: GGML_Q8_0_TYPE, byteLength, quantized: true, emit: () => ({ blocks: ggmlQ8Chunks(view, rows) }) };
  }
  const dtype: FloatDType = quantize ? 'f16' : requested ?? stored ?? 'f32';
  if (!isFloatReadable(view)) {
    if (rows || view.transposed) throw new UnsupportedError(`cannot reorder the ${view.dtype} tensor '${view.name}'`);
    const ints: Record<string, number> = { i8: 24, i16: 25, i32: 26, i64: 27 };
    const code = ints[view.dtype];
    if (code === undefined) throw new UnsupportedError(`GGUF has no type for the ${view.dtype} tensor '${view.name}'`);
    return { name, dims, ggmlType: code, byteLength: view.byteLength, emit: () => rawChunks(view) };
  }
  const byteLength = n * (dtype === 'f32' ? 4 : 2);
  if (rows) return { name, dims, ggmlType: FLOAT_TYPES[dtype], byteLength, emit: () => ({ floats: permutedRowChunks(view, rows), dtype }) };
  if (dtype === view.dtype && !view.transposed) return { name, dims, ggmlType: FLOAT_TYPES[dtype], byteLength, emit: () => rawChunks(view) };
  return { name, dims, ggmlType: FLOAT_TYPES[dtype], byteLength, emit: () => ({ view, dtype }) };
}

/**
 * The planned tensors with a fused variant's parts joined where the first part was (Phi-3's
 * attn_qkv, and ffn_up holding gate then up, as llama.cpp loads them): the parts' bytes one after
 * the other when they share a stored type, else their floats.
 */
function withFusedTensors(weights: ModelWeights, planned: Planned[]): Planned[] {
  const c = weights.config;
  const groups = isDecoderConfig(c) ? [...decoderFusedTensors(c), ...expertStacks(c)] : [];
  if (groups.length === 0) return planned;
  const byView = new Map(planned.filter((p) => p.view).map((p) => [p.view!.name, p]));
  const first = new Map<string, [string, string[]]>();
  const inGroup = new Set<string>();
  for (const g of groups) {
    first.set(g[1][0], g);
    for (const name of g[1]) inGroup.add(name);
  }
  const out: Planned[] = [];
  for (const p of planned) {
    const name = p.view?.name;
    if (name === undefined || !inGroup.has(name)) {
      out.push(p);
      continue;
    }
    const g = first.get(name);
    if (!g) continue;
    const parts = g[1].map((n) => byView.get(n));
    if (!parts.every((q): q is Planned => q?.view !== undefined)) throw new UnsupportedError(`cannot join the parts of '${g[0]}'`);
    const views = parts.map((q) => q.view!);
    const rows = parts.reduce((n, q) => n + q.dims[1], 0);
    // Stacked experts are 3-D [cols, rows, experts] (innermost first), fused projections 2-D.
    const dims = isDecoderConfig(c) && expertStackShape(c, g[0]) ? [p.dims[0], p.dims[1], parts.length] : [p.dims[0], rows];
    const sameType = parts.every((q) => q.ggmlType === p.ggmlType && !q.quantized && q.view!.dtype === p.view!.dtype && !q.view!.transposed && q.byteLength === q.view!.byteLength);
    const joined = ggufTensorName(g[0], false, isDecoderConfig(c) ? DECODER_VARIANTS[c.architecture].fused : []);
    if (parts.every((q) => q.quantized && q.ggmlType === p.ggmlType)) {
      // Parts quantized here (options.quant): their blocks one part after the other.
      const blocks = async function* () {
        for (const q of parts) {
          const emitted = q.emit();
          if ('blocks' in emitted) yield* emitted.blocks;
          else throw new UnsupportedError(`cannot join the parts of '${g[0]}'`);
        }
      };
      out.push({ name: joined, view: p.view, dims, ggmlType: p.ggmlType, byteLength: parts.reduce((n, q) => n + q.byteLength, 0), quantized: true, emit: () => ({ blocks: blocks() }) });
      continue;
    }
    if (sameType) {
      out.push({ name: joined, view: p.view, dims, ggmlType: p.ggmlType, byteLength: parts.reduce((n, q) => n + q.byteLength, 0), emit: () => views.flatMap((v) => [...rawChunks(v)]) });
    } else {
      if (!views.every(isFloatReadable)) throw new UnsupportedError(`cannot join the parts of '${g[0]}'`);
      const floats = function* () {
        for (const v of views) yield* f32Chunks(v);
      };
      out.push({ name: joined, view: p.view, dims, ggmlType: FLOAT_TYPES.f32, byteLength: numel(dims) * 4, emit: () => ({ floats: floats(), dtype: 'f32' }) });
    }
  }
  return out;
}

interface ListedTensor {
  name: string;
  shape: number[];
  ggmlType: number;
  byteOffset: number;
  byteLength: number;
  supported: boolean;
}

/**
 * The tensors of a GGUF source in their file order: viewed ones from `weights.tensors` (matched by
 * their llama.cpp name), the ones weightmap could not view copied as stored; views the source file
 * did not list come last.
 */
function ggufSourceTensors(weights: ModelWeights, options: WriteOptions): Planned[] {
  const listed = (weights.metadata['gguf.tensors'] ?? []) as ListedTensor[];
  const src = weights.sources[0];
  const planned = withFusedTensors(weights, weights.tensors.map((v) => planTensor(weights, v, options)));
  const byName = new Map(planned.map((p) => [p.name, p]));
  const out: Planned[] = [];
  for (const t of listed) {
    if (t.supported) {
      const p = byName.get(t.name);
      if (p) {
        out.push(p);
        byName.delete(t.name);
      }
    } else if (src && t.byteOffset + t.byteLength <= src.byteLength) {
      out.push({
        name: t.name,
        dims: [...t.shape].reverse(),
        ggmlType: t.ggmlType,
        byteLength: t.byteLength,
        emit: () => [src.bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength)],
      });
    }
  }
  return [...out, ...byName.values()];
}

/** The file-type keys llama-quantize records (LLAMA_FTYPE_MOSTLY_Q8_0, GGML_QNT_VERSION), in place of the source's. */
function withQ8FileType(kvs: KvEntry[]): KvEntry[] {
  const set: KvEntry[] = [['general.quantization_version', 'u32', 2], ['general.file_type', 'u32', 7]];
  const out = kvs.map((kv) => set.find(([key]) => key === kv[0]) ?? kv);
  for (const kv of set) if (!kvs.some(([key]) => key === kv[0])) out.push(kv);
  return out;
}

export async function writeGguf(weights: ModelWeights, path: string, options: WriteOptions = {}): Promise<void> {
  if (options.groupSize !== undefined && options.groupSize !== GGML_Q8_BLOCK) {
    throw new UnsupportedError(`GGUF Q8_0 blocks hold ${GGML_Q8_BLOCK} values; group size ${options.groupSize} does not apply`);
  }
  const fromGguf = weights.format === 'gguf' && weights.metadata['gguf.types'] !== undefined;
  const c = weights.config;
  const bert = architectureOf(c)?.ggufEncoder === true;
  if (!fromGguf && !isDecoderConfig(c) && !bert) {
    throw new UnsupportedError(`GGUF output is written for ${variantNames(GGUF_WRITER_HOLDS)} decoders, BERT encoders (or GGUF sources), not ${c.architecture}`);
  }
  const unheld = fromGguf || bert ? [] : unheldFields(c as DecoderConfig, [...GGUF_WRITER_HOLDS, ...(DECODER_VARIANTS[(c as DecoderConfig).architecture].ggufHolds ?? [])]);
  if (unheld.length > 0) throw new UnsupportedError(`GGUF output from ${weights.format} holds no ${unheld.join(', ')} (this ${c.architecture} model has them)`);
  if (fromGguf && weights.tokenizer) await runYielding(decodeVocabularySteps(weights.tokenizer));
  const alignment = fromGguf && typeof weights.metadata['general.alignment'] === 'number' ? (weights.metadata['general.alignment'] as number) : GGUF_DEFAULT_ALIGNMENT;
  const tensors = fromGguf ? ggufSourceTensors(weights, options) : withFusedTensors(weights, weights.tensors.map((v) => planTensor(weights, v, options)));
  if (new Set(tensors.map((t) => t.name)).size !== tensors.length) throw rangeError('duplicate tensor names');
  const kvs0 = fromGguf ? sourceKvs(weights) : bert ? bertKvs(weights) : await decoderKvs(weights);
  const kvs = tensors.some((t) => t.quantized) ? withQ8FileType(kvs0) : kvs0;

  const head = Buffer.concat([u32(GGUF_MAGIC), u32(3), u64(tensors.length), u64(kvs.length)]);
  const kvBytes: Buffer[] = [];
  for (const kv of kvs) kvBytes.push(await runYielding(encodeKvSteps(kv)));
  let offset = 0;
  const offsets: number[] = [];
  for (const t of tensors) {
    offsets.push(offset);
    offset = Math.ceil((offset + t.byteLength) / alignment) * alignment;
  }
  const infos = tensors.map((t, i) => Buffer.concat([encodeString(t.name), u32(t.dims.length), ...t.dims.map((d) => u64(d)), u32(t.ggmlType), u64(offsets[i])]));
  const headerLength = head.length + kvBytes.reduce((a, b) => a + b.length, 0) + infos.reduce((a, b) => a + b.length, 0);
  const dataStart = tensors.length > 0 ? Math.ceil(headerLength / alignment) * alignment : headerLength;
  const total = tensors.length > 0 ? dataStart + offsets[offsets.length - 1] + tensors[tensors.length - 1].byteLength : headerLength;

  await writeOutputs(weights, options, (out) => runWriteJob(out.file(path), total, options, async (job) => {
    await job.write(head);
    for (const kv of kvBytes) await job.write(kv);
    for (const info of infos) await job.write(info);
    await job.write(new Uint8Array(dataStart - headerLength));
    for (let i = 0; i < tensors.length; i++) {
      const t = tensors[i];
      const pad = dataStart + offsets[i] - job.position;
      if (pad > 0) await job.write(new Uint8Array(pad));
      const out = t.emit();
      if ('blocks' in out) for await (const blocks of out.blocks) await job.write(blocks, t.name);
      else if ('view' in out) await job.writeTensor(out.view, out.dtype, false);
      else if ('floats' in out) await job.writeFloats(out.floats, out.dtype, t.name);
      else await job.writeRaw(out, t.name);
      if (t.view) releasePages(t.view);
    }
  }));
}

