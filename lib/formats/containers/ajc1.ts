/**
 * ajc1 (adriancable/qwen3.c), FORMATS.md §5: a 256-byte header (u32 magic 0x616A6331, i32 version
 * 1, dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size, max_seq_len, head_dim,
 * shared_classifier, group_size, zero padding), f32 norms, then Q8_0 matrices [out,in], each as
 * `int8 q[numel]` then `f32 s[numel/GS]`. Sidecars: `<file>.tokenizer` and `<file>.template*`.
 *
 * Writer: Q8_0 as export.py quantizes (q8-quantize.ts; native, off the JS thread), or the stored
 * q/s copied when the source is Q8_0 of the same group size. The sidecars are the source's own
 * (an ajc1 or sepweight source), else made from the HF folder the weights came from
 * (ajc1-sidecars.ts).
 */
import * as fs from 'node:fs/promises';
import { rangeError, UnsupportedError } from '../../base/errors';
import { mapFile, type MappedSource } from '../../addon/mapping';
import { native } from '../../addon/native';
import { numel, type ModelWeights, type TensorView, type TokenizerData } from '../../addon/weights';
import { DECODER_NAMES as N, isDecoderConfig, unheldFields, type DecoderConfig } from '../../architectures/decoder';
import { ByteCursor, fail, sizeForLayers } from './bytes';
import { AJC1_MAGIC, detectAjc1 } from './magic';
import type { FormatModule, ReadOptions, WriteOptions } from '../types';
import { ajc1TokenizerOffThread } from '../vocabulary/vocab-offload';
import { decodeVocabularySteps, deferVocabularyWork } from '../../tokenizers/deferred-vocabulary';
import { runNow, runYielding, type Steps } from '../../base/steps';
import { lazy } from '../../base/lazy';
import type { WriteJob } from '../writing/write-job';

/** The writer's modules, loaded by the first write: reading an ajc1 file needs none of them. */
const writing = lazy(() => ({
  ...(require('../vocabulary/ajc1-sidecars') as typeof import('../vocabulary/ajc1-sidecars')),
  ...(require('../quantization/q8-quantize') as typeof import('../quantization/q8-quantize')),
  ...(require('../quantization/tensor-data') as typeof import('../quantization/tensor-data')),
  ...(require('../writing/output-files') as typeof import('../writing/output-files')),
  ...(require('../vocabulary/vocab-convert') as typeof import('../vocabulary/vocab-convert')),
  ...(require('../writing/write-job') as typeof import('../writing/write-job')),
}));

export { AJC1_MAGIC } from './magic';
export const AJC1_VERSION = 1;
export const AJC1_HEADER_BYTES = 256;
/** The last header field (group_size) ends here; the rest of the 256 bytes is zero. */
const HEADER_FIELDS_END = 0x30;
/** runq hard-codes these (Qwen3's values); the header does not carry them. */
const AJC1_RMS_EPS = 1e-6;
const AJC1_ROPE_THETA = 1e6;
/** Score of tokenizer ids the .tokenizer file has no entry for (they never match). */
export const MISSING_TOKEN_SCORE = -1e6;

/** A `.tokenizer` bos/eos of -1 (as u32): the vocabulary has no such token. */
const NO_TOKEN = 0xffffffff;

/** Sidecar suffixes of the four prompt templates and their metadata.templates keys. */
export const AJC1_TEMPLATES = [
  { suffix: '.template', key: 'default' },
  { suffix: '.template.with-thinking', key: 'withThinking' },
  { suffix: '.template.with-system', key: 'withSystem' },
  { suffix: '.template.with-system-and-thinking', key: 'withSystemAndThinking' },
] as const;

export type Ajc1Templates = Partial<Record<(typeof AJC1_TEMPLATES)[number]['key'], string>>;

/** One tensor of the payload, in file order. */
interface Ajc1Tensor {
  name: string;
  shape: number[];
  quantized: boolean;
}

