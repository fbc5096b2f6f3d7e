/**
 * The page cache as the huge-page tests see it: whether transparent huge pages can be used here,
 * this process's mappings of a file with their FilePmdMapped bytes (/proc/self/smaps), and a file's
 * pages dropped from the cache so that a load reads it as a cold file.
 */
import * as fs from 'node:fs';
import type { ModelWeights } from '../../lib/addon/weights';

const THP = '/sys/kernel/mm/transparent_hugepage/enabled';

/** Linux with transparent huge pages not `never`. */
export const thpUsable = process.platform === 'linux' && fs.existsSync(THP) && !fs.readFileSync(THP, 'utf8').includes('[never]');

export interface MappedPart {
  start: number;
  end: number;
  pmdBytes: number;
}

/** This process's mappings of `file` (one per VMA), with their FilePmdMapped bytes. */
export function fileMappings(file: string): MappedPart[] {
  const real = fs.realpathSync(file);
  const parts: MappedPart[] = [];
  let current: MappedPart | undefined;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
    if (head) {
      current = line.trimEnd().endsWith(` ${real}`) ? { start: parseInt(head[1], 16), end: parseInt(head[2], 16), pmdBytes: 0 } : undefined;
      if (current) parts.push(current);
    } else if (current && line.startsWith('FilePmdMapped:')) current.pmdBytes = Number(line.split(/\s+/)[1]) * 1024;
  }
  return parts;
}

/** Drops the file's page cache: written back, mapped here page by page, then paged out (MADV_PAGEOUT). */
export function evict(weights: ModelWeights): void {
  const source = weights.sources[0];
  const fd = fs.openSync(weights.path, 'r');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  let sink = 0;
  for (let i = 0; i < source.bytes.length; i += 4096) sink ^= source.bytes[i];
  if (sink < 0) throw new Error('unreachable');
  source.file.advise(0, source.byteLength, 'pageout');
}
