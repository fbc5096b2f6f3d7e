/**
 * TLLM (Chinmay41018/tiny_llama), FORMATS.md §1: a 36-byte header (u32 magic 0x544C4C4D, u32
 * version 1, i32 d, L, H, f, S, V, f32 dropout) then f32 records with no padding: matrices
 * `u64 rows, u64 cols, data` stored [in,out], vectors `u64 n, data`, in a fixed order; nothing
 * may follow the output projection.
 */
import { UnsupportedError } from '../../base/errors';
import { isFamily } from '../../architectures';
import { mapFile, type MappedSource } from '../../addon/mapping';
import type { ModelWeights, TensorView } from '../../addon/weights';
import { tllmTensorSpecs, tllmTensorSpecsInOrder, type TllmConfig } from '../../architectures/tllm';
import { validateTllmConfig } from '../../architectures/tllm/config-json';

export { validateTllmConfig };
import { ByteCursor, fail } from './bytes';
import { TLLM_MAGIC, detectTllm } from './magic';
import type { FormatModule, ReadOptions, WriteOptions } from '../types';
import { lazy } from '../../base/lazy';

/** The writer's modules, loaded by the first write: reading needs none of them. */
const writing = lazy(() => ({
  ...(require('../writing/output-files') as typeof import('../writing/output-files')),
  ...(require('../writing/write-job') as typeof import('../writing/write-job')),
}));

export { TLLM_MAGIC } from './magic';
export const TLLM_VERSION = 1;
export const TLLM_HEADER_BYTES = 36;
const TLLM_LAYER_NORM_EPS = 1e-5;


function readHeader(cur: ByteCursor): TllmConfig {
  const path = cur.path;
  const magic = cur.u32('the TLLM magic');
  if (magic !== TLLM_MAGIC) fail('BAD_MAGIC', 'not a TLLM file', { path, offset: 0, expected: TLLM_MAGIC, found: magic });
  const version = cur.u32('the TLLM version');
  if (version !== TLLM_VERSION) fail('BAD_VERSION', 'unsupported TLLM version', { path, offset: 4, expected: TLLM_VERSION, found: version });
  const config: TllmConfig = {
    architecture: 'tllm',
    hiddenSize: cur.i32('model_dim'),
    numLayers: cur.i32('num_layers'),
    numHeads: cur.i32('num_heads'),
    intermediateSize: cur.i32('ffn_hidden_dim'),
    maxSeqLen: cur.i32('max_sequence_length'),
    vocabSize: cur.i32('vocab_size'),
    dropout: cur.f32('dropout_rate'),
    layerNormEps: TLLM_LAYER_NORM_EPS,
  };
  validateTllmConfig(config, path);
  return config;
}

/** Parses and validates the mapped file; returns the views in file order. */
function parse(src: MappedSource): { config: TllmConfig; tensors: TensorView[] } {
  const cur = new ByteCursor(src.bytes, src.path);
  const config = readHeader(cur);
  const tensors: TensorView[] = [];
  // One spec at a time: every record takes at least 8 bytes, so a num_layers the file cannot
  // hold ends in TRUNCATED or SHAPE_MISMATCH after at most file-size / 8 steps.
  for (const spec of tllmTensorSpecsInOrder(config)) {
    const stored = spec.linear ? [spec.shape[1], spec.shape[0]] : spec.shape;
    const at = cur.offset;
    const found = stored.length === 2 ? [cur.u64(`the rows of ${spec.name}`), cur.u64(`the cols of ${spec.name}`)] : [cur.u64(`the length of ${spec.name}`)];
    if (found.some((v, i) => v !== stored[i])) {
      fail('SHAPE_MISMATCH', `record '${spec.name}' has dimensions that disagree with the header`, {
        path: src.path,
        offset: at,
        expected: stored,
        found,
      });
    }
    const byteLength = stored.reduce((a, b) => a * b, 4);
    const byteOffset = cur.offset;
    cur.skip(byteLength, `the data of ${spec.name}`);
    tensors.push({ name: spec.name, dtype: 'f32', shape: stored, source: src, byteOffset, byteLength, ...(spec.linear ? { transposed: true } : {}) });
  }
  if (cur.remaining > 0) {
    fail('TRAILING_DATA', 'bytes follow the output projection', { path: src.path, offset: cur.offset, expected: 0, found: cur.remaining });
  }
  return { config, tensors };
}

async function read(path: string, _options: ReadOptions = {}): Promise<ModelWeights> {
  const src = mapFile(path);
  try {
    const { config, tensors } = parse(src);
    return { format: 'tllm', path, architecture: 'tllm', config, tensors, metadata: {}, sources: [src] };
  } catch (error) {
    src.close();
    throw error;
  }
}

/** Size in bytes of the TLLM file for `c` (FORMATS.md §1.2's formula). */
export function tllmFileSize(c: TllmConfig): number {
  let size = TLLM_HEADER_BYTES;
  for (const spec of tllmTensorSpecs(c)) size += 8 * spec.shape.length + 4 * spec.shape.reduce((a, b) => a * b, 1);
  return size;
}

async function write(weights: ModelWeights, path: string, options: WriteOptions = {}): Promise<void> {
  const { requireTensor, runWriteJob, tensorsByName, writeOutputs } = writing();
  if (!isFamily(weights.config, 'gpt')) {
    throw new UnsupportedError(`TLLM holds only the TLLM GPT model, not a ${weights.config.architecture} model`);
  }
  const config = weights.config;
  validateTllmConfig(config, weights.path);
  const byName = tensorsByName(weights);
  const plan = tllmTensorSpecs(config).map((spec) => ({ spec, view: requireTensor(weights, byName, spec.name, spec.shape) }));
  await writeOutputs(weights, options, (out) => runWriteJob(out.file(path), tllmFileSize(config), options, async (job) => {
    const header = Buffer.alloc(TLLM_HEADER_BYTES);
    header.writeUInt32LE(TLLM_MAGIC, 0);
    header.writeUInt32LE(TLLM_VERSION, 4);
    [config.hiddenSize, config.numLayers, config.numHeads, config.intermediateSize, config.maxSeqLen, config.vocabSize].forEach((v, i) =>
      header.writeInt32LE(v, 8 + 4 * i),
    );
    header.writeFloatLE(config.dropout, 32);
    await job.write(header);
    for (const { spec, view } of plan) {
      const stored = spec.linear ? [spec.shape[1], spec.shape[0]] : spec.shape;
      const prefix = Buffer.alloc(8 * stored.length);
      stored.forEach((v, i) => prefix.writeBigUInt64LE(BigInt(v), 8 * i));
      await job.write(prefix, spec.name);
      await job.writeTensor(view, 'f32', spec.linear);
    }
  }));
}

export const tllmFormat: FormatModule = {
  name: 'tllm',
  title: 'TLLM (tiny_llama)',
  holdsVocabulary: false,
  detect: detectTllm,
  read,
  write,
};
