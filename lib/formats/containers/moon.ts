/**
 * MOON v2 (snowclipsed/moondream-zig), FORMATS.md §2: `u32 magic 0x4D4F4F4E, u32 version 2`, then
 * f16 tensor records until EOF: `u32 name_length (<= 256), u32 rank (<= 4), u32 data_length
 * (= element count), name, u64 shape[rank], f16 data`. Per-layer tensors are stacked on a leading
 * layer axis; vision and projection matrices are stored [in,out]. The file holds no
 * hyperparameters: they come from a `config.json` beside it, else Moondream2's.
 */
import * as fs from 'node:fs/promises';
import { isFamily } from '../../architectures';
import * as nodePath from 'node:path';
import { UnsupportedError } from '../../base/errors';
import { mapFile, type MappedSource } from '../../addon/mapping';
import { numel, type ModelWeights, type TensorView } from '../../addon/weights';
import { MOONDREAM2_CONFIG, MOONDREAM_NAMES as N, moondreamTensorSpecs, type MoondreamConfig } from '../../architectures/moondream';
import { moondreamConfigFromJson, moondreamConfigToJson, validateMoondreamConfig } from '../../architectures/moondream/config-json';

export { moondreamConfigFromJson, moondreamConfigToJson, validateMoondreamConfig };
import { ByteCursor, fail } from './bytes';
import { MOON_MAGIC, detectMoon } from './magic';
import type { FormatModule, ReadOptions, WriteOptions } from '../types';
import { lazy } from '../../base/lazy';

/** The writer's modules, loaded by the first write: reading needs none of them. */
const writing = lazy(() => ({
  ...(require('../writing/output-files') as typeof import('../writing/output-files')),
  ...(require('../writing/write-job') as typeof import('../writing/write-job')),
}));

export { MOON_MAGIC } from './magic';
export const MOON_VERSION = 2;
const MAX_NAME_BYTES = 256;
const MAX_RANK = 4;
const RECORD_HEADER_BYTES = 12;

/** One MOON record: a single tensor, or one per layer of the text or vision tower stacked. */
interface MoonRecord {
  file: string;
  /** Canonical name of the tensor (of layer `l` for stacked records). */
  canonical: (l: number) => string;
  stack?: 'text' | 'vision';
  /** Stored [in,out] (weights.py transposed it). */
  transposed: boolean;
}

const one = (file: string, name: string, transposed = false): MoonRecord => ({ file, canonical: () => name, transposed });
const stacked = (file: string, stack: 'text' | 'vision', canonical: (l: number) => string, transposed = false): MoonRecord => ({
  file,
  canonical,
  stack,
  transposed,
});

