/**
 * llama2.c checkpoints (FORMATS.md §7; karpathy/llama2.c export.py, run.c, runq.c).
 *
 * v0 (legacy, no magic): 7 × i32 (dim, hidden_dim, n_layers, n_heads, n_kv_heads, vocab_size,
 * seq_len; a negative vocab_size means a separate classifier), then fp32 tensors in run.c order:
 * token embedding [V,D], rms_att [L,D], wq [L,H·hs,D], wk [L,KV·hs,D], wv [L,KV·hs,D],
 * wo [L,D,H·hs], rms_ffn [L,D], w1 [L,F,D], w2 [L,D,F], w3 [L,F,D], rms_final [D], the two legacy
 * freq_cis blocks [seq_len, hs/2] (unused by run.c), then wcls [V,D] if not shared. hs = D/H.
 * v1/v2 ("ak42" = u32 0x616B3432, i32 version): a 256-byte header holding the 7 ints at 8,
 * u8 shared_classifier at 36 and (v2) i32 group_size at 37. v1: fp32 norms (att ×L, ffn ×L,
 * final), then embedding, wq.., w3, [wcls]. v2: the same norms, then Q8_0 tensors, each one (per
 * layer) as int8 q[numel] followed by f32 scales[numel/GS]. Nothing may follow the last tensor.
 * RoPE pairs are interleaved (2i, 2i+1), θ = 10000, RMSNorm eps = 1e-5, BOS 1 / EOS 2.
 *
 * The tokenizer (`tokenizer.bin`: i32 max_token_length, then per token f32 score, i32 length,
 * bytes) is looked up beside the checkpoint as `tokenizer.bin`, then `tok<vocab>.bin` (the name
 * llama2.c's custom-vocabulary tooling gives it); readLlama2cTokenizer reads any path.
 *
 * Writer: v0 (fp32). q/k rows are permuted back to interleaved order when the source is 'half';
 * the classifier is shared when the config ties it or its bytes equal the embedding's (as
 * export.py decides); the freq_cis blocks are the source's metadata.ropeTables when they have the
 * right shape (a v0 file, or a sepweight tree written from one), else computed in float64 and
 * rounded to float32 (run.c never reads them).
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { UnsupportedError } from '../../base/errors';
import { DECODER_NAMES, decoderTensorShapes, isDecoderConfig, unheldFields, type DecoderConfig } from '../../architectures/decoder';
import { mapFile, type MappedSource } from '../../addon/mapping';
import { numel, type ModelWeights, type TensorView, type TokenizerData } from '../../addon/weights';
import { ByteCursor, fail } from './bytes';
import { FLOAT_READABLE_DTYPES, releasePages, viewBytes } from '../quantization/tensor-data';
import type { FormatModule, ReadOptions, WriteOptions } from '../types';
import { encodeLlama2cTokenizer, LLAMA2C_BOS, LLAMA2C_EOS, readLlama2cTokenizer } from '../vocabulary/llama2c-tokenizer';
import { lazy } from '../../base/lazy';
import { detectLlama2c, LLAMA2C_HEADER_BYTES, LLAMA2C_MAGIC, LLAMA2C_V0_HEADER_BYTES, readLlama2cHeader, type Llama2cHeader } from './llama2c-header';

export { LLAMA2C_HEADER_BYTES, LLAMA2C_MAGIC, LLAMA2C_V0_HEADER_BYTES } from './llama2c-header';

/** The writer's modules, loaded by the first write: reading needs none of them. */
const writing = lazy(() => ({
  ...(require('../writing/rope-order') as typeof import('../writing/rope-order')),
  ...(require('../writing/output-files') as typeof import('../writing/output-files')),
  ...(require('../vocabulary/vocab-convert') as typeof import('../vocabulary/vocab-convert')),
  ...(require('../writing/write-job') as typeof import('../writing/write-job')),
}));

const THETA = 10000;
const EPS = 1e-5;

