/**
 * The format registry: detection by magic bytes and folder shape, and the generic read/write
 * entry points. Conversion is any reader plus any writer (lib/formats/writing/convert.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { rangeError, UnsupportedError, WeightFormatError } from '../base/errors';
import type { FormatName, ModelWeights } from '../addon/weights';
import { lazy } from '../base/lazy';
import { runYielding, type Steps } from '../base/steps';
import { DETECTORS, detectedFormat, probe } from './containers/detectors';
import type { FormatModule, Probe, ReadOptions, WriteOptions } from './types';
import { rememberAsRead } from './vocabulary/vocab-offload';

export type { FormatModule, ReadOptions, WriteOptions, WriteProgress } from './types';

/**
 * A format's row: its module (reader, writer and what they import) loads on the first read or
 * write. Every format detects without its module (magic.ts; llama2.c, which has no magic and is
 * detected last, by its header's sizes in llama2c-header.ts), so reading a file loads no other
 * format's module, and its own in a slice of its own.
 */
function formatRow(
  row: Pick<FormatModule, 'name' | 'title' | 'holdsVocabulary' | 'quantTypes' | 'fileName'> & { detect?: FormatModule['detect'] },
  load: () => FormatModule,
): FormatModule {
  const module = lazy(load);
  return {
    ...row,
    detect: row.detect ?? ((probe) => module().detect(probe)),
    read: async (path, options) => (await runYielding(loading(module))).read(path, options),
    write: async (weights, path, options) => (await runYielding(loading(module))).write!(weights, path, options),
  };
}

/** The module in a slice of its own (steps.ts): a first load and the call's own first slice do not hold the event loop together. */
function* loading(module: () => FormatModule): Steps<FormatModule> {
  const loaded = module();
  yield;
  return loaded;
}

function detector(name: FormatName): (probe: Probe) => boolean {
  return DETECTORS.find(([n]) => n === name)![1];
}

/** In detection order (detectors.ts): formats with a magic first, llama2.c v0 (no magic) last. */
export const FORMATS: readonly FormatModule[] = [
  formatRow({ name: 'tllm', fileName: 'model.tllm', title: 'TLLM (tiny_llama)', holdsVocabulary: false, detect: detector('tllm') }, () => (require('./containers/tllm') as typeof import('./containers/tllm')).tllmFormat),
  formatRow({ name: 'moon', fileName: 'model.moon', title: 'MOON v2 (moondream-zig)', holdsVocabulary: false, detect: detector('moon') }, () => (require('./containers/moon') as typeof import('./containers/moon')).moonFormat),
  formatRow({ name: 'embd', fileName: 'model.weights', title: 'EMBD (cpp_embedder)', detect: detector('embd') }, () => (require('./containers/embd') as typeof import('./containers/embd')).embdFormat),
  formatRow({ name: 'ajc1', fileName: 'model.bin', title: 'ajc1 (qwen3.c)', quantTypes: ['q8_0'], detect: detector('ajc1') }, () => (require('./containers/ajc1') as typeof import('./containers/ajc1')).ajc1Format),
  formatRow({ name: 'gguf', fileName: 'model.gguf', title: 'GGUF (llama.cpp)', quantTypes: ['q8_0'], detect: detector('gguf') }, () => (require('./containers/gguf-format') as typeof import('./containers/gguf-format')).ggufFormat),
  formatRow({ name: 'npy', fileName: 'model.npy', title: 'NumPy .npy', holdsVocabulary: false, detect: detector('npy') }, () => (require('./containers/npy') as typeof import('./containers/npy')).npyFormat),
  formatRow({ name: 'safetensors', fileName: 'model.safetensors', title: 'safetensors (Hugging Face)', detect: detector('safetensors') }, () => (require('./containers/safetensors') as typeof import('./containers/safetensors')).safetensorsFormat),
  formatRow({ name: 'sepweight', title: 'sepweight tree (llm_sepweight .npy)', detect: detector('sepweight') }, () => (require('./containers/sepweight') as typeof import('./containers/sepweight')).sepweightFormat),
  formatRow({ name: 'llama2c', fileName: 'model.bin', title: 'llama2.c checkpoint (.bin v0 fp32, ak42 v1 fp32 / v2 Q8_0)', detect: detector('llama2c') }, () => (require('./containers/llama2c') as typeof import('./containers/llama2c')).llama2cFormat),
];

/** The reader/writer module of a format by name (RangeError for an unknown name). */
export function formatModule(name: FormatName): FormatModule {
  const found = FORMATS.find((f) => f.name === name);
  if (!found) throw rangeError(`unknown format '${name}'; known: ${FORMATS.map((f) => f.name).join(', ')}`);
  return found;
}

/** The format of a file or folder, from its magic bytes or folder shape. */
export function detectFormat(filePath: string): FormatName {
  const p = probe(filePath);
  const found = detectedFormat(p);
  if (found === undefined) {
    throw new WeightFormatError('BAD_MAGIC', 'not a weight file or folder weightmap knows', {
      path: filePath,
      offset: 0,
      expected: FORMATS.map((f) => f.name).join(' | '),
      found: p.isDirectory
        ? p.entries.length > 0 ? `a folder of ${p.entries.slice(0, 8).join(', ')}` : 'an empty folder'
        : p.head.length > 0 ? p.head.subarray(0, 8).toString('hex') : 'an empty file (0 bytes)',
    });
  }
  return found;
}

/** Reads (maps and validates) weights in any known format. */
export async function readWeights(filePath: string, options: ReadOptions & { format?: FormatName } = {}): Promise<ModelWeights> {
  const format = options.format ?? detectFormat(filePath);
  const weights = await formatModule(format).read(filePath, options);
  rememberAsRead(weights);
  return weights;
}

/**
 * Where a write to `outPath` in `format` goes: a path ending in a separator, or an existing
 * folder, is a folder to write the format's file into (model.gguf, model.safetensors, ...); a
 * format whose output is a folder (sepweight) writes the folder itself.
 */
export function outputPathOf(outPath: string, format: FormatName): string {
  const { fileName } = formatModule(format);
  const slash = outPath.endsWith('/') || outPath.endsWith(path.sep);
  const bare = slash ? path.join(outPath, '.') : outPath;
  let stat: fs.Stats | undefined;
  try {
    stat = fs.statSync(bare);
  } catch {
    stat = undefined; // absent (or under a file: the write reports it)
  }
  if (slash && stat !== undefined && !stat.isDirectory()) throw rangeError(`the output ${outPath} names a folder, but ${bare} is a file`);
  if (!slash && stat?.isDirectory() !== true) return outPath;
  return fileName === undefined ? bare : path.join(bare, fileName);
}

/** Writes weights in `options.format` (to a folder's model.<ext> when `outPath` names a folder: outputPathOf). */
export async function writeWeights(
  weights: ModelWeights,
  outPath: string,
  options: WriteOptions & { format: FormatName },
): Promise<void> {
  const module = formatModule(options.format);
  if (!module.write) throw rangeError(`weightmap cannot write ${module.title}`);
  const quantTypes = module.quantTypes ?? [];
  if (options.quant !== undefined && !quantTypes.includes(options.quant)) {
    throw new UnsupportedError(`${module.title} stores no ${options.quant} weights${quantTypes.length ? ` (it stores ${quantTypes.join(', ')})` : ''}`);
  }
  if (options.groupSize !== undefined && quantTypes.length === 0) {
    throw new UnsupportedError(`${module.title} stores no quantized weights: a group size does not apply`);
  }
  await module.write(weights, outputPathOf(outPath, options.format), options);
}