/** The payload layout (FORMATS.md §5.2): norms (f32), then Q8_0 matrices, per layer one after another. */
export function ajc1Layout(c: DecoderConfig): Ajc1Tensor[] {
  const L = c.numLayers;
  const d = c.hiddenSize;
  const qDim = c.numHeads * c.headDim;
  const kvDim = c.numKvHeads * c.headDim;
  const out: Ajc1Tensor[] = [];
  const perLayer = (name: (l: number) => string, shape: number[], quantized: boolean) => {
    for (let l = 0; l < L; l++) out.push({ name: name(l), shape, quantized });
  };
  perLayer(N.attnNorm, [d], false);
  perLayer(N.ffnNorm, [d], false);
  out.push({ name: N.norm, shape: [d], quantized: false });
  perLayer(N.qNorm, [c.headDim], false);
  perLayer(N.kNorm, [c.headDim], false);
  out.push({ name: N.embed, shape: [c.vocabSize, d], quantized: true });
  perLayer(N.q, [qDim, d], true);
  perLayer(N.k, [kvDim, d], true);
  perLayer(N.v, [kvDim, d], true);
  perLayer(N.o, [d, qDim], true);
  perLayer(N.gate, [c.intermediateSize, d], true);
  perLayer(N.down, [d, c.intermediateSize], true);
  perLayer(N.up, [c.intermediateSize, d], true);
  if (!c.tieWordEmbeddings) out.push({ name: N.lmHead, shape: [c.vocabSize, d], quantized: true });
  return out;
}

/** Bytes of one payload tensor: f32 values, or int8 values plus f32 group scales. */
function tensorBytes(t: Ajc1Tensor, groupSize: number): number {
  const n = numel(t.shape);
  return t.quantized ? n + 4 * (n / groupSize) : 4 * n;
}

export function ajc1FileSize(c: DecoderConfig, groupSize: number): number {
  return ajc1Layout(c).reduce((sum, t) => sum + tensorBytes(t, groupSize), AJC1_HEADER_BYTES);
}

/** Whether `gs` splits every row of every matrix (dim, hidden_dim, n_heads·head_dim) evenly. */
export function groupSizeFits(c: DecoderConfig, gs: number): boolean {
  return gs > 0 && c.hiddenSize % gs === 0 && c.intermediateSize % gs === 0 && (c.numHeads * c.headDim) % gs === 0;
}

/** Throws CONFIG_MISMATCH unless the configuration can be stored in ajc1 and run. */
export function validateAjc1Config(c: DecoderConfig, groupSize: number, shared: number, path?: string): void {
  const ints: [string, number][] = [
    ['dim', c.hiddenSize], ['hidden_dim', c.intermediateSize], ['n_layers', c.numLayers], ['n_heads', c.numHeads],
    ['n_kv_heads', c.numKvHeads], ['vocab_size', c.vocabSize], ['max_seq_len', c.maxSeqLen], ['head_dim', c.headDim],
    ['group_size', groupSize],
  ];
  for (const [name, v] of ints) {
    if (!Number.isInteger(v) || v <= 0 || v > 0x7fffffff) fail('CONFIG_MISMATCH', `${name} must be a positive 32-bit integer`, { path, expected: '1..2^31-1', found: v });
  }
  const check = (ok: boolean, message: string, expected: unknown, found: unknown) => ok || fail('CONFIG_MISMATCH', message, { path, expected, found });
  check(shared === 0 || shared === 1, 'shared_classifier must be 0 or 1', '0 or 1', shared);
  check(c.numHeads % c.numKvHeads === 0, 'n_heads is not a multiple of n_kv_heads', `multiple of ${c.numKvHeads}`, c.numHeads);
  check(c.headDim % 2 === 0, 'head_dim must be even (RoPE pairs j, j+head_dim/2)', 'even', c.headDim);
  check(groupSizeFits(c, groupSize), 'group_size does not divide dim, hidden_dim and n_heads*head_dim', `a divisor of ${c.hiddenSize}, ${c.intermediateSize}, ${c.numHeads * c.headDim}`, groupSize);
}

// ---- reader ----------------------------------------------------------------------------------

