/**
 * safetensors (FORMATS.md §7; huggingface/safetensors): u64 LE header length N, N bytes of JSON
 * `{name: {dtype, shape, data_offsets: [begin, end]}, "__metadata__": {str: str}}` (offsets
 * relative to the end of the header), then the data. As the reference implementation requires,
 * the tensors must tile the data section exactly: sorted by offset, each begins where the previous
 * ends and the last ends at the end of the file; byte length = numel × dtype size.
 *
 * HF model folders: `config.json` plus `model.safetensors`, or shards listed by
 * `model.safetensors.index.json` (`weight_map`: name -> shard file); a lone .safetensors file
 * takes the config.json beside it (gpt-oss's experts, which are no views, converted, in the
 * tokenizer worker, into a mapped cache file: gptoss-hf.ts, converted-file.ts). Llama/Qwen3 and BERT configs (hf-config.ts) give decoder or
 * encoder weights with canonical names (a `bert.` prefix and legacy LayerNorm gamma/beta are
 * normalised; rotary inv_freq, position_ids and MLM `cls.*` heads are dropped); anything else
 * reads as 'unknown' with the file's names.
 *
 * Writer: one file from any ModelWeights. Tensors keep their dtype when safetensors has it
 * (q8_0 kinds are dequantized to f32; options.dtype converts every float tensor), matrices stored
 * transposed are written in canonical orientation, decoders with interleaved q/k are permuted into
 * HF order; gpt-oss's experts go back into its checkpoint layout (gptoss-hf.ts). Tensors are laid out by element size (largest first, stable) so every tensor is
 * aligned to its element size; `__metadata__` comes first with "format": "pt". config.json (and
 * the sentence-transformers files for BERT) go beside the file for known architectures.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { rangeError, UnsupportedError } from '../../base/errors';
import { architectureOf } from '../../architectures';
import { DECODER_NAMES, DECODER_VARIANTS, decoderCheckpointNames, decoderFusedTensors, isDecoderConfig, type FusedPart } from '../../architectures/decoder';
import { conversionRecord, convertedFile, plannedFile, writeConvertedFile } from './converted-file';
import type { ConversionJob } from './conversion-offload';
import { GPTOSS_HF_CONVERSION, gptossHfPlan, type GptossHfPlan } from './gptoss-hf';
import type { GptossHfOutput } from '../writing/gptoss-hf-output';
import { mapFile, type MappedSource } from '../../addon/mapping';
import { DTYPE_BYTES, isGgmlBlockDType, numel, rowBlockView, type DType, type PlainDType, type ModelWeights, type TensorView, type TokenizerData } from '../../addon/weights';
import type { ModelConfig } from '../../architectures/model-config';
import { ByteCursor, checkLayerCount, fail } from './bytes';
import { SAFETENSORS_INDEX, SAFETENSORS_MAX_HEADER_BYTES, SAFETENSORS_SINGLE, detectSafetensors } from './magic';
import type { FloatDType } from '../quantization/dtype-convert';
import { hfFolderConfigFiles, jsonText, readHfFolderConfig, readJsonFile, type HfJson } from './hf-config';
import { readHfVocabularySteps, wordPieceData } from '../vocabulary/hf-vocab';
import { wordPieceFromGguf } from './gguf-bert';
import { runYielding } from '../../base/steps';
import { canonicalShape, f32Chunks, isFloatReadable, releasePages } from '../quantization/tensor-data';
import type { FormatModule, Probe, ReadOptions, WriteOptions } from '../types';
import { lazy } from '../../base/lazy';

/** The writer's modules, loaded by the first write: reading needs none of them. */
const writing = lazy(() => ({
  ...(require('../writing/rope-order') as typeof import('../writing/rope-order')),
  ...(require('../writing/output-files') as typeof import('../writing/output-files')),
  ...(require('../vocabulary/vocab-convert') as typeof import('../vocabulary/vocab-convert')),
  ...(require('../writing/write-job') as typeof import('../writing/write-job')),
  ...(require('../writing/gptoss-hf-output') as typeof import('../writing/gptoss-hf-output')),
}));

/** The reference implementation's limit (safetensors MAX_HEADER_SIZE). */
export { SAFETENSORS_INDEX, SAFETENSORS_MAX_HEADER_BYTES, SAFETENSORS_SINGLE } from './magic';
/** __metadata__ keys that carry an EMBD source's metadata entries (`embd.created_at`, ...). */
export const EMBD_METADATA_PREFIX = 'embd.';