/** The 36 records in weights.py order (FORMATS.md §2.3). */
export const MOON_RECORDS: readonly MoonRecord[] = [
  one('word_token_embedding', N.wte),
  stacked('t_ln_w', 'text', (l) => N.textLn(l, 'weight')),
  stacked('t_ln_b', 'text', (l) => N.textLn(l, 'bias')),
  stacked('t_Wqkv_w', 'text', (l) => N.textQkv(l, 'weight')),
  stacked('t_Wqkv_b', 'text', (l) => N.textQkv(l, 'bias')),
  stacked('t_out_proj_w', 'text', (l) => N.textProj(l, 'weight')),
  stacked('t_out_proj_bias', 'text', (l) => N.textProj(l, 'bias')),
  stacked('t_fc1_w', 'text', (l) => N.textFc1(l, 'weight')),
  stacked('t_fc1_b', 'text', (l) => N.textFc1(l, 'bias')),
  stacked('t_fc2_w', 'text', (l) => N.textFc2(l, 'weight')),
  stacked('t_fc2_b', 'text', (l) => N.textFc2(l, 'bias')),
  one('t_linear_w', N.lmHead('weight')),
  one('t_linear_b', N.lmHead('bias')),
  one('t_ln_out_w', N.postLn('weight')),
  one('t_ln_out_b', N.postLn('bias')),
  one('v_patch_embedding_linear_w', N.patchEmb('weight'), true),
  one('v_patch_embedding_linear_b', N.patchEmb('bias')),
  one('v_pos_embedding', N.posEmb),
  stacked('v_Wqkv_w', 'vision', (l) => N.visQkv(l, 'weight'), true),
  stacked('v_Wqkv_b', 'vision', (l) => N.visQkv(l, 'bias')),
  stacked('v_out_proj_w', 'vision', (l) => N.visProj(l, 'weight'), true),
  stacked('v_out_proj_b', 'vision', (l) => N.visProj(l, 'bias')),
  stacked('v_fc1_w', 'vision', (l) => N.visFc1(l, 'weight'), true),
  stacked('v_fc1_b', 'vision', (l) => N.visFc1(l, 'bias')),
  stacked('v_fc2_w', 'vision', (l) => N.visFc2(l, 'weight'), true),
  stacked('v_fc2_b', 'vision', (l) => N.visFc2(l, 'bias')),
  stacked('v_norm1_w', 'vision', (l) => N.visLn1(l, 'weight')),
  stacked('v_norm1_b', 'vision', (l) => N.visLn1(l, 'bias')),
  stacked('v_norm2_w', 'vision', (l) => N.visLn2(l, 'weight')),
  stacked('v_norm2_b', 'vision', (l) => N.visLn2(l, 'bias')),
  one('v_norm_out_w', N.visPostLn('weight')),
  one('v_norm_out_b', N.visPostLn('bias')),
  one('v_proj_fc1_w', N.projFc1('weight'), true),
  one('v_proj_fc1_b', N.projFc1('bias')),
  one('v_proj_fc2_w', N.projFc2('weight'), true),
  one('v_proj_fc2_b', N.projFc2('bias')),
];

/** A record's per-layer stored shape and the full stored shape (with the layer axis). */
function recordShapes(rec: MoonRecord, c: MoondreamConfig, canonShapes: Map<string, number[]>): { layers: number; perLayer: number[]; stored: number[] } {
  const canon = canonShapes.get(rec.canonical(0));
  if (!canon) throw new Error(`internal: no canonical shape for ${rec.canonical(0)}`);
  const perLayer = rec.transposed ? [...canon].reverse() : canon;
  const layers = rec.stack === 'text' ? c.text.numLayers : rec.stack === 'vision' ? c.vision.numLayers : 1;
  return { layers, perLayer, stored: rec.stack ? [layers, ...perLayer] : perLayer };
}

function canonicalShapes(c: MoondreamConfig): Map<string, number[]> {
  return new Map(moondreamTensorSpecs(c).map((s) => [s.name, s.shape]));
}

// ---- configuration (config.json beside the file) -------------------------------------------




/** The config.json beside `file` if there is one, else Moondream2's configuration. */
async function loadConfig(file: string): Promise<{ config: MoondreamConfig; configPath?: string }> {
  const configPath = nodePath.join(nodePath.dirname(file), 'config.json');
  let text: string;
  try {
    text = await fs.readFile(configPath, 'utf8');
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT') return { config: MOONDREAM2_CONFIG };
    throw error;
  }
  let json: unknown;
  try {
    json = JSON.parse(text);
  } catch (cause) {
    return fail('BAD_HEADER', `config.json is not valid JSON: ${(cause as Error).message}`, { path: configPath });
  }
  if (typeof json !== 'object' || json === null || Array.isArray(json)) {
    return fail('BAD_HEADER', 'config.json is not a JSON object', { path: configPath });
  }
  return { config: moondreamConfigFromJson(json as Record<string, unknown>, configPath), configPath };
}

// ---- reader ----------------------------------------------------------------------------------