function readHeader(cur: ByteCursor): { config: DecoderConfig; groupSize: number } {
  const path = cur.path;
  const magic = cur.u32('the ajc1 magic');
  if (magic !== AJC1_MAGIC) fail('BAD_MAGIC', 'not an ajc1 checkpoint', { path, offset: 0, expected: AJC1_MAGIC, found: magic });
  const version = cur.i32('the ajc1 version');
  if (version !== AJC1_VERSION) fail('BAD_VERSION', 'unsupported ajc1 version', { path, offset: 4, expected: AJC1_VERSION, found: version });
  const f = ['dim', 'hidden_dim', 'n_layers', 'n_heads', 'n_kv_heads', 'vocab_size', 'max_seq_len', 'head_dim', 'shared_classifier', 'group_size'].map((n) =>
    cur.i32(n),
  );
  const [dim, hidden, layers, heads, kvHeads, vocab, seqLen, headDim, shared, groupSize] = f;
  cur.need(AJC1_HEADER_BYTES - HEADER_FIELDS_END, 'the header padding');
  for (let o = HEADER_FIELDS_END; o < AJC1_HEADER_BYTES; o++) {
    if (cur.bytes[o] !== 0) fail('BAD_HEADER', 'the header padding after group_size is not zero', { path, offset: o, expected: 0, found: cur.bytes[o] });
  }
  cur.offset = AJC1_HEADER_BYTES;
  const config: DecoderConfig = {
    architecture: 'qwen3',
    hiddenSize: dim,
    intermediateSize: hidden,
    numLayers: layers,
    numHeads: heads,
    numKvHeads: kvHeads,
    headDim,
    vocabSize: vocab,
    maxSeqLen: seqLen,
    rmsNormEps: AJC1_RMS_EPS,
    ropeTheta: AJC1_ROPE_THETA,
    ropePairing: 'half',
    tieWordEmbeddings: shared === 1,
    qkNorm: true,
    groupSize,
  };
  validateAjc1Config(config, groupSize, shared, path);
  return { config, groupSize };
}

function parse(src: MappedSource): { config: DecoderConfig; tensors: TensorView[] } {
  const cur = new ByteCursor(src.bytes, src.path);
  const { config, groupSize } = readHeader(cur);
  // Compared before the layout is built: n_layers = 2^31-1 must not become 2^31 tensor specs.
  const size = sizeForLayers(config.numLayers, (layers) => ajc1FileSize({ ...config, numLayers: layers }, groupSize));
  if (size > src.byteLength) {
    fail('TRUNCATED', 'the file is shorter than its header says', { path: src.path, offset: src.byteLength, expected: `${size} bytes`, found: `${src.byteLength} bytes` });
  }
  const tensors: TensorView[] = [];
  for (const t of ajc1Layout(config)) {
    const n = numel(t.shape);
    const byteOffset = cur.offset;
    if (!t.quantized) {
      cur.skip(4 * n, `the values of ${t.name}`);
      tensors.push({ name: t.name, dtype: 'f32', shape: t.shape, source: src, byteOffset, byteLength: 4 * n });
      continue;
    }
    cur.skip(n, `the int8 values of ${t.name}`);
    const scalesAt = cur.offset;
    cur.skip(4 * (n / groupSize), `the scales of ${t.name}`);
    tensors.push({
      name: t.name,
      dtype: 'q8_0',
      shape: t.shape,
      source: src,
      byteOffset,
      byteLength: n,
      scales: { byteOffset: scalesAt, byteLength: 4 * (n / groupSize), groupSize },
    });
  }
  if (cur.remaining > 0) {
    const expected = ajc1FileSize(config, groupSize);
    fail('TRAILING_DATA', 'bytes follow the last tensor', { path: src.path, offset: cur.offset, expected: `${expected} bytes`, found: `${src.byteLength} bytes` });
  }
  return { config, tensors };
}

/** Reads a sidecar file; undefined when it does not exist. */
async function readSidecar(path: string): Promise<Buffer | undefined> {
  try {
    return await fs.readFile(path);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return undefined;
    throw error;
  }
}