const DTYPES: Readonly<Record<string, PlainDType>> = {
  BOOL: 'bool', U8: 'u8', I8: 'i8', I16: 'i16', U16: 'u16', F16: 'f16', BF16: 'bf16',
  I32: 'i32', U32: 'u32', F32: 'f32', F64: 'f64', I64: 'i64', U64: 'u64',
};
/** Valid safetensors dtypes weightmap cannot represent. */
const UNSUPPORTED_DTYPES = ['F8_E5M2', 'F8_E4M3', 'F8_E8M0', 'F6_E2M3', 'F6_E3M2', 'F4', 'C64'];
const DTYPE_NAMES: Readonly<Record<PlainDType, string>> = Object.fromEntries(Object.entries(DTYPES).map(([k, v]) => [v, k])) as Record<PlainDType, string>;

export interface SafetensorsFile {
  /** Absolute offset of the data section (8 + N). */
  dataOffset: number;
  tensors: TensorView[];
  metadata: Record<string, string>;
}

function isObject(v: unknown): v is Record<string, unknown> {
  return typeof v === 'object' && v !== null && !Array.isArray(v);
}

/** Parses and validates one mapped .safetensors file; views are named as in the file. */
export function parseSafetensors(src: MappedSource): SafetensorsFile {
  const { bytes, path } = src;
  const cur = new ByteCursor(bytes, path);
  const n = cur.u64('the header length');
  if (n > SAFETENSORS_MAX_HEADER_BYTES) fail('BAD_HEADER', 'the header length is absurd', { path, offset: 0, expected: `<= ${SAFETENSORS_MAX_HEADER_BYTES}`, found: n });
  cur.need(n, 'the JSON header');
  if (n < 2 || bytes[8] !== 0x7b) fail('BAD_HEADER', 'the header is not a JSON object', { path, offset: 8, expected: '{', found: bytes.subarray(8, 9).toString('hex') });
  let header: unknown;
  try {
    header = JSON.parse(new TextDecoder('utf-8', { fatal: true }).decode(bytes.subarray(8, 8 + n)));
  } catch (cause) {
    return fail('BAD_HEADER', `the header is not valid UTF-8 JSON: ${(cause as Error).message}`, { path, offset: 8 });
  }
  if (!isObject(header)) return fail('BAD_HEADER', 'the header is not a JSON object', { path, offset: 8 });
  const dataOffset = 8 + n;
  const dataLength = src.byteLength - dataOffset;
  const metadata: Record<string, string> = {};
  const tensors: (TensorView & { begin: number; end: number })[] = [];
  for (const [name, info] of Object.entries(header)) {
    if (name === '__metadata__') {
      if (!isObject(info) || !Object.values(info).every((v) => typeof v === 'string')) {
        fail('BAD_HEADER', '__metadata__ must map strings to strings', { path, offset: 8 });
      }
      Object.assign(metadata, info);
      continue;
    }
    if (name.length === 0) fail('BAD_NAME', 'empty tensor name', { path, offset: 8 });
    if (!isObject(info)) return fail('BAD_HEADER', `the entry of '${name}' is not an object`, { path, offset: 8 });
    const { dtype: dtypeName, shape, data_offsets: offsets } = info;
    if (typeof dtypeName !== 'string') return fail('BAD_HEADER', `'${name}' has no dtype string`, { path, offset: 8, found: dtypeName });
    const dtype = DTYPES[dtypeName];
    if (!dtype) {
      fail(UNSUPPORTED_DTYPES.includes(dtypeName) ? 'UNSUPPORTED' : 'BAD_DTYPE', `tensor '${name}' has dtype ${dtypeName}`, { path, offset: 8, expected: Object.keys(DTYPES).join(', '), found: dtypeName });
    }
    if (!Array.isArray(shape) || shape.length > 32 || !shape.every((d) => Number.isSafeInteger(d) && d >= 0)) {
      return fail('BAD_HEADER', `'${name}' has an invalid shape`, { path, offset: 8, found: JSON.stringify(shape) });
    }
    if (!Array.isArray(offsets) || offsets.length !== 2 || !offsets.every((o) => Number.isSafeInteger(o) && o >= 0) || offsets[0] > offsets[1]) {
      return fail('BAD_HEADER', `'${name}' has invalid data_offsets`, { path, offset: 8, found: JSON.stringify(offsets) });
    }
    const [begin, end] = offsets as [number, number];
    const byteLength = numel(shape as number[]) * DTYPE_BYTES[dtype];
    if (!Number.isSafeInteger(byteLength) || end - begin !== byteLength) {
      fail('SHAPE_MISMATCH', `the data of '${name}' does not match its shape and dtype`, { path, offset: dataOffset + begin, expected: `${byteLength} bytes`, found: `${end - begin} bytes` });
    }
    tensors.push({ name, dtype, shape: shape as number[], source: src, byteOffset: dataOffset + begin, byteLength, begin, end });
  }
  // The tensors must tile [0, dataLength) exactly (safetensors' own validation).
  tensors.sort((a, b) => a.begin - b.begin || a.end - b.end);
  let expected = 0;
  for (const t of tensors) {
    if (t.begin < expected) fail('OVERLAP', `tensor '${t.name}' overlaps the previous tensor`, { path, offset: t.byteOffset, expected: `offset >= ${expected}`, found: t.begin });
    if (t.begin > expected) fail('BAD_HEADER', `a gap of unused bytes precedes tensor '${t.name}'`, { path, offset: dataOffset + expected, expected: `data_offsets[0] = ${expected}`, found: t.begin });
    expected = t.end;
  }
  if (expected > dataLength) fail('TRUNCATED', 'the file ends inside the tensor data', { path, offset: dataOffset + dataLength, expected: `${expected} data bytes`, found: `${dataLength} bytes` });
  if (expected < dataLength) fail('TRAILING_DATA', 'bytes follow the last tensor', { path, offset: dataOffset + expected, expected: 0, found: dataLength - expected });
  return { dataOffset, tensors: tensors.map(({ begin: _b, end: _e, ...view }) => view), metadata };
}