function parse(src: MappedSource, config: MoondreamConfig): TensorView[] {
  const path = src.path;
  const cur = new ByteCursor(src.bytes, path);
  const magic = cur.u32('the MOON magic');
  if (magic !== MOON_MAGIC) fail('BAD_MAGIC', 'not a MOON file', { path, offset: 0, expected: MOON_MAGIC, found: magic });
  const version = cur.u32('the MOON version');
  if (version !== MOON_VERSION) fail('BAD_VERSION', 'unsupported MOON version', { path, offset: 4, expected: MOON_VERSION, found: version });

  const byFile = new Map(MOON_RECORDS.map((r) => [r.file, r]));
  // Per-layer shapes do not depend on the layer count: take them from a one-layer model, so a
  // config.json claiming 2^31 layers builds nothing per layer (the records then disagree with it).
  const canon = canonicalShapes({ ...config, text: { ...config.text, numLayers: 1 }, vision: { ...config.vision, numLayers: 1 } });
  const seen = new Set<string>();
  const tensors: TensorView[] = [];
  while (cur.remaining > 0) {
    const at = cur.offset;
    cur.need(RECORD_HEADER_BYTES, 'a record header');
    const nameLength = cur.u32('name_length');
    const rank = cur.u32('shape_length');
    const dataLength = cur.u32('data_length');
    if (nameLength === 0 || nameLength > MAX_NAME_BYTES) {
      fail('BAD_NAME', 'tensor name length out of range', { path, offset: at, expected: `1..${MAX_NAME_BYTES}`, found: nameLength });
    }
    if (rank > MAX_RANK) fail('BAD_HEADER', 'tensor rank above 4', { path, offset: at + 4, expected: `<= ${MAX_RANK}`, found: rank });
    const nameAt = cur.offset;
    const name = cur.utf8(nameLength, 'a tensor name');
    const rec = byFile.get(name);
    if (!rec) fail('BAD_NAME', `unknown tensor '${name}'`, { path, offset: nameAt });
    if (seen.has(name)) fail('BAD_NAME', `tensor '${name}' appears twice`, { path, offset: nameAt });
    seen.add(name);
    const shapeAt = cur.offset;
    const shape: number[] = [];
    for (let i = 0; i < rank; i++) shape.push(cur.u64(`dimension ${i} of ${name}`));
    const { layers, perLayer, stored } = recordShapes(rec, config, canon);
    if (shape.length !== stored.length || shape.some((v, i) => v !== stored[i])) {
      fail('SHAPE_MISMATCH', `tensor '${name}' has a shape that disagrees with the configuration`, { path, offset: shapeAt, expected: stored, found: shape });
    }
    const count = numel(shape);
    if (dataLength !== count) {
      fail('BAD_HEADER', `data_length of '${name}' is not its element count`, { path, offset: at + 8, expected: count, found: dataLength });
    }
    const dataAt = cur.offset;
    cur.skip(2 * count, `the data of ${name}`);
    const perLayerBytes = 2 * numel(perLayer);
    for (let l = 0; l < layers; l++) {
      tensors.push({
        name: rec.canonical(l),
        dtype: 'f16',
        shape: perLayer,
        source: src,
        byteOffset: dataAt + l * perLayerBytes,
        byteLength: perLayerBytes,
        ...(rec.transposed ? { transposed: true } : {}),
      });
    }
  }
  for (const rec of MOON_RECORDS) {
    if (!seen.has(rec.file)) fail('MISSING_TENSOR', `the file has no tensor '${rec.file}'`, { path, offset: cur.offset });
  }
  return tensors;
}

async function read(path: string, _options: ReadOptions = {}): Promise<ModelWeights> {
  const { config, configPath } = await loadConfig(path);
  const src = mapFile(path);
  try {
    const tensors = parse(src, config);
    return {
      format: 'moon',
      path,
      architecture: 'moondream',
      config,
      tensors,
      metadata: configPath ? { configPath } : {},
      sources: [src],
    };
  } catch (error) {
    src.close();
    throw error;
  }
}

// ---- writer ----------------------------------------------------------------------------------