/**
 * Parses a `.tokenizer` (u32 max_token_length, u32 bos, u32 eos, then `f32 score, u32 len, bytes`
 * to the end of the file). Ids the file has no entry for, up to vocab_size, are empty byte strings
 * with score -1e6.
 */
export function parseAjc1Tokenizer(bytes: Buffer, path: string, vocabSize: number): TokenizerData {
  return runNow(parseAjc1TokenizerSteps(bytes, path, vocabSize));
}

/** Entries between two checkpoints of the `.tokenizer` walks (well under a millisecond; see steps.ts). */
const ENTRY_STEP = 2048;

/** Entries bounds-checked between two checkpoints of parseAjc1TokenizerSteps (well under a millisecond; see steps.ts). */
const WALK_STEP = 1 << 15;

/**
 * Steps `walk` over up to `count` entries (f32 score, u32 length, the bytes) that fit in `bytes`;
 * returns how many. In C++ (native skipRecords): in JS, interpreted until V8 compiled it, the walk
 * of a 151k-entry file took ~3 ms of a fresh process's first load.
 */
function skipEntries(bytes: Buffer, walk: { at: number; count: number }, count: number): number {
  const [at, walked] = native().skipRecords(bytes, bytes.length, walk.at, count, 'scored');
  walk.at = at;
  walk.count += walked;
  return walked;
}

/** parseAjc1Tokenizer in slices (steps.ts). */
export function* parseAjc1TokenizerSteps(bytes: Buffer, path: string, vocabSize: number): Steps<TokenizerData> {
  const cur = new ByteCursor(bytes, path);
  const maxTokenLength = cur.u32('max_token_length');
  // -1 (0xffffffff) is "no such token".
  const ids = [cur.u32('bos_token_id'), cur.u32('eos_token_id')].map((id) => (id === NO_TOKEN ? undefined : id));
  const [bosId, eosId] = ids;
  for (const [name, id, at] of [['bos_token_id', bosId, 4], ['eos_token_id', eosId, 8]] as const) {
    if (id !== undefined && id >= vocabSize) fail('CONFIG_MISMATCH', `${name} lies outside the vocabulary`, { path, offset: at, expected: `< ${vocabSize}`, found: id });
  }
  // Every entry is bounds-checked now; its view and score are made on first use (loadModel hands
  // the file itself to the tokenizer worker, so 151k views may never be needed on this thread).
  const walk = { at: cur.offset, count: 0 };
  while (walk.at < bytes.length) {
    const room = Math.min(WALK_STEP, vocabSize - walk.count);
    const walked = skipEntries(bytes, walk, room);
    if (walk.at >= bytes.length) break;
    if (walked === room && walk.count === vocabSize) {
      fail('CONFIG_MISMATCH', 'the tokenizer has more entries than the checkpoint vocab_size', { path, offset: walk.at, expected: vocabSize, found: `> ${vocabSize}` });
    }
    if (walked < room) {
      // The entry at walk.at runs past the end: the cursor's checks name it and throw TRUNCATED.
      cur.offset = walk.at;
      cur.f32('a token score');
      const length = cur.u32('a token length');
      cur.need(length, `the bytes of token ${walk.count}`);
    }
    yield;
  }
  let entries: { tokens: Uint8Array[]; scores: Float32Array } | undefined;
  function* parsedSteps(): Steps<{ tokens: Uint8Array[]; scores: Float32Array }> {
    if (entries) return entries;
    const tokens: Uint8Array[] = [];
    const scores = new Float32Array(vocabSize).fill(MISSING_TOKEN_SCORE);
    for (let at = 12; at < bytes.length; ) {
      if (tokens.length % ENTRY_STEP === ENTRY_STEP - 1) yield;
      const length = bytes.readUInt32LE(at + 4);
      scores[tokens.length] = bytes.readFloatLE(at);
      tokens.push(bytes.subarray(at + 8, at + 8 + length));
      at += 8 + length;
    }
    while (tokens.length < vocabSize) tokens.push(new Uint8Array(0));
    // A getter may have finished a second walk while this one waited at a checkpoint.
    return (entries ??= { tokens, scores });
  }
  const data: TokenizerData = {
    kind: 'scored',
    style: 'ajc1',
    get tokens() {
      return (entries ?? runNow(parsedSteps())).tokens;
    },
    get scores() {
      return (entries ?? runNow(parsedSteps())).scores;
    },
    maxTokenLength,
    ...(bosId !== undefined ? { bosId } : {}),
    ...(eosId !== undefined ? { eosId } : {}),
  };
  deferVocabularyWork(data, parsedSteps);
  return data;
}

