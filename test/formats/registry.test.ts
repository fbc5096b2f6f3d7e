/**
 * The format registry (lib/formats/index.ts): each FORMATS row states what detection and the CLI
 * read (name, title, whether it holds a vocabulary, its quant types) without loading its module;
 * here each row is compared with the module it loads, and detection is checked to load no format
 * module (llama2.c, detected last by its header's sizes, loads llama2c-header.js only).
 */
import { execFileSync } from 'node:child_process';
import * as path from 'node:path';
import { FORMATS } from '../../lib/formats';
import type { FormatModule, Probe } from '../../lib/formats/types';
import { fixture } from '../helpers/fixtures';
import { ajc1Format } from '../../lib/formats/containers/ajc1';
import { embdFormat } from '../../lib/formats/containers/embd';
import { ggufFormat } from '../../lib/formats/containers/gguf-format';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { moonFormat } from '../../lib/formats/containers/moon';
import { npyFormat } from '../../lib/formats/containers/npy';
import { safetensorsFormat } from '../../lib/formats/containers/safetensors';
import { sepweightFormat } from '../../lib/formats/containers/sepweight';
import { tllmFormat } from '../../lib/formats/containers/tllm';

const MODULES: FormatModule[] = [tllmFormat, moonFormat, embdFormat, ajc1Format, ggufFormat, npyFormat, safetensorsFormat, sepweightFormat, llama2cFormat];

test('each row states what its module does, in detection order', () => {
  expect(FORMATS.map((f) => f.name)).toEqual(MODULES.map((m) => m.name));
  FORMATS.forEach((row, i) => {
    const m = MODULES[i];
    expect([row.title, row.holdsVocabulary, row.quantTypes, typeof row.write]).toEqual([m.title, m.holdsVocabulary, m.quantTypes, typeof m.write]);
  });
});

test("each row's detector agrees with its module's on every format's magic and a folder", () => {
  const file = (head: number[]): Probe => ({ path: 'f', isDirectory: false, head: Buffer.from(head), entries: [] });
  const u32 = (v: number) => [v & 0xff, (v >>> 8) & 0xff, (v >>> 16) & 0xff, v >>> 24];
  const heads = [0x544c4c4d, 0x4d4f4f4e, 0x44424d45, 0x616a6331, 0x46554747, 0x12345678].map((m) => file([...u32(m), ...new Array(60).fill(0)]));
  const npy = file([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, 1, 0, ...new Array(56).fill(0x20)]);
  const safetensors = file([...u32(2), 0, 0, 0, 0, 0x7b, 0x7d, ...new Array(54).fill(0x20)]);
  const folder = (entries: string[]): Probe => ({ path: 'd', isDirectory: true, head: Buffer.alloc(0), entries });
  const probes: Probe[] = [...heads, npy, safetensors, file([]), folder(['mid', 'start']), folder(['model.safetensors']), folder(['model.safetensors.index.json']), folder(['config.json'])];
  FORMATS.forEach((row, i) => {
    for (const probe of probes) expect([row.name, row.detect(probe)]).toEqual([row.name, MODULES[i].detect(probe)]);
  });
});

test('detecting a GGUF or an ajc1 file loads no other format module', () => {
  const root = path.join(__dirname, '..', '..');
  const script = (magic: string) =>
    `const f = require('./dist/cjs/formats'); const fs = require('fs'); const p = require('path').join(require('os').tmpdir(), 'wm-registry-' + process.pid);` +
    `fs.writeFileSync(p, Buffer.concat([Buffer.from('${magic}', 'latin1'), Buffer.alloc(60)])); try { f.detectFormat(p) } catch {} fs.rmSync(p);` +
    `console.log(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('/dist/cjs/formats/')).map((k) => k.split('/').pop())))`;
  for (const magic of ['GGUF', '1cja']) {
    const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script(magic)], { cwd: root, encoding: 'utf8' }).trim()) as string[];
    for (const other of ['tllm.js', 'moon.js', 'embd.js', 'ajc1.js', 'gguf.js', 'npy.js', 'safetensors.js', 'sepweight.js', 'llama2c.js', 'gguf-writer.js', 'hf-config.js', 'vocab-convert.js', 'output-files.js']) {
      expect(loaded).not.toContain(other);
    }
  }
});

test('detecting a llama2.c checkpoint (no magic: detected last) loads its header reader and no format module', () => {
  const root = path.join(__dirname, '..', '..');
  const script = `require('./dist/cjs/formats').detectFormat(${JSON.stringify(fixture('llama-stories260k', 'stories260K.bin'))});` +
    `console.log(JSON.stringify(Object.keys(require.cache).filter((k) => k.includes('/dist/cjs/formats/')).map((k) => k.split('/').pop())))`;
  const loaded = JSON.parse(execFileSync(process.execPath, ['-e', script], { cwd: root, encoding: 'utf8' }).trim()) as string[];
  expect(loaded).toContain('llama2c-header.js');
  for (const other of ['tllm.js', 'moon.js', 'embd.js', 'ajc1.js', 'gguf.js', 'npy.js', 'safetensors.js', 'sepweight.js', 'llama2c.js', 'hf-config.js', 'vocab-convert.js', 'output-files.js']) {
    expect(loaded).not.toContain(other);
  }
});
