/**
 * sepweight's bias stems (FORMATS.md §4.2: the key after the layer index, `self_attn.{q,k,v}_proj.bias`)
 * on Qwen2's biased attention: the fixture GGUF (qwen2-bias.Q4_1.gguf) written as a tree reads back
 * with the same config, every tensor the GGUF's dequantized values, and the same logits as the GGUF
 * run on those values (quant 'f32': dequantized once, as the tree stores them).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { writeWeights } from '../../lib/formats';
import { dequantize } from '../../lib/formats/quantization/dequantize';
import { DecoderEngine } from '../../lib/engines/decoder';
import { fixture } from '../helpers/fixtures';
import { testWorkspace } from '../helpers/workspace';
import { maxAbsDiff } from '../engines/decoder-helpers';
import { engineLogits } from '../engines/tiny-decoder';

const ws = testWorkspace('sepweight-biases-');
const FILE = fixture('gguf-quants', 'qwen2-bias', 'qwen2-bias.Q4_1.gguf');

test('Qwen2 as a tree: bias files, the config, the values and the logits of the GGUF', async () => {
  const gguf = await ws.read(FILE);
  const tree = ws.fresh('tree');
  await writeWeights(gguf, tree, { format: 'sepweight' });
  expect(fs.readdirSync(path.join(tree, 'mid', '0'))).toEqual(expect.arrayContaining(['self_attn.q_proj.bias.npy', 'self_attn.k_proj.bias.npy', 'self_attn.v_proj.bias.npy']));
  const back = await ws.read(tree);
  expect(back.config).toEqual({ ...gguf.config, ropePairing: 'half' });
  const byName = new Map(gguf.tensors.map((t) => [t.name, t]));
  // The tied head: end/ holds a copy of the embedding (the writer's rule, for a node holding only end/).
  expect(gguf.config).toMatchObject({ tieWordEmbeddings: true });
  byName.set('lm_head.weight', byName.get('model.embed_tokens.weight')!);
  expect(back.tensors.map((t) => t.name).sort()).toEqual([...byName.keys()].sort());
  for (const t of back.tensors) expect([t.name, maxAbsDiff(await dequantize(t), await dequantize(byName.get(t.name)!))]).toEqual([t.name, 0]);
  const prompt = [1, 5, 9, 14, 2, 7];
  const [a, b] = [await DecoderEngine.load(back, { threads: 1 }), await DecoderEngine.load(gguf, { threads: 1, quant: 'f32' })];
  try {
    expect(maxAbsDiff(await engineLogits(a, prompt), await engineLogits(b, prompt))).toBe(0);
  } finally {
    a.dispose();
    b.dispose();
  }
});