// ignoreBOM keeps a leading U+FEFF: some vocabularies have it as a token of its own.
const utf8 = new TextDecoder('utf-8', { fatal: true, ignoreBOM: true });

/** The `.template*` sidecars of `file` that exist. */
export async function readAjc1Templates(file: string): Promise<Ajc1Templates> {
  const templates: Ajc1Templates = {};
  for (const { suffix, key } of AJC1_TEMPLATES) {
    const bytes = await readSidecar(file + suffix);
    if (!bytes) continue;
    try {
      templates[key] = utf8.decode(bytes);
    } catch {
      fail('BAD_HEADER', 'prompt template is not valid UTF-8', { path: file + suffix });
    }
  }
  return templates;
}

/**
 * Starts native prefaultWeightSpans over the tensors the forward pass reads whole (all but an
 * untied embedding, read a row at a time) while the vocabulary sidecar is read; it only saves
 * time, so nothing it does fails the read.
 */
function startPrefault(src: MappedSource, config: DecoderConfig, tensors: TensorView[]): void {
  const streamed: number[] = [];
  const partial: number[] = [];
  for (const t of tensors) {
    const into = t.name === N.embed && !config.tieWordEmbeddings ? partial : streamed;
    into.push(t.byteOffset, t.byteOffset + t.byteLength);
    if (t.scales) into.push(t.scales.byteOffset, t.scales.byteOffset + t.scales.byteLength);
  }
  try {
    native().prefaultWeightSpans(src.file, streamed, partial).catch(() => undefined);
  } catch {
    // an addon built before prefaultWeightSpans existed
  }
}

async function read(path: string, options: ReadOptions = {}): Promise<ModelWeights> {
  const src = mapFile(path);
  try {
    const { config, tensors } = parse(src);
    if (options.prefaultWeights) startPrefault(src, config, tensors);
    const tokBytes = options.vocabulary === false ? undefined : await readSidecar(`${path}.tokenizer`);
    const tokenizer = tokBytes ? await runYielding(parseAjc1TokenizerSteps(tokBytes, `${path}.tokenizer`, config.vocabSize)) : undefined;
    if (tokenizer?.kind === 'scored') {
      config.bosTokenId = tokenizer.bosId;
      config.eosTokenIds = tokenizer.eosId === undefined ? undefined : [tokenizer.eosId];
    }
    const templates = await readAjc1Templates(path);
    return {
      format: 'ajc1',
      path,
      architecture: 'qwen3',
      config,
      tensors,
      metadata: Object.keys(templates).length ? { templates } : {},
      tokenizer,
      sources: [src],
    };
  } catch (error) {
    src.close();
    throw error;
  }
}

// ---- writer ----------------------------------------------------------------------------------

/** The group size to write: options, else the source's Q8_0 group size, else 64 halved until it fits. */
export function chooseGroupSize(c: DecoderConfig, requested: number | undefined, sourceGroupSize: number | undefined): number {
  if (requested !== undefined) {
    if (!Number.isInteger(requested) || !groupSizeFits(c, requested)) {
      throw rangeError(`groupSize ${requested} does not divide dim ${c.hiddenSize}, hidden_dim ${c.intermediateSize} and n_heads*head_dim ${c.numHeads * c.headDim}`);
    }
    return requested;
  }
  if (sourceGroupSize !== undefined && groupSizeFits(c, sourceGroupSize)) return sourceGroupSize;
  let gs = 64;
  while (gs > 1 && !groupSizeFits(c, gs)) gs /= 2;
  return gs;
}