function configOf(h: Llama2cHeader): DecoderConfig {
  return {
    architecture: 'llama',
    hiddenSize: h.dim,
    intermediateSize: h.hiddenDim,
    numLayers: h.nLayers,
    numHeads: h.nHeads,
    numKvHeads: h.nKvHeads,
    headDim: h.dim / h.nHeads,
    vocabSize: h.vocabSize,
    maxSeqLen: h.seqLen,
    rmsNormEps: EPS,
    ropeTheta: THETA,
    ropePairing: 'interleaved',
    tieWordEmbeddings: h.shared,
    qkNorm: false,
    bosTokenId: LLAMA2C_BOS,
    eosTokenIds: [LLAMA2C_EOS],
    ...(h.groupSize !== undefined ? { groupSize: h.groupSize } : {}),
  };
}

/** One group of tensors in file order: a name per layer (or one name) and the canonical shape. */
interface Group {
  names: string[];
  shape: number[];
  quantized: boolean;
}

function groups(c: DecoderConfig, version: 0 | 1 | 2, shared: boolean): { before: Group[]; after: Group[] } {
  const layers = (f: (l: number) => string) => Array.from({ length: c.numLayers }, (_, l) => f(l));
  const shape = new Map(decoderTensorShapes({ ...c, tieWordEmbeddings: false }).map((t) => [t.name, t.shape]));
  const g = (names: string[], quantized: boolean): Group => ({ names, shape: shape.get(names[0])!, quantized });
  const q = version === 2;
  const embed = g([DECODER_NAMES.embed], q);
  const attnNorm = g(layers(DECODER_NAMES.attnNorm), false);
  const ffnNorm = g(layers(DECODER_NAMES.ffnNorm), false);
  const norm = g([DECODER_NAMES.norm], false);
  const matrices = [DECODER_NAMES.q, DECODER_NAMES.k, DECODER_NAMES.v, DECODER_NAMES.o].map((f) => g(layers(f), q));
  const ffn = [DECODER_NAMES.gate, DECODER_NAMES.down, DECODER_NAMES.up].map((f) => g(layers(f), q));
  const head = shared ? [] : [g([DECODER_NAMES.lmHead], q)];
  if (version === 0) {
    // freq_cis sits between rms_final and wcls: `after` follows it.
    return { before: [embed, attnNorm, ...matrices, ffnNorm, ...ffn, norm], after: head };
  }
  return { before: [attnNorm, ffnNorm, norm, embed, ...matrices, ...ffn, ...head], after: [] };
}

interface Parsed {
  header: Llama2cHeader;
  config: DecoderConfig;
  tensors: TensorView[];
  ropeTables?: RopeTables;
}

/**
 * v0's legacy RoPE tables (`freqs_cos`, `freqs_sin`, f32 [seq_len, head_size/2] each), kept in
 * metadata.ropeTables so that a conversion that passes through another format (sepweight stores
 * them in start/) can write the original bytes back: they were computed by torch in float32, whose
 * cos/sin no other code reproduces bit for bit.
 */
export interface RopeTables {
  cos: TensorView;
  sin: TensorView;
}

/** weights.metadata.ropeTables when both are float32 [seqLen, half]; else undefined. */
export function ropeTablesOf(weights: ModelWeights, seqLen: number, half: number): RopeTables | undefined {
  const t = weights.metadata.ropeTables as RopeTables | undefined;
  const fits = (v: TensorView | undefined) => v !== undefined && v.dtype === 'f32' && v.shape.length === 2 && v.shape[0] === seqLen && v.shape[1] === half && !v.transposed;
  return t && fits(t.cos) && fits(t.sin) ? t : undefined;
}

