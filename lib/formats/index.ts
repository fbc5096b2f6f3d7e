/**
 * The format registry: detection by magic bytes and folder shape, and the generic read/write
 * entry points. Conversion is any reader plus any writer (lib/convert.ts).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { rangeError, UnsupportedError, WeightFormatError } from '../errors';
import type { FormatName, ModelWeights } from '../weights';
import { lazy } from '../lazy';
import { runYielding, type Steps } from '../steps';
import { detectAjc1, detectEmbd, detectGguf, detectMoon, detectNpy, detectSafetensors, detectSepweight, detectTllm } from './magic';
import { detectLlama2c } from './llama2c-header';
import type { FormatModule, Probe, ReadOptions, WriteOptions } from './types';
import { rememberAsRead } from './vocab-offload';

export type { FormatModule, ReadOptions, WriteOptions, WriteProgress } from './types';

/**
 * A format's row: its module (reader, writer and what they import) loads on the first read or
 * write. Every format detects without its module (magic.ts; llama2.c, which has no magic and is
 * detected last, by its header's sizes in llama2c-header.ts), so reading a file loads no other
 * format's module, and its own in a slice of its own.
 */
function formatRow(
  row: Pick<FormatModule, 'name' | 'title' | 'holdsVocabulary' | 'quantTypes'> & { detect?: FormatModule['detect'] },
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

/** In detection order: formats with a magic first, llama2.c v0 (no magic) last. */
export const FORMATS: readonly FormatModule[] = [
  formatRow({ name: 'tllm', title: 'TLLM (tiny_llama)', holdsVocabulary: false, detect: detectTllm }, () => (require('./tllm') as typeof import('./tllm')).tllmFormat),
  formatRow({ name: 'moon', title: 'MOON v2 (moondream-zig)', holdsVocabulary: false, detect: detectMoon }, () => (require('./moon') as typeof import('./moon')).moonFormat),
  formatRow({ name: 'embd', title: 'EMBD (cpp_embedder)', detect: detectEmbd }, () => (require('./embd') as typeof import('./embd')).embdFormat),
  formatRow({ name: 'ajc1', title: 'ajc1 (qwen3.c)', quantTypes: ['q8_0'], detect: detectAjc1 }, () => (require('./ajc1') as typeof import('./ajc1')).ajc1Format),
  formatRow({ name: 'gguf', title: 'GGUF (llama.cpp)', quantTypes: ['q8_0'], detect: detectGguf }, () => (require('./gguf-format') as typeof import('./gguf-format')).ggufFormat),
  formatRow({ name: 'npy', title: 'NumPy .npy', holdsVocabulary: false, detect: detectNpy }, () => (require('./npy') as typeof import('./npy')).npyFormat),
  formatRow({ name: 'safetensors', title: 'safetensors (Hugging Face)', detect: detectSafetensors }, () => (require('./safetensors') as typeof import('./safetensors')).safetensorsFormat),
  formatRow({ name: 'sepweight', title: 'sepweight tree (llm_sepweight .npy)', detect: detectSepweight }, () => (require('./sepweight') as typeof import('./sepweight')).sepweightFormat),
  formatRow({ name: 'llama2c', title: 'llama2.c checkpoint (.bin v0 fp32, ak42 v1 fp32 / v2 Q8_0)', detect: detectLlama2c }, () => (require('./llama2c') as typeof import('./llama2c')).llama2cFormat),
];

export function formatModule(name: FormatName): FormatModule {
  const found = FORMATS.find((f) => f.name === name);
  if (!found) throw rangeError(`unknown format '${name}'; known: ${FORMATS.map((f) => f.name).join(', ')}`);
  return found;
}

function probe(filePath: string): Probe {
  const stat = fs.statSync(filePath);
  if (stat.isDirectory()) return { path: filePath, isDirectory: true, head: Buffer.alloc(0), entries: fs.readdirSync(filePath) };
  const head = Buffer.alloc(Math.min(64, stat.size));
  const fd = fs.openSync(filePath, 'r');
  try {
    fs.readSync(fd, head, 0, head.length, 0);
  } finally {
    fs.closeSync(fd);
  }
  return { path: filePath, isDirectory: false, head, entries: [] };
}

/** The format of a file or folder, from its magic bytes or folder shape. */
export function detectFormat(filePath: string): FormatName {
  const p = probe(filePath);
  const found = FORMATS.find((f) => f.detect(p));
  if (!found) {
    throw new WeightFormatError('BAD_MAGIC', 'not a weight file or folder weightmap knows', {
      path: filePath,
      offset: 0,
      expected: FORMATS.map((f) => f.name).join(' | '),
      found: p.isDirectory
        ? p.entries.length > 0 ? `a folder of ${p.entries.slice(0, 8).join(', ')}` : 'an empty folder'
        : p.head.length > 0 ? p.head.subarray(0, 8).toString('hex') : 'an empty file (0 bytes)',
    });
  }
  return found.name;
}

/** Reads (maps and validates) weights in any known format. */
export async function readWeights(filePath: string, options: ReadOptions & { format?: FormatName } = {}): Promise<ModelWeights> {
  const format = options.format ?? detectFormat(filePath);
  const weights = await formatModule(format).read(filePath, options);
  rememberAsRead(weights);
  return weights;
}

/** Writes weights in `options.format`. */
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
  await module.write(weights, outPath, options);
}