// ---------------------------------------------------------------------------------------------
// Folders and shards

interface Located {
  files: string[];
  configDir: string;
  /** weight_map of a sharded checkpoint. */
  weightMap?: Record<string, string>;
  indexPath?: string;
}

function locate(path: string): Located {
  const stat = fs.statSync(path);
  if (!stat.isDirectory()) {
    if (path.endsWith('.index.json')) return fromIndex(path);
    return { files: [path], configDir: nodePath.dirname(path) };
  }
  if (fs.existsSync(nodePath.join(path, SAFETENSORS_INDEX))) return fromIndex(nodePath.join(path, SAFETENSORS_INDEX));
  if (fs.existsSync(nodePath.join(path, SAFETENSORS_SINGLE))) return { files: [nodePath.join(path, SAFETENSORS_SINGLE)], configDir: path };
  const candidates = fs.readdirSync(path).filter((f) => f.endsWith('.safetensors'));
  if (candidates.length === 1) return { files: [nodePath.join(path, candidates[0])], configDir: path };
  return fail('MISSING_TENSOR', `the folder holds no ${SAFETENSORS_SINGLE} or ${SAFETENSORS_INDEX}`, { path, expected: SAFETENSORS_SINGLE, found: candidates.length ? candidates.join(', ') : 'nothing' });
}

function fromIndex(indexPath: string): Located {
  const dir = nodePath.dirname(indexPath);
  const index = readJsonFile(indexPath) as HfJson;
  const map = index.weight_map;
  if (!isObject(map) || !Object.values(map).every((v) => typeof v === 'string')) {
    return fail('BAD_HEADER', 'weight_map must map tensor names to shard files', { path: indexPath });
  }
  const weightMap = map as Record<string, string>;
  const files = [...new Set(Object.values(weightMap))];
  for (const f of files) {
    // Shards live in the folder itself: no paths, no escapes.
    if (f.length === 0 || f.includes('/') || f.includes('\\') || f === '.' || f === '..') {
      fail('BAD_NAME', 'a shard name in weight_map is not a plain file name', { path: indexPath, found: f });
    }
  }
  for (const f of files) {
    if (!fs.existsSync(nodePath.join(dir, f))) fail('MISSING_TENSOR', `shard '${f}' listed in weight_map is missing`, { path: indexPath, expected: f, found: 'absent' });
  }
  return { files: files.map((f) => nodePath.join(dir, f)), configDir: dir, weightMap, indexPath };
}

