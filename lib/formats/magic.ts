/**
 * The magics of the formats detected before GGUF (FORMATS order, formats/index.ts) and their
 * detectors: detecting a GGUF or ajc1 file runs these without loading the other formats' modules.
 */
import type { Probe } from './types';

export const TLLM_MAGIC = 0x544c4c4d;
export const MOON_MAGIC = 0x4d4f4f4e;
export const EMBD_MAGIC = 0x44424d45; // "EMBD"
export const AJC1_MAGIC = 0x616a6331;

/** A file whose first four bytes are `magic` (little-endian). */
function hasMagic(probe: Probe, magic: number): boolean {
  return !probe.isDirectory && probe.head.length >= 4 && probe.head.readUInt32LE(0) === magic;
}

export const detectTllm = (probe: Probe): boolean => hasMagic(probe, TLLM_MAGIC);
export const detectMoon = (probe: Probe): boolean => hasMagic(probe, MOON_MAGIC);
export const detectEmbd = (probe: Probe): boolean => hasMagic(probe, EMBD_MAGIC);
export const detectAjc1 = (probe: Probe): boolean => hasMagic(probe, AJC1_MAGIC);
