/**
 * The tiny gpt-oss (test/engines/gptoss-models.ts; its logits checked against llama.cpp's in
 * test/engines/decoder-gptoss.test.ts) as a sepweight tree (the hf scheme: a file per expert
 * matrix as Qwen3-MoE's trees, the q/k/v/o biases and sinks as self_attn.*_proj.bias and
 * self_attn.sinks, the router's bias and the stacked expert biases as mlp.gate.bias and
 * mlp.experts.{gate,up,down}_proj.bias) split over 2 stage processes on loopback, layer 0 (sliding)
 * in one and layer 1 (full attention) with the head in the other: the same logits, bit for bit,
 * and the same greedy tokens as the tree in one process, which gives the GGUF file's logits bit for
 * bit. .npy has no MXFP4: a tree of the MXFP4 file holds its experts dequantized, value for value.
 * Skipped without llama.cpp's gguf-py (gptossUsable).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { loadModel, type Model } from '../../lib/models/model';
import { readWeights } from '../../lib/formats';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { dequantize } from '../../lib/formats/quantization/dequantize';
import { tempDir } from '../helpers/fixtures';
import { maxAbsDiff } from '../engines/decoder-helpers';
import { GPTOSS_PROMPT as PROMPT, gptossFiles, gptossUsable, type GptossFiles } from '../engines/gptoss-models';
import { compileLib, expectStagesEqualOneProcess, killAll, spawnStage, type StageProcess } from './stages';

jest.setTimeout(180_000);
const suite = gptossUsable ? describe : describe.skip;

const tmp = tempDir('weightmap-gptoss-pipeline-');
const tree = path.join(tmp.dir, 'gptoss-tree');
let lib: ReturnType<typeof compileLib>;
let files: GptossFiles;
const stages: StageProcess[] = [];
const models: Model[] = [];
const opened: ModelWeights[] = [];

async function read(file: string): Promise<ModelWeights> {
  const w = await readWeights(file);
  opened.push(w);
  return w;
}

suite('gpt-oss as a sepweight tree, in 2 stage processes', () => {
  beforeAll(async () => {
    files = gptossFiles(path.join(tmp.dir, 'models'));
    lib = compileLib();
    await convert(files.f32, tree, { to: 'sepweight' });
    for (const layers of ['0-0', '1-1']) stages.push(await spawnStage(lib.main, tree, layers, ['--context', '64']));
  });

  afterAll(async () => {
    for (const m of models) m.dispose();
    for (const w of opened) closeWeights(w);
    await killAll(stages);
    lib?.cleanup();
    tmp.cleanup();
  });

  test('the tree\'s files (biases, sinks, one per expert) read back as the GGUF\'s config and values', async () => {
    const mid = fs.readdirSync(path.join(tree, 'mid', '1'));
    expect(mid.filter((f) => /^mlp\.experts\.\d+\.down_proj\.weight\.npy$/.test(f))).toHaveLength(8);
    for (const f of ['self_attn.sinks', 'self_attn.o_proj.bias', 'self_attn.q_proj.bias', 'mlp.gate.bias', 'mlp.experts.gate_proj.bias', 'mlp.experts.up_proj.bias', 'mlp.experts.down_proj.bias']) expect(mid).toContain(`${f}.npy`);
    const [w, gguf] = [await read(tree), await read(files.f32)];
    expect(w.config).toMatchObject({ ...gguf.config, ropeYarnOriginalContext: 4096 });
    const byName = new Map(gguf.tensors.map((t) => [t.name, t]));
    expect(w.tensors.map((t) => t.name).sort()).toEqual([...byName.keys()].sort());
    for (const t of w.tensors) expect([t.name, maxAbsDiff(await dequantize(t), await dequantize(byName.get(t.name)!))]).toEqual([t.name, 0]);
  });

  test('the MXFP4 file: .npy has no MXFP4, so the tree holds the experts dequantized (f32 by default), value for value', async () => {
    const mxTree = path.join(tmp.dir, 'gptoss-mxfp4-tree');
    await convert(files.mxfp4, mxTree, { to: 'sepweight' });
    const [w, gguf] = [await read(mxTree), await read(files.mxfp4)];
    const byName = new Map(gguf.tensors.map((t) => [t.name, t]));
    const expert = w.tensors.find((t) => t.name === 'model.layers.1.mlp.experts.5.up_proj.weight')!;
    expect([expert.dtype, byName.get(expert.name)!.dtype]).toEqual(['f32', 'ggml_mxfp4']);
    for (const t of w.tensors) expect([t.name, maxAbsDiff(await dequantize(t), await dequantize(byName.get(t.name)!))]).toEqual([t.name, 0]);
  });

  test('2 stages: the single process\'s logits bit for bit (themselves the GGUF file\'s) and its greedy tokens', async () => {
    const ref = await expectStagesEqualOneProcess(tree, PROMPT, [['0-0', stages[0]], ['1-1', stages[1]]], models);
    const gguf = await loadModel(files.f32, { threads: 1, contextLength: 64 });
    models.push(gguf);
    expect(await ref.logits(PROMPT)).toEqual(await gguf.logits(PROMPT));
  });
});