function parse(src: MappedSource): Parsed {
  const path = src.path;
  const header = readLlama2cHeader(src.bytes, path);
  const config = configOf(header);
  const cur = new ByteCursor(src.bytes, path, header.payloadOffset);
  const tensors: TensorView[] = [];
  const take = (group: Group) => {
    const n = numel(group.shape);
    for (const name of group.names) {
      if (group.quantized) {
        const gs = header.groupSize!;
        if (n % gs !== 0) fail('CONFIG_MISMATCH', `${name} has ${n} elements, not a multiple of group_size`, { path, offset: 37, expected: `multiple of ${gs}`, found: n });
        const byteOffset = cur.offset;
        cur.skip(n, `the int8 values of ${name}`);
        const scalesOffset = cur.offset;
        cur.skip((n / gs) * 4, `the scales of ${name}`);
        tensors.push({ name, dtype: 'q8_0', shape: group.shape, source: src, byteOffset, byteLength: n, scales: { byteOffset: scalesOffset, byteLength: (n / gs) * 4, groupSize: gs } });
      } else {
        const byteOffset = cur.offset;
        cur.skip(n * 4, `the data of ${name}`);
        tensors.push({ name, dtype: 'f32', shape: group.shape, source: src, byteOffset, byteLength: n * 4 });
      }
    }
  };
  const { before, after } = groups(config, header.version, header.shared);
  before.forEach(take);
  let ropeTables: RopeTables | undefined;
  if (header.version === 0) {
    const shape = [header.seqLen, config.headDim / 2];
    const byteLength = numel(shape) * 4;
    const table = (name: string): TensorView => {
      const byteOffset = cur.offset;
      cur.skip(byteLength, `the legacy ${name} block`);
      return { name, dtype: 'f32', shape, source: src, byteOffset, byteLength };
    };
    ropeTables = { cos: table('freqs_cos'), sin: table('freqs_sin') };
  }
  after.forEach(take);
  if (cur.remaining > 0) {
    fail('TRAILING_DATA', 'bytes follow the last tensor', { path, offset: cur.offset, expected: 0, found: cur.remaining });
  }
  return { header, config, tensors, ropeTables };
}

// ---------------------------------------------------------------------------------------------
// Tokenizer

/** tokenizer.bin or tok<vocab>.bin beside the checkpoint, if one holds exactly `vocabSize` tokens. */
function findTokenizer(checkpoint: string, vocabSize: number): { path: string; tokenizer: TokenizerData } | undefined {
  const dir = nodePath.dirname(checkpoint);
  for (const name of ['tokenizer.bin', `tok${vocabSize}.bin`]) {
    const file = nodePath.join(dir, name);
    if (!fs.existsSync(file) || !fs.statSync(file).isFile()) continue;
    const tokenizer = readLlama2cTokenizer(file);
    if (tokenizer.kind === 'scored' && tokenizer.tokens.length === vocabSize) return { path: file, tokenizer };
  }
  return undefined;
}

// ---------------------------------------------------------------------------------------------
// Reader

async function read(path: string, options: ReadOptions = {}): Promise<ModelWeights> {
  const src = mapFile(path);
  try {
    const { header, config, tensors, ropeTables } = parse(src);
    const found = options.vocabulary === false ? undefined : findTokenizer(path, config.vocabSize);
    const metadata: Record<string, unknown> = { version: header.version, sharedClassifier: header.shared };
    if (ropeTables) metadata.ropeTables = ropeTables;
    if (found) metadata.tokenizerPath = found.path;
    return {
      format: 'llama2c',
      path,
      architecture: 'llama',
      config,
      tensors,
      metadata,
      ...(found ? { tokenizer: found.tokenizer } : {}),
      sources: [src],
    };
  } catch (error) {
    src.close();
    throw error;
  }
}

// ---------------------------------------------------------------------------------------------
// Writer (v0)

/** freq_cis_real then freq_cis_imag, [seqLen, hs/2] each: cos/sin(pos · θ^(-2i/hs)). */
function computeFreqCis(seqLen: number, headSize: number): Buffer {
  const half = headSize / 2;
  const out = Buffer.alloc(seqLen * half * 8);
  for (let p = 0; p < seqLen; p++) {
    for (let i = 0; i < half; i++) {
      const angle = p / THETA ** ((2 * i) / headSize);
      out.writeFloatLE(Math.cos(angle), (p * half + i) * 4);
      out.writeFloatLE(Math.sin(angle), seqLen * half * 4 + (p * half + i) * 4);
    }
  }
  return out;
}

function sameBytes(a: TensorView, b: TensorView): boolean {
  if (a.dtype !== b.dtype || a.byteLength !== b.byteLength || a.dtype === 'q8_0' || a.transposed !== b.transposed) return false;
  return viewBytes(a).equals(viewBytes(b));
}

