/**
 * Format detection without any format's module: the probe of a path (a file's first bytes, a
 * folder's entries) and every format's detector, in detection order (formats with a magic first,
 * magic.ts; llama2.c v0, which has no magic, last, by its header's sizes). formats/index.ts
 * detects inputs with it; output-files.ts asks whether a file beside an output is a model.
 */
import * as fs from 'node:fs';
import type { FormatName } from '../../addon/weights';
import { detectAjc1, detectEmbd, detectGguf, detectMoon, detectNpy, detectSafetensors, detectSepweight, detectTllm } from './magic';
import { detectLlama2c } from './llama2c-header';
import type { Probe } from '../types';

export const DETECTORS: readonly (readonly [FormatName, (probe: Probe) => boolean])[] = [
  ['tllm', detectTllm],
  ['moon', detectMoon],
  ['embd', detectEmbd],
  ['ajc1', detectAjc1],
  ['gguf', detectGguf],
  ['npy', detectNpy],
  ['safetensors', detectSafetensors],
  ['sepweight', detectSepweight],
  ['llama2c', detectLlama2c],
];

export function probe(filePath: string): Probe {
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

/** The format `p` is detected as, if any. */
export function detectedFormat(p: Probe): FormatName | undefined {
  return DETECTORS.find(([, detect]) => detect(p))?.[0];
}
