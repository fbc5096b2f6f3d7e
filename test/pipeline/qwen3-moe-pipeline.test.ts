/**
 * The tiny Qwen3-MoE (test/engines/qwen3-moe-models.ts) as a sepweight tree (the hf scheme: one
 * file per expert, mid/N/mlp.experts.E.{gate,up,down}_proj.weight.npy, and the router
 * mid/N/mlp.gate.weight.npy) split over 2 stage processes on loopback: the same logits, bit for
 * bit, and the same greedy tokens as the tree in one process (whose logits
 * test/engines/decoder-qwen3-moe.test.ts checks against llama.cpp's and the float64 reference).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import type { Model } from '../../lib/models/model';
import { readWeights } from '../../lib/formats';
import { closeWeights } from '../../lib/addon/weights';
import { WeightFormatError } from '../../lib/base/errors';
import { tempDir } from '../helpers/fixtures';
import { PROMPT } from '../engines/family-models';
import { qwen3MoeFolder, tinyQwen3Moe } from '../engines/qwen3-moe-models';
import { compileLib, expectStagesEqualOneProcess, killAll, spawnStage, type StageProcess } from './stages';

jest.setTimeout(180_000);

const tmp = tempDir('weightmap-moe-pipeline-');
const tree = path.join(tmp.dir, 'moe-tree');
let lib: ReturnType<typeof compileLib>;
const stages: StageProcess[] = [];
const models: Model[] = [];

beforeAll(async () => {
  lib = compileLib();
  const folder = qwen3MoeFolder(tinyQwen3Moe(), path.join(tmp.dir, 'hf'));
  await convert(folder, tree, { to: 'sepweight' });
  for (const layers of ['0-1', '2-2']) stages.push(await spawnStage(lib.main, tree, layers, ['--context', '64']));
});

afterAll(async () => {
  for (const m of models) m.dispose();
  await killAll(stages);
  lib?.cleanup();
  tmp.cleanup();
});

test('the tree keeps one file per expert and reads back as the Qwen3-MoE config', async () => {
  expect(fs.readdirSync(path.join(tree, 'mid', '1')).filter((f) => /^mlp\.experts\.\d+\.up_proj\.weight\.npy$/.test(f))).toHaveLength(8);
  expect(fs.existsSync(path.join(tree, 'mid', '1', 'mlp.gate.weight.npy'))).toBe(true);
  const w = await readWeights(tree);
  try {
    expect(w.config).toMatchObject({ architecture: 'qwen3moe', numExperts: 8, numExpertsPerToken: 2, expertIntermediateSize: 256, normTopkProb: true });
  } finally {
    closeWeights(w);
  }
});

test('2 stages: the single process\'s logits bit for bit and its greedy tokens', async () => {
  await expectStagesEqualOneProcess(tree, PROMPT, [['0-1', stages[0]], ['2-2', stages[1]]], models);
});

test('a tree with an expert past the count, or an expert of the wrong shape, is a typed WeightFormatError', async () => {
  const copy = path.join(tmp.dir, 'moe-tree-bad');
  fs.cpSync(tree, copy, { recursive: true });
  const mid = path.join(copy, 'mid', '0');
  fs.copyFileSync(path.join(mid, 'mlp.experts.0.up_proj.weight.npy'), path.join(mid, 'mlp.experts.8.up_proj.weight.npy'));
  await expect(readWeights(copy)).rejects.toMatchObject({ name: 'WeightFormatError', code: 'BAD_NAME', message: expect.stringContaining('mlp.experts.8.up_proj.weight') });
  fs.rmSync(path.join(mid, 'mlp.experts.8.up_proj.weight.npy'));
  // Expert 3's down_proj [256, 256] replaced by a matrix of another shape (the router's, [8, 256]).
  fs.copyFileSync(path.join(mid, 'mlp.gate.weight.npy'), path.join(mid, 'mlp.experts.3.down_proj.weight.npy'));
  const error = await readWeights(copy).catch((e: unknown) => e);
  expect(error).toBeInstanceOf(WeightFormatError);
  expect(error).toMatchObject({ code: 'SHAPE_MISMATCH', message: expect.stringContaining('mlp.experts.3.down_proj.weight') });
});