async function write(weights: ModelWeights, path: string, options: WriteOptions = {}): Promise<void> {
  const { llama2cVocabulary, permutedRowChunks, qkRowSources, requireTensor, runWriteJob, tensorsByName, writeOutputs } = writing();
  const c = weights.config;
  if (!isDecoderConfig(c)) throw new UnsupportedError(`llama2.c holds Llama models, not ${c.architecture}`);
  if (c.qkNorm) throw new UnsupportedError('llama2.c has no q/k norms (Qwen3 cannot be stored)');
  const unheld = unheldFields(c, []);
  if (unheld.length > 0) throw new UnsupportedError(`llama2.c holds no ${unheld.join(', ')} (this ${c.architecture} model has them)`);
  if (c.ropeFreqFactors) throw new UnsupportedError('llama2.c has no RoPE frequency factors (Llama 3 scaling cannot be stored)');
  if (c.headDim * c.numHeads !== c.hiddenSize) throw new UnsupportedError(`llama2.c derives head_dim = dim / n_heads; this model has head_dim ${c.headDim}`);
  if (Math.fround(c.ropeTheta) !== Math.fround(THETA) || Math.fround(c.rmsNormEps) !== Math.fround(EPS)) {
    throw new UnsupportedError(`llama2.c fixes rope θ = 10000 and eps = 1e-5; this model has θ = ${c.ropeTheta}, eps = ${c.rmsNormEps}`);
  }
  const byName = tensorsByName(weights);
  const plan = new Map(
    decoderTensorShapes({ ...c, tieWordEmbeddings: false })
      .filter((t) => t.name !== DECODER_NAMES.lmHead || byName.has(t.name))
      .map((t) => [t.name, requireTensor(weights, byName, t.name, t.shape, FLOAT_READABLE_DTYPES)]),
  );
  const embed = plan.get(DECODER_NAMES.embed)!;
  const head = plan.get(DECODER_NAMES.lmHead);
  const shared = c.tieWordEmbeddings || head === undefined || sameBytes(embed, head);
  if (!shared && head === undefined) throw new UnsupportedError('untied model without lm_head.weight');
  const config: DecoderConfig = { ...c, tieWordEmbeddings: shared };
  const headSize = c.hiddenSize / c.numHeads;

  const tables = ropeTablesOf(weights, c.maxSeqLen, headSize / 2);
  const freqCis = tables ? Buffer.concat([viewBytes(tables.cos), viewBytes(tables.sin)]) : computeFreqCis(c.maxSeqLen, headSize);

  const { before, after } = groups(config, 0, shared);
  const count = (gs: Group[]) => gs.reduce((a, g) => a + g.names.length * numel(g.shape) * 4, 0);
  const total = LLAMA2C_V0_HEADER_BYTES + count(before) + freqCis.length + count(after);
  // The vocabulary goes to tokenizer.bin beside the checkpoint, where llama2.c's run.c looks.
  const vocabulary = llama2cVocabulary(weights);
  await writeOutputs(weights, options, async (out) => {
    if (vocabulary) await out.sidecar(path, nodePath.join(nodePath.dirname(nodePath.resolve(path)), 'tokenizer.bin'), encodeLlama2cTokenizer(vocabulary));
    await runWriteJob(out.file(path), total, options, async (job) => {
      const header = Buffer.alloc(LLAMA2C_V0_HEADER_BYTES);
      [c.hiddenSize, c.intermediateSize, c.numLayers, c.numHeads, c.numKvHeads, shared ? c.vocabSize : -c.vocabSize, c.maxSeqLen].forEach((v, i) =>
        header.writeInt32LE(v, 4 * i),
      );
      await job.write(header);
      const emit = async (g: Group) => {
        for (const name of g.names) {
          const view = plan.get(name)!;
          const rows = qkRowSources(c, name, 'interleaved');
          if (rows) await job.writeFloats(permutedRowChunks(view, rows), 'f32', name);
          else await job.writeTensor(view, 'f32', false);
          releasePages(view);
        }
      };
      for (const g of before) await emit(g);
      await job.write(freqCis!, 'freq_cis');
      for (const g of after) await emit(g);
    });
  });
}

export const llama2cFormat: FormatModule = {
  name: 'llama2c',
  title: 'llama2.c checkpoint (.bin v0 fp32, ak42 v1 fp32 / v2 Q8_0)',
  detect: detectLlama2c,
  read,
  write,
};