function sameConfig(a: MoondreamConfig, b: MoondreamConfig): boolean {
  return JSON.stringify(moondreamConfigToJson(a)) === JSON.stringify(moondreamConfigToJson(b));
}

/**
 * The config.json to write beside `file`: none for Moondream2's own configuration. Refuses (before
 * anything is written) to replace a config.json that is not a MOON one.
 */
async function planConfigBeside(file: string, config: MoondreamConfig): Promise<{ path: string; text: string } | undefined> {
  if (sameConfig(config, MOONDREAM2_CONFIG)) return undefined;
  const configPath = nodePath.join(nodePath.dirname(file), 'config.json');
  const existing = await fs.readFile(configPath, 'utf8').catch((e: NodeJS.ErrnoException) => (e.code === 'ENOENT' ? undefined : Promise.reject(e)));
  if (existing !== undefined) {
    let parsed: unknown;
    try {
      parsed = JSON.parse(existing);
    } catch {
      parsed = undefined;
    }
    const isMoon = typeof parsed === 'object' && parsed !== null && 'text_dim' in parsed;
    if (!isMoon) throw new UnsupportedError(`${configPath} exists and is not a MOON config.json; write the MOON file to another folder`);
  }
  return { path: configPath, text: `${JSON.stringify(moondreamConfigToJson(config), null, 1)}\n` };
}

async function write(weights: ModelWeights, path: string, options: WriteOptions = {}): Promise<void> {
  const { requireTensor, runWriteJob, tensorsByName, writeOutputs } = writing();
  if (!isFamily(weights.config, 'moondream')) {
    throw new UnsupportedError(`MOON holds only Moondream models, not a ${weights.config.architecture} model`);
  }
  const config = weights.config;
  validateMoondreamConfig(config, weights.path);
  const byName = tensorsByName(weights);
  const canon = canonicalShapes(config);
  const configFile = await planConfigBeside(path, config);
  const plan = MOON_RECORDS.map((rec) => {
    const { layers, stored } = recordShapes(rec, config, canon);
    const count = numel(stored);
    if (count > 0xffffffff) throw new UnsupportedError(`MOON cannot record ${rec.file}: ${count} elements exceed data_length's 32 bits`);
    const views = Array.from({ length: layers }, (_, l) => requireTensor(weights, byName, rec.canonical(l), canon.get(rec.canonical(l))!));
    return { rec, stored, count, views };
  });
  let total = 8;
  for (const p of plan) total += RECORD_HEADER_BYTES + Buffer.byteLength(p.rec.file) + 8 * p.stored.length + 2 * p.count;
  await writeOutputs(weights, options, async (out) => {
    if (configFile) await out.sidecar(path, configFile.path, configFile.text);
    await runWriteJob(out.file(path), total, options, async (job) => {
      const header = Buffer.alloc(8);
      header.writeUInt32LE(MOON_MAGIC, 0);
      header.writeUInt32LE(MOON_VERSION, 4);
      await job.write(header);
      for (const { rec, stored, count, views } of plan) {
        const name = Buffer.from(rec.file, 'utf8');
        const head = Buffer.alloc(RECORD_HEADER_BYTES + name.length + 8 * stored.length);
        head.writeUInt32LE(name.length, 0);
        head.writeUInt32LE(stored.length, 4);
        head.writeUInt32LE(count, 8);
        name.copy(head, RECORD_HEADER_BYTES);
        stored.forEach((v, i) => head.writeBigUInt64LE(BigInt(v), RECORD_HEADER_BYTES + name.length + 8 * i));
        await job.write(head, rec.file);
        for (const view of views) await job.writeTensor(view, 'f16', rec.transposed);
      }
    });
  });
}

export const moonFormat: FormatModule = {
  name: 'moon',
  title: 'MOON v2 (moondream-zig)',
  holdsVocabulary: false,
  detect: detectMoon,
  read,
  write,
};
