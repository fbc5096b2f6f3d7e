/**
 * The decoder on every kernel table this CPU can run (scalar, AVX2, AVX-512, VNNI, NEON): the
 * f32 path (sgemm) on stories260K and the Q8_0 path (int8 kernels) on ajc1-qwen3-tiny, both as
 * one batch (matmul) and token by token (matvec), against the fixtures.
 */
import { DecoderEngine } from '../../lib/engines/decoder';
import { ajc1Format } from '../../lib/formats/containers/ajc1';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { native } from '../../lib/addon/native';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readF32, readJson } from '../helpers/fixtures';
import { maxAbsDiff, storiesExpected } from './decoder-helpers';

const { kernels } = native();
const isas = kernels.availableIsas();
const initial = kernels.isa();

const stories = storiesExpected();
const qwen = readJson('ajc1-qwen3-tiny', 'expected.json');
const qwenIds: number[] = qwen.cases[0].prompt.ids;
const qwenLast = readF32('ajc1-qwen3-tiny', qwen.cases[0].logits_file.path);

let storiesWeights: ModelWeights;
let qwenWeights: ModelWeights;
let storiesEngine: DecoderEngine;
let qwenEngine: DecoderEngine;

beforeAll(async () => {
  storiesWeights = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
  qwenWeights = await ajc1Format.read(fixture('ajc1-qwen3-tiny', 'model.bin'));
  storiesEngine = await DecoderEngine.load(storiesWeights, { threads: 2 });
  qwenEngine = await DecoderEngine.load(qwenWeights, { threads: 2 });
});
afterAll(() => {
  kernels.setIsa(initial);
  storiesEngine.dispose();
  qwenEngine.dispose();
  closeWeights(storiesWeights);
  closeWeights(qwenWeights);
});

test('scalar is among the tables', () => {
  expect(isas[0]).toBe('scalar');
});

describe.each(isas)('kernel table %s', (isa) => {
  beforeEach(() => kernels.setIsa(isa));

  test('stories260K (f32): 48 positions in one batch and 16 decode steps within 0.001', async () => {
    const V = stories.vocab;
    const s = storiesEngine.createSession({ contextLength: 128 });
    const ids = [stories.bos, ...stories.tokens.slice(0, 47)];
    const all = await s.eval(ids, { allLogits: true });
    expect(maxAbsDiff(all, stories.logits, 48 * V)).toBeLessThanOrEqual(0.001);
    for (let i = 47; i < 63; i++) {
      const logits = await s.eval([stories.tokens[i]]);
      expect(maxAbsDiff(logits, stories.logits.subarray((i + 1) * V, (i + 2) * V))).toBeLessThanOrEqual(0.001);
    }
    s.dispose();
  });

  test('ajc1-qwen3-tiny (Q8_0): the last prompt position within 0.12, batched and stepped', async () => {
    const batched = qwenEngine.createSession({ contextLength: 64 });
    expect(maxAbsDiff(await batched.eval(qwenIds), qwenLast)).toBeLessThanOrEqual(0.12);
    const stepped = qwenEngine.createSession({ contextLength: 64 });
    let last: Float32Array = new Float32Array(0);
    for (const id of qwenIds) last = await stepped.eval([id]);
    expect(maxAbsDiff(last, qwenLast)).toBeLessThanOrEqual(0.12);
    batched.dispose();
    stepped.dispose();
  });
});
