/**
 * The decoder engine loaded with a layer range (a pipeline stage), chained in-process: the
 * logits equal the whole model's on the same tree, bit for bit (the same kernels run the same
 * layers on the same f32 hidden states), for prefill, decode, truncation and f16 KV caches.
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { readStageWeights } from '../../lib/pipeline/stage-files';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { readWeights } from '../../lib/formats';
import { fixture, readJson } from '../helpers/fixtures';

const tree = fixture('llama-stories260k', 'sepweight');
const prompt: number[] = readJson('llama-stories260k', 'expected.json').greedy.tokens.slice(0, 24);

describe('decoder layer ranges', () => {
  const opened: ModelWeights[] = [];
  const engines: DecoderEngine[] = [];
  let full: DecoderEngine;
  let stages: DecoderEngine[];

  beforeAll(async () => {
    const whole = await readWeights(tree);
    opened.push(whole);
    full = await DecoderEngine.load(whole, { threads: 1 });
    engines.push(full);
    stages = [];
    for (const [first, last] of [[0, 1], [2, 2], [3, 4]]) {
      const w = await readStageWeights(tree, { first, last });
      opened.push(w);
      const e = await DecoderEngine.load(w, { threads: 1, layers: [first, last + 1] });
      engines.push(e);
      stages.push(e);
    }
  });
  afterAll(() => {
    for (const e of engines) e.dispose();
    for (const w of opened) closeWeights(w);
  });

  it('maps only the folders of its range', async () => {
    const w = await readStageWeights(tree, { first: 2, last: 2 });
    try {
      expect(w.tensors.map((t) => t.name).every((n) => n.startsWith('model.layers.2.'))).toBe(true);
    } finally {
      closeWeights(w);
    }
  });

  it.each(['f32', 'f16'] as const)('chained stages give the whole model\'s logits exactly (%s KV cache)', async (kvCache) => {
    const ref = full.createSession({ contextLength: 64, kvCache });
    const parts = stages.map((s) => s.createSession({ contextLength: 64, kvCache }));
    const chain = async (ids: number[]) => {
      let x = await parts[0].eval(ids);
      expect(x.length).toBe(ids.length * 64);
      x = await parts[1].evalHidden(x);
      return parts[2].evalHidden(x);
    };
    try {
      expect(await chain(prompt.slice(0, 16))).toEqual(await ref.eval(prompt.slice(0, 16)));
      for (const id of prompt.slice(16, 20)) expect(await chain([id])).toEqual(await ref.eval([id]));
      // Rewinding every stage and feeding other ids.
      for (const s of [...parts, ref]) s.truncate(10);
      expect(await chain(prompt.slice(12, 24))).toEqual(await ref.eval(prompt.slice(12, 24)));
      expect(parts.map((p) => p.position)).toEqual([22, 22, 22]);
    } finally {
      for (const s of [...parts, ref]) s.dispose();
    }
  });

  it('reserves a KV cache for its own layers only', () => {
    const whole = full.createSession({ contextLength: 32 });
    const middle = stages[1].createSession({ contextLength: 32 });
    expect(middle.cacheBytes * 5).toBe(whole.cacheBytes);
    whole.dispose();
    middle.dispose();
  });

  it('refuses the wrong kind of input with a RangeError', async () => {
    const first = stages[0].createSession({ contextLength: 8 });
    const middle = stages[1].createSession({ contextLength: 8 });
    await expect(first.evalHidden(new Float32Array(64))).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    await expect(middle.eval([1])).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    await expect(middle.evalHidden(new Float32Array(63))).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    first.dispose();
    middle.dispose();
  });

  it('rejects a range outside the model at load', async () => {
    const w = await readStageWeights(tree, { first: 3, last: 4 });
    try {
      await expect(DecoderEngine.load(w, { threads: 1, layers: [3, 6] })).rejects.toMatchObject({ code: 'CONFIG_MISMATCH' });
    } finally {
      closeWeights(w);
    }
  });
});