// ---------------------------------------------------------------------------------------------
// Canonical names and validation

function checkShape(t: TensorView, shape: number[]): void {
  const got = canonicalShape(t);
  if (got.length !== shape.length || got.some((v, i) => v !== shape[i])) {
    fail('SHAPE_MISMATCH', `'${t.name}' disagrees with config.json`, { path: t.source.path, offset: t.byteOffset, expected: shape, found: got });
  }
  // ggml's blocks only come from a conversion (gpt-oss's MXFP4 experts): safetensors has no such dtype.
  if (t.dtype !== 'f32' && t.dtype !== 'f16' && t.dtype !== 'bf16' && !isGgmlBlockDType(t.dtype)) {
    fail('BAD_DTYPE', `'${t.name}' is ${t.dtype}; weights must be F32, F16 or BF16`, { path: t.source.path, offset: t.byteOffset, expected: 'F32 | F16 | BF16', found: DTYPE_NAMES[t.dtype as PlainDType] ?? t.dtype });
  }
}

interface NamedSpec {
  name: string;
  shape: number[];
  /** May be absent (a tied lm_head, BERT's pooler). */
  optional: boolean;
}

/** What a known architecture's checkpoint holds, and how its file names map to canonical ones. */
function architectureTensors(config: ModelConfig, views: TensorView[]): { specs: NamedSpec[]; rename: (name: string) => string | null; fused?: (name: string) => FusedPart[] | undefined } | undefined {
  const arch = architectureOf(config);
  if (!arch) return undefined;
  return { specs: arch.tensors(config), rename: arch.checkpointNames(views.map((v) => v.name)), fused: arch.fusedParts?.(config) };
}

/** The layer counts of a configuration, by the config.json key that sets each. */
function layerCounts(config: ModelConfig): [string, number][] {
  return architectureOf(config)?.layerCounts(config) ?? [];
}

/**
 * `keys`: the checkpoint's own names, which decide its naming (the views' names unless some were
 * converted); `pending`: canonical names left unconverted (ReadOptions.convert false), not missing.
 */
function canonicalize(config: ModelConfig, views: TensorView[], path: string, keys: TensorView[] = views, pending: ReadonlySet<string> = new Set()): TensorView[] {
  for (const [key, layers] of layerCounts(config)) checkLayerCount(key, layers, keys.length, { path });
  const arch = architectureTensors(config, keys);
  if (!arch) return views;
  const specs = new Map(arch.specs.map((s) => [s.name, s]));
  const out: TensorView[] = [];
  for (const v of views) {
    const name = arch.rename(v.name);
    if (name === null) continue;
    const parts = arch.fused?.(name);
    if (parts) {
      const rows = parts.reduce((n, p) => n + p.rows, 0);
      if (v.shape.length !== 2 || v.shape[0] !== rows) fail('SHAPE_MISMATCH', `'${v.name}' disagrees with config.json`, { path: v.source.path, offset: v.byteOffset, expected: `[${rows}, ...]`, found: v.shape });
      for (const p of parts) {
        const view = rowBlockView(v, p.name, p.row0, p.rows);
        if (!view) fail('UNSUPPORTED', `'${v.name}' cannot be split into its parts in place`, { path: v.source.path, offset: v.byteOffset, found: v.dtype });
        checkShape(view, specs.get(p.name)!.shape);
        out.push(view);
      }
      continue;
    }
    const spec = specs.get(name);
    if (!spec) fail('BAD_NAME', `'${v.name}' is not a tensor of a ${config.architecture} model`, { path: v.source.path, offset: v.byteOffset, found: v.name });
    const view = { ...v, name };
    checkShape(view, spec.shape);
    out.push(view);
  }
  const have = new Set(out.map((v) => v.name));
  for (const s of arch.specs) {
    if (!s.optional && !have.has(s.name) && !pending.has(s.name)) fail('MISSING_TENSOR', `the checkpoint has no '${s.name}'`, { path, expected: s.name, found: 'absent' });
  }
  return out;
}