async function writeQuantized(job: WriteJob, view: TensorView, groupSize: number): Promise<void> {
  const { q8Chunks, rawChunks, releasePages } = writing();
  if (view.dtype === 'q8_0' && view.scales?.groupSize === groupSize && !view.transposed) {
    await job.writeRaw(rawChunks(view), view.name);
    await job.writeRaw(rawChunks(view, view.scales.byteOffset, view.scales.byteLength), view.name);
    releasePages(view);
    return;
  }
  // The values go out chunk by chunk; the scales follow them, so they are kept until the end.
  const scales = new Float32Array(numel(view.shape) / groupSize);
  let groups = 0;
  for await (const chunk of q8Chunks(view, groupSize)) {
    await job.write(new Uint8Array(chunk.q.buffer, chunk.q.byteOffset, chunk.q.length), view.name);
    scales.set(chunk.scales, groups);
    groups += chunk.scales.length;
  }
  await job.write(new Uint8Array(scales.buffer), view.name);
}

/**
 * The bytes of a `.tokenizer` for scored token data (trailing empty entries left out; no bos/eos:
 * -1), written in slices that let the event loop turn.
 */
export async function encodeAjc1Tokenizer(t: Extract<TokenizerData, { kind: 'scored' }>, fallbackBos: number | undefined, fallbackEos: number | undefined): Promise<Buffer> {
  await runYielding(decodeVocabularySteps(t));
  return runYielding(encodeAjc1TokenizerSteps(t, t.bosId ?? fallbackBos ?? -1, t.eosId ?? fallbackEos ?? -1));
}

function* encodeAjc1TokenizerSteps(t: Extract<TokenizerData, { kind: 'scored' }>, bos: number, eos: number): Steps<Buffer> {
  const { tokens, scores } = t;
  let count = tokens.length;
  // Trailing empty entries are the ids the original file had no entry for.
  while (count > 0 && tokens[count - 1].length === 0) count--;
  let size = 12;
  for (let i = 0; i < count; i++) {
    if (i % ENTRY_STEP === ENTRY_STEP - 1) yield;
    size += 8 + tokens[i].length;
  }
  const out = Buffer.alloc(size);
  out.writeUInt32LE(t.maxTokenLength, 0);
  out.writeInt32LE(bos, 4);
  out.writeInt32LE(eos, 8);
  let o = 12;
  for (let i = 0; i < count; i++) {
    if (i % ENTRY_STEP === ENTRY_STEP - 1) yield;
    out.writeFloatLE(scores[i], o);
    out.writeUInt32LE(tokens[i].length, o + 4);
    out.set(tokens[i], o + 8);
    o += 8 + tokens[i].length;
  }
  return out;
}

/**
 * The `.tokenizer` to write beside the checkpoint: converted and encoded in the worker where one
 * is registered (vocab-offload.ts), else here.
 */
export async function ajc1TokenizerOf(weights: ModelWeights, vocabSize: number, bos: number | undefined, eos: number | undefined): Promise<Uint8Array | undefined> {
  const off = await ajc1TokenizerOffThread(weights, vocabSize, bos, eos);
  const made = off !== 'here' ? off : await ajc1TokenizerHere(weights, vocabSize, bos, eos);
  if (made && made.entries > vocabSize) throw rangeError(`the tokenizer has ${made.entries} entries, more than vocab_size ${vocabSize}`);
  return made?.bytes;
}

/** ajc1TokenizerOf on this thread (and the worker's side of it). */
export async function ajc1TokenizerHere(weights: ModelWeights, vocabSize: number, bos: number | undefined, eos: number | undefined): Promise<{ bytes: Uint8Array; entries: number } | undefined> {
  const { ajc1Vocabulary } = writing();
  const tok = await ajc1Vocabulary(weights, vocabSize);
  if (!tok) return undefined;
  if (tok.tokens.length > vocabSize) return { bytes: new Uint8Array(0), entries: tok.tokens.length };
  return { bytes: await encodeAjc1Tokenizer(tok, bos, eos), entries: tok.tokens.length };
}

