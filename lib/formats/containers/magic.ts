/**
 * The magics and detectors of every format but llama2.c (whose v0 files have no magic: it is
 * detected last, by its header's sizes, llama2c-header.ts): detection (FORMATS order,
 * formats/index.ts) runs these without loading the formats' modules.
 */
import type { Probe } from '../types';

export const TLLM_MAGIC = 0x544c4c4d;
export const MOON_MAGIC = 0x4d4f4f4e;
export const EMBD_MAGIC = 0x44424d45; // "EMBD"
export const AJC1_MAGIC = 0x616a6331;
export const GGUF_MAGIC = 0x46554747; // "GGUF" on disk
export const NPY_MAGIC = Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59]);
export const SAFETENSORS_MAX_HEADER_BYTES = 100_000_000;
export const SAFETENSORS_INDEX = 'model.safetensors.index.json';
export const SAFETENSORS_SINGLE = 'model.safetensors';

/** A file whose first four bytes are `magic` (little-endian). */
function hasMagic(probe: Probe, magic: number): boolean {
  return !probe.isDirectory && probe.head.length >= 4 && probe.head.readUInt32LE(0) === magic;
}

export const detectTllm = (probe: Probe): boolean => hasMagic(probe, TLLM_MAGIC);
export const detectMoon = (probe: Probe): boolean => hasMagic(probe, MOON_MAGIC);
export const detectEmbd = (probe: Probe): boolean => hasMagic(probe, EMBD_MAGIC);
export const detectAjc1 = (probe: Probe): boolean => hasMagic(probe, AJC1_MAGIC);
export const detectGguf = (probe: Probe): boolean => hasMagic(probe, GGUF_MAGIC);

export function detectNpy(probe: Probe): boolean {
  return !probe.isDirectory && probe.head.length >= 6 && probe.head.subarray(0, 6).equals(NPY_MAGIC);
}

/** A folder with model.safetensors or its index, or a file that starts with a plausible header length and '{'. */
export function detectSafetensors(probe: Probe): boolean {
  if (probe.isDirectory) return probe.entries.includes(SAFETENSORS_SINGLE) || probe.entries.includes(SAFETENSORS_INDEX);
  if (probe.head.length < 9) return false;
  const n = probe.head.readBigUInt64LE(0);
  return n >= 2n && n <= BigInt(SAFETENSORS_MAX_HEADER_BYTES) && probe.head[8] === 0x7b;
}

/** A folder with mid/ and start/ or end/. */
export function detectSepweight(probe: Probe): boolean {
  return probe.isDirectory && probe.entries.includes('mid') && (probe.entries.includes('start') || probe.entries.includes('end'));
}