/** The conversion of a variant whose HF experts are not views (gpt-oss: hfExpertLayout): the views kept and the tensors to make; undefined for other configs. */
function expertPlan(config: ModelConfig, views: TensorView[], path: string): GptossHfPlan | undefined {
  if (!isDecoderConfig(config) || DECODER_VARIANTS[config.architecture].hfExpertLayout !== 'fused-gate-up') return undefined;
  for (const [key, layers] of layerCounts(config)) checkLayerCount(key, layers, views.length, { path });
  return gptossHfPlan(config, views, decoderCheckpointNames(views.map((v) => v.name)));
}

interface Experts {
  views: TensorView[];
  /** The converted file's mapping (absent when not converted: ReadOptions.convert false). */
  source?: MappedSource;
  summary: NonNullable<ModelWeights['converted']>;
}

/**
 * The checkpoint's views with the expert tensors of a variant whose HF experts are not views
 * replaced by their converted forms, mapped from the cache's file (written now, off the JS thread,
 * when the cache does not hold it); with `convert` false, without them (the summary lists them as
 * pending) and nothing written. Undefined for other configs.
 */
async function convertExperts(config: ModelConfig, views: TensorView[], files: string[], path: string, convert: boolean): Promise<Experts | undefined> {
  const plan = expertPlan(config, views, path);
  if (!plan) return undefined;
  const bytes = plan.converted.reduce((n, t) => n + t.byteLength, 0);
  const tensors = plan.converted.length;
  if (!convert) {
    const planned = plannedFile(GPTOSS_HF_CONVERSION, files, plan.converted);
    const pending = plan.converted.map((t) => ({ name: t.name, dtype: t.dtype, shape: [...t.shape], byteLength: t.byteLength }));
    return { views: plan.views, summary: { file: planned.path, tensors, bytes, reused: planned.cached, pending } };
  }
  const file = await convertedFile(GPTOSS_HF_CONVERSION, path, files, plan.converted);
  return { views: [...plan.views, ...file.views], source: file.source, summary: { file: file.path, tensors, bytes, reused: file.reused } };
}

/**
 * The converted experts' file of the checkpoint at `job.checkpoint` written to `job.file` (the
 * tokenizer worker's conversion job: converted-file.ts): the checkpoint read again and the same
 * tensors planned as its reader plans them.
 */
export async function writeConvertedExperts(job: ConversionJob): Promise<void> {
  if (job.conversion !== GPTOSS_HF_CONVERSION) throw new UnsupportedError(`no conversion '${job.conversion}' (this one writes '${GPTOSS_HF_CONVERSION}')`);
  const checkpoint = openCheckpoint(job.checkpoint);
  try {
    const plan = expertPlan(checkpoint.config, checkpoint.views, job.checkpoint);
    if (!plan) throw new UnsupportedError(`${job.checkpoint} has no tensors to convert`);
    await writeConvertedFile(job.file, conversionRecord(GPTOSS_HF_CONVERSION, checkpoint.files, plan.converted), plan.converted);
  } finally {
    for (const s of checkpoint.sources) s.close();
  }
}

/** A BERT folder's WordPiece vocabulary (vocab.txt or tokenizer.json), for writers that embed it (EMBD). */
async function bertVocabulary(dir: string): Promise<TokenizerData | undefined> {
  const v = await runYielding(readHfVocabularySteps(dir));
  return v?.kind === 'wordpiece' ? wordPieceData(v) : undefined;
}

/** A checkpoint's files mapped and parsed (views named as in the files), and its config.json. */
interface Checkpoint {
  files: string[];
  configDir: string;
  sources: MappedSource[];
  views: TensorView[];
  metadata: Record<string, string>;
  config: ModelConfig;
}

function openCheckpoint(path: string): Checkpoint {
  const where = locate(path);
  const sources: MappedSource[] = [];
  try {
    const views: TensorView[] = [];
    const metadata: Record<string, string> = {};
    const seen = new Map<string, string>();
    for (const file of where.files) {
      const src = mapFile(file);
      sources.push(src);
      const parsed = parseSafetensors(src);
      Object.assign(metadata, parsed.metadata);
      for (const v of parsed.tensors) {
        const other = seen.get(v.name);
        if (other !== undefined) fail('BAD_NAME', `tensor '${v.name}' appears in two shards`, { path: file, found: `${other} and ${file}` });
        seen.set(v.name, file);
        if (where.weightMap && where.weightMap[v.name] !== nodePath.basename(file)) {
          fail('BAD_NAME', `tensor '${v.name}' is not where weight_map says`, { path: where.indexPath, expected: where.weightMap[v.name] ?? 'listed', found: nodePath.basename(file) });
        }
        views.push(v);
      }
    }
    if (where.weightMap) {
      for (const name of Object.keys(where.weightMap)) {
        if (!seen.has(name)) fail('MISSING_TENSOR', `weight_map lists '${name}' but its shard does not hold it`, { path: where.indexPath, expected: name, found: 'absent' });
      }
    }
    const hf = readHfFolderConfig(where.configDir);
    return { files: where.files, configDir: where.configDir, sources, views, metadata, config: hf?.config ?? { architecture: 'unknown' } };
  } catch (error) {
    for (const s of sources) s.close();
    throw error;
  }
}