async function write(weights: ModelWeights, path: string, options: WriteOptions = {}): Promise<void> {
  const { ajc1TemplatesFromHf, FLOAT_READABLE_DTYPES, hfSideFolder, requireTensor, runWriteJob, tensorsByName, writeOutputs } = writing();
  const c = weights.config;
  if (!isDecoderConfig(c) || unheldFields(c, ['qkNorm']).length > 0) throw new UnsupportedError(`ajc1 holds Qwen3-style decoders, not a ${c.architecture} model`);
  if (!c.qkNorm || c.ropePairing !== 'half' || c.ropeTheta !== AJC1_ROPE_THETA || c.rmsNormEps !== AJC1_RMS_EPS) {
    throw new UnsupportedError(
      'ajc1 (qwen3.c) fixes QK-norm, half-split RoPE pairs, rope theta 1e6 and RMSNorm eps 1e-6; this model has ' +
        `qkNorm ${c.qkNorm}, ${c.ropePairing} pairs, theta ${c.ropeTheta}, eps ${c.rmsNormEps}`,
    );
  }
  const byName = tensorsByName(weights);
  const sourceGs = byName.get(N.embed)?.dtype === 'q8_0' ? byName.get(N.embed)?.scales?.groupSize : undefined;
  const groupSize = chooseGroupSize(c, options.groupSize, sourceGs ?? c.groupSize);
  const shared = c.tieWordEmbeddings ? 1 : 0;
  validateAjc1Config(c, groupSize, shared, weights.path);
  const plan = ajc1Layout(c).map((t) => ({ t, view: requireTensor(weights, byName, t.name, t.shape, FLOAT_READABLE_DTYPES) }));
  const total = ajc1FileSize(c, groupSize);
  // Sidecars are prepared (and checked) before the checkpoint is written: the source's own, else
  // made from the tokenizer files of the HF folder the weights were read from (export.py).
  const hfFolder = hfSideFolder(weights);
  const tokenizer = await ajc1TokenizerOf(weights, c.vocabSize, c.bosTokenId, c.eosTokenIds?.[0]);
  const templates = (weights.metadata.templates as Ajc1Templates | undefined) ?? (hfFolder ? await ajc1TemplatesFromHf(hfFolder) : undefined);

  await writeOutputs(weights, options, async (out) => {
    // Sidecars first: a destination that is an input is refused before the checkpoint is written.
    if (tokenizer) await out.writeFile(`${path}.tokenizer`, tokenizer);
    for (const [file, text] of ajc1TemplateFiles(path, templates)) await out.writeFile(file, text);
    await runWriteJob(out.file(path), total, options, async (job) => {
      const header = Buffer.alloc(AJC1_HEADER_BYTES);
      header.writeUInt32LE(AJC1_MAGIC, 0);
      [AJC1_VERSION, c.hiddenSize, c.intermediateSize, c.numLayers, c.numHeads, c.numKvHeads, c.vocabSize, c.maxSeqLen, c.headDim, shared, groupSize].forEach(
        (v, i) => header.writeInt32LE(v, 4 + 4 * i),
      );
      await job.write(header);
      for (const { t, view } of plan) {
        if (t.quantized) await writeQuantized(job, view, groupSize);
        else await job.writeTensor(view, 'f32');
      }
    });
  });
}

/** The `.template*` sidecars of `file` for the templates given: [path, text] pairs. */
export function ajc1TemplateFiles(file: string, templates: Ajc1Templates | undefined): [string, string][] {
  if (!templates || typeof templates !== 'object') return [];
  return AJC1_TEMPLATES.filter(({ key }) => typeof templates[key] === 'string').map(({ suffix, key }) => [file + suffix, templates[key]!]);
}

export const ajc1Format: FormatModule = {
  name: 'ajc1',
  title: 'ajc1 (qwen3.c)',
  detect: detectAjc1,
  read,
  write,
  quantTypes: ['q8_0'],
};