async function read(path: string, options: ReadOptions = {}): Promise<ModelWeights> {
  const { files, configDir, sources, views, metadata, config } = openCheckpoint(path);
  try {
    const converted = await convertExperts(config, views, files, path, options.convert !== false);
    if (converted?.source) sources.push(converted.source);
    const pending = new Set(converted?.summary.pending?.map((t) => t.name));
    const tensors = canonicalize(config, converted?.views ?? views, path, views, pending);
    const tokenizer = architectureOf(config)?.hfVocabulary === 'wordpiece' ? await bertVocabulary(configDir) : undefined;
    return {
      format: 'safetensors', path, architecture: config.architecture, config, tensors, metadata, ...(tokenizer ? { tokenizer } : {}), sources,
      ...(converted ? { converted: converted.summary } : {}),
    };
  } catch (error) {
    for (const s of sources) s.close();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Writer

interface Planned {
  view: TensorView;
  dtype: PlainDType;
  shape: number[];
  byteLength: number;
  /** How the bytes are produced. */
  mode: 'raw' | 'floats' | 'permuted' | 'shifted' | 'fused' | 'chunks';
  rows?: Int32Array;
  /** 'fused': the tensors whose rows it joins, in order (Phi-3's qkv_proj, gate_up_proj). */
  parts?: TensorView[];
  /** 'shifted': added to every value. */
  shift?: number;
  /** 'chunks': the bytes, made in order (gpt-oss's experts in its checkpoint layout). */
  chunks?: () => Iterable<Uint8Array>;
}

/**
 * What HF's form of a Gemma checkpoint adds to its norm weights' values: it stores w and scales by
 * 1 + w, while a GGUF's weights (normWeightOffset 0) are 1 + w already.
 */
function hfNormShift(c: ModelConfig): number {
  return isDecoderConfig(c) && DECODER_VARIANTS[c.architecture].normWeightsPlusOne ? (c.normWeightOffset ?? 0) - 1 : 0;
}

/**
 * A variant whose checkpoints keep the experts in gpt-oss's layout (hfExpertLayout): those tensors
 * as the checkpoint holds them, in the source's float dtype (or options.dtype; MXFP4 as MXFP4).
 */
function hfExpertOutput(weights: ModelWeights, options: WriteOptions): GptossHfOutput | undefined {
  const c = weights.config;
  if (!isDecoderConfig(c) || DECODER_VARIANTS[c.architecture].hfExpertLayout !== 'fused-gate-up') return undefined;
  const source = weights.tensors.find((t) => t.name === DECODER_NAMES.router(0))?.dtype;
  const dtype = options.dtype ?? (source === 'f16' || source === 'bf16' ? source : 'f32');
  return writing().gptossHfOutput(c, new Map(weights.tensors.map((v) => [v.name, v])), dtype);
}

function plan(weights: ModelWeights, options: WriteOptions, experts: GptossHfOutput | undefined): Planned[] {
  const { qkRowSources } = writing();
  const c = weights.config;
  const out: Planned[] = [];
  for (const t of experts?.tensors ?? []) {
    const view = { name: t.name, dtype: t.dtype, shape: t.shape, source: weights.sources[0], byteOffset: 0, byteLength: t.byteLength };
    out.push({ view, dtype: t.dtype, shape: t.shape, byteLength: t.byteLength, mode: 'chunks', chunks: () => t.chunks() });
  }
  // A fused tensor is written where its first part was, from all of them.
  const byName = new Map(weights.tensors.map((v) => [v.name, v]));
  const fusedAt = new Map<string, [string, string[]]>();
  const fusedPart = new Set<string>();
  for (const group of isDecoderConfig(c) ? decoderFusedTensors(c) : []) {
    fusedAt.set(group[1][0], group);
    for (const p of group[1]) fusedPart.add(p);
  }
  for (const source of weights.tensors) {
    if (experts?.replaced.has(source.name)) continue;
    const hfName = experts?.renamed.get(source.name);
    const view = hfName ? { ...source, name: hfName } : source;
    const group = fusedAt.get(view.name);
    if (group) {
      const parts = group[1].map((name) => byName.get(name));
      if (!parts.every((p): p is TensorView => p !== undefined && isFloatReadable(p))) throw new UnsupportedError(`cannot join the parts of '${group[0]}'`);
      const dtype: PlainDType = options.dtype ?? (view.dtype === 'f16' || view.dtype === 'bf16' ? view.dtype : 'f32');
      const shape = [parts.reduce((n, p) => n + canonicalShape(p)[0], 0), canonicalShape(view)[1]];
      out.push({ view: { ...view, name: group[0], shape }, dtype, shape, byteLength: numel(shape) * DTYPE_BYTES[dtype], mode: 'fused', parts });
      continue;
    }
    if (fusedPart.has(view.name)) continue;
    const shape = canonicalShape(view);
    const isFloat = isFloatReadable(view);
    let dtype: PlainDType;
    if (isFloat && options.dtype) dtype = options.dtype;
    else if (!(view.dtype in DTYPE_BYTES)) dtype = 'f32'; // quantized: dequantized
    else dtype = view.dtype as PlainDType;
    const rows = isDecoderConfig(c) ? qkRowSources(c, view.name, 'half') : undefined;
    let mode: Planned['mode'] = 'raw';
    const shift = view.name.endsWith('norm.weight') ? hfNormShift(c) : 0;
    if (rows) mode = 'permuted';
    else if (shift !== 0) mode = 'shifted';
    else if (dtype !== view.dtype || view.transposed) mode = 'floats';
    if (mode !== 'raw' && !isFloat) throw new UnsupportedError(`cannot convert or transpose the ${view.dtype} tensor '${view.name}'`);
    if (mode !== 'raw' && dtype !== 'f32' && dtype !== 'f16' && dtype !== 'bf16') throw new UnsupportedError(`cannot write '${view.name}' as ${dtype}`);
    out.push({ view, dtype, shape, byteLength: numel(shape) * DTYPE_BYTES[dtype], mode, rows, ...(shift !== 0 ? { shift } : {}) });
  }
  // Largest elements first keeps every tensor aligned to its element size.
  return out
    .map((p, i) => ({ p, i }))
    .sort((a, b) => DTYPE_BYTES[b.p.dtype] - DTYPE_BYTES[a.p.dtype] || a.i - b.i)
    .map(({ p }) => p);
}

function* joinedChunks(parts: TensorView[]): Generator<Float32Array> {
  for (const part of parts) yield* f32Chunks(part);
}

function* shiftedChunks(view: TensorView, shift: number): Generator<Float32Array> {
  for (const chunk of f32Chunks(view)) yield chunk.map((v) => v + shift);
}

/** The padded JSON header for planned tensors. */
function encodeHeader(planned: Planned[], metadata: Record<string, string>, hfName: (name: string) => string): Buffer {
  const header: Record<string, unknown> = { __metadata__: metadata };
  let offset = 0;
  for (const p of planned) {
    const name = hfName(p.view.name);
    if (name === '__metadata__' || Object.prototype.hasOwnProperty.call(header, name)) {
      throw rangeError(`duplicate or reserved tensor name '${name}'`);
    }
    header[name] = { dtype: DTYPE_NAMES[p.dtype], shape: p.shape, data_offsets: [offset, offset + p.byteLength] };
    offset += p.byteLength;
  }
  const json = Buffer.from(JSON.stringify(header), 'utf8');
  const padded = Buffer.alloc(Math.ceil(json.length / 8) * 8, 0x20);
  json.copy(padded);
  return padded;
}

async function write(weights: ModelWeights, path: string, options: WriteOptions = {}): Promise<void> {
  const { hfTokenizerFiles, permutedRowChunks, runWriteJob, writeOutputs } = writing();
  const experts = hfExpertOutput(weights, options);
  const planned = plan(weights, options, experts);
  const metadata: Record<string, string> = { format: 'pt' };
  if (weights.format === 'safetensors') {
    for (const [k, v] of Object.entries(weights.metadata)) if (typeof v === 'string') metadata[k] = v;
  } else if (weights.format === 'embd') {
    // EMBD's metadata entries (model name, created_at, ...) ride along, in order, for the way back.
    for (const [k, v] of Object.entries(weights.metadata)) if (typeof v === 'string') metadata[`${EMBD_METADATA_PREFIX}${k}`] = v;
  }
  const header = encodeHeader(planned, metadata, architectureOf(weights.config)?.hfTensorName?.(weights.config) ?? ((name) => name));
  const total = 8 + header.length + planned.reduce((a, p) => a + p.byteLength, 0);
  const c = weights.config;
  const dtypes = new Set(planned.map((p) => p.dtype));
  const torchDtype = dtypes.has('f32') ? 'float32' : dtypes.has('bf16') ? 'bfloat16' : dtypes.has('f16') ? 'float16' : undefined;
  const config = isDecoderConfig(c) ? { ...c, ropePairing: 'half' as const, ...(hfNormShift(c) !== 0 ? { normWeightOffset: 1 } : {}) } : c;
  const files: [string, string | Uint8Array][] = hfFolderConfigFiles(config, {
    ...(torchDtype ? { torch_dtype: torchDtype } : {}),
    ...(experts?.quantizationConfig ? { quantization_config: experts.quantizationConfig } : {}),
  });
  if (architectureOf(c)?.hfVocabulary === 'wordpiece') {
    const t = weights.tokenizer;
    const wordPiece = t?.kind === 'wordpiece' ? t : t?.kind === 'gguf' && t.model === 'bert' ? wordPieceFromGguf(t) : undefined;
    if (wordPiece) files.push(...bertVocabularyFiles(wordPiece));
  }
  files.push(...(await hfTokenizerFiles(weights)));
  const dir = nodePath.dirname(nodePath.resolve(path));
  await writeOutputs(weights, options, async (out) => {
    for (const [name, text] of files) await out.sidecar(path, nodePath.join(dir, name), text);
    await runWriteJob(out.file(path), total, options, async (job) => {
      const length = Buffer.alloc(8);
      length.writeBigUInt64LE(BigInt(header.length));
      await job.write(length);
      await job.write(header);
      for (const p of planned) {
        if (p.mode === 'raw') await job.copyView(p.view);
        else if (p.mode === 'permuted') await job.writeFloats(permutedRowChunks(p.view, p.rows!), p.dtype as FloatDType, p.view.name);
        else if (p.mode === 'shifted') await job.writeFloats(shiftedChunks(p.view, p.shift!), p.dtype as FloatDType, p.view.name);
        else if (p.mode === 'fused') await job.writeFloats(joinedChunks(p.parts!), p.dtype as FloatDType, p.view.name);
        else if (p.mode === 'chunks') for (const chunk of p.chunks!()) await job.write(chunk, p.view.name);
        else await job.writeTensor(p.view, p.dtype as FloatDType, false);
        if (p.mode !== 'chunks') releasePages(p.view);
      }
    });
  });
}

/** vocab.txt (one token per line, id = line) and the tokenizer_config.json naming its special tokens. */
function bertVocabularyFiles(t: Extract<TokenizerData, { kind: 'wordpiece' }>): [string, string][] {
  const bad = t.tokens.findIndex((tok) => /[\r\n]|\s$/u.test(tok));
  if (bad >= 0) throw new UnsupportedError(`token ${bad} (${JSON.stringify(t.tokens[bad])}) cannot be written to vocab.txt (a line break or trailing space)`);
  const s = t.specialIds;
  return [
    ['vocab.txt', t.tokens.map((tok) => `${tok}\n`).join('')],
    [
      'tokenizer_config.json',
      jsonText({
        tokenizer_class: 'BertTokenizer',
        do_lower_case: t.doLowerCase,
        unk_token: t.tokens[s.unk],
        sep_token: t.tokens[s.sep],
        pad_token: t.tokens[s.pad],
        cls_token: t.tokens[s.cls],
        mask_token: t.tokens[s.mask],
      }),
    ],
  ];
}


export const safetensorsFormat: FormatModule = {
  name: 'safetensors',
  title: 'safetensors (Hugging Face)',
  detect: detectSafetensors,
  read,
  write,
};
