/**
 * The native decoder, gpt, phi and vit engines ask the weights spec for their tensors' names by
 * role (spec.names: DECODER_TENSOR_ROLES of lib/architectures/decoder, TLLM_TENSOR_ROLES of
 * lib/architectures/tllm, MOONDREAM_TENSOR_ROLES of lib/architectures/moondream) and spell none
 * themselves: a spec whose tensors carry other names, with
 * a table that says so, runs the same model (against the fixtures' reference logits); a spec
 * without the table, or with a per-layer name that has no layer in it, is a typed error.
 */
import type { EngineWeightsSpec } from '../../lib/addon/binding';
import { DECODER_TENSOR_ROLES } from '../../lib/architectures/decoder';
import { MOONDREAM_TENSOR_ROLES, type MoondreamConfig } from '../../lib/architectures/moondream';
import { TLLM_TENSOR_ROLES, type TllmConfig } from '../../lib/architectures/tllm';
import { decoderWeightsSpec } from '../../lib/engines/decoder';
import { nativeWeightsSpec } from '../../lib/engines/native-spec';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { moonFormat } from '../../lib/formats/containers/moon';
import { tllmFormat } from '../../lib/formats/containers/tllm';
import { native } from '../../lib/addon/native';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readF32, readJson } from '../helpers/fixtures';
import { maxAbsDiff, storiesExpected } from './decoder-helpers';

/** The spec with every tensor renamed `renamed/<name>` and a table naming them so. */
function renamed(spec: EngineWeightsSpec, roles: Record<string, string>): EngineWeightsSpec {
  return {
    files: spec.files,
    tensors: Object.fromEntries(Object.entries(spec.tensors).map(([name, desc]) => [`renamed/${name}`, desc])),
    names: Object.fromEntries(Object.entries(roles).map(([role, name]) => [role, `renamed/${name}`])),
  };
}

const expected = storiesExpected();
const V = expected.vocab;
const prompt = [expected.bos, ...expected.tokens.slice(0, 9)];

let weights: ModelWeights;
beforeAll(async () => {
  weights = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
});
afterAll(() => closeWeights(weights));

test('the spec passes every role of the table', () => {
  expect(decoderWeightsSpec(weights).spec.names).toEqual(DECODER_TENSOR_ROLES);
});

test('tensors under other names, with a table naming them, run the same model', async () => {
  const { spec, config } = decoderWeightsSpec(weights);
  const model = await native().DecoderModel.load(renamed(spec, DECODER_TENSOR_ROLES), config, { threads: 2 });
  try {
    const session = model.createSession({ contextLength: 64 });
    const all = await session.eval(Int32Array.from(prompt), 'all');
    for (let i = 0; i < prompt.length; i++) {
      expect(maxAbsDiff(all.subarray(i * V, (i + 1) * V), expected.logits.subarray(i * V, (i + 1) * V))).toBeLessThanOrEqual(0.001);
    }
    session.dispose();
  } finally {
    model.dispose();
  }
});

test.each([
  ['without the table', (s: EngineWeightsSpec) => { delete s.names; }, /names no tensor for the role embed/],
  ['without a role the config needs', (s: EngineWeightsSpec) => { delete s.names!.down; }, /names no tensor for the role down/],
  ['with a per-layer name without its layer', (s: EngineWeightsSpec) => { s.names!.q = 'model.q_proj.weight'; }, /role q has no \{layer\}/],
])('a spec %s is CONFIG_MISMATCH', async (_label, edit, message) => {
  const { spec, config } = decoderWeightsSpec(weights);
  const s: EngineWeightsSpec = { ...spec, names: { ...spec.names } };
  edit(s);
  await expect(native().DecoderModel.load(s, config)).rejects.toMatchObject({ code: 'CONFIG_MISMATCH', message: expect.stringMatching(message) });
});

test('a table that is not an object of strings is a TypeError', () => {
  const { spec, config } = decoderWeightsSpec(weights);
  expect(() => native().DecoderModel.load({ ...spec, names: { embed: 3 } as unknown as Record<string, string> }, config)).toThrow(expect.objectContaining({ name: 'TypeError', message: "spec.names['embed'] must be a string" }));
});

describe('the gpt engine (tllm-tiny)', () => {
  const tllm = readJson('tllm-tiny', 'expected.json');
  const kase = tllm.cases[0];
  let tw: ModelWeights;
  beforeAll(async () => {
    tw = await tllmFormat.read(fixture('tllm-tiny', 'model.tllm'));
  });
  afterAll(() => closeWeights(tw));

  test('tensors under other names, with a table naming them, give the reference logits', async () => {
    const model = await native().GptModel.load(renamed(nativeWeightsSpec(tw), TLLM_TENSOR_ROLES), tw.config as TllmConfig, { threads: 2 });
    try {
      const session = model.createSession();
      const logits = await session.eval(Int32Array.from(kase.prompt.ids as number[]), 'all');
      const reference = readF32('tllm-tiny', kase.logits_file.path ?? 'case0.logits.f32');
      expect(logits.length).toBe(reference.length);
      expect(maxAbsDiff(logits, reference)).toBeLessThanOrEqual(tllm.tolerances?.logits_abs ?? 0.001);
      session.dispose();
    } finally {
      model.dispose();
    }
  });

  test('a spec without the table is CONFIG_MISMATCH', async () => {
    const spec = nativeWeightsSpec(tw);
    await expect(native().GptModel.load(spec, tw.config as TllmConfig)).rejects.toMatchObject({ code: 'CONFIG_MISMATCH', message: expect.stringMatching(/names no tensor for the role embed/) });
  });
});

describe('the Moondream engines (moon-tiny)', () => {
  const moon = readJson('moon-tiny', 'expected.json');
  let mw: ModelWeights;
  beforeAll(async () => {
    mw = await moonFormat.read(fixture('moon-tiny', 'model.moon'));
  });
  afterAll(() => closeWeights(mw));

  test('the text model on renamed tensors, with a table naming them, gives the reference logits', async () => {
    const config = mw.config as MoondreamConfig;
    const spec = nativeWeightsSpec(mw, (n) => n.startsWith('model.text.'));
    const model = await native().PhiModel.load(renamed(spec, MOONDREAM_TENSOR_ROLES), config.text, { threads: 2 });
    try {
      const session = model.createSession();
      const logits = await session.eval(Int32Array.from(moon.cases[0].prompt.ids as number[]), 'all');
      const reference = readF32('moon-tiny', 'text0.logits.f32');
      expect(logits.length).toBe(reference.length);
      expect(maxAbsDiff(logits, reference)).toBeLessThanOrEqual(moon.tolerances.logits_abs_fp32_engine);
      session.dispose();
    } finally {
      model.dispose();
    }
  });

  test('the vision model on a spec without the table is CONFIG_MISMATCH', async () => {
    const config = mw.config as MoondreamConfig;
    const spec = nativeWeightsSpec(mw, (n) => n.startsWith('model.vision.'));
    await expect(native().VitModel.load(spec, { ...config.vision, textHiddenSize: config.text.hiddenSize }, { threads: 2 })).rejects.toMatchObject({ code: 'CONFIG_MISMATCH', message: expect.stringMatching(/names no tensor for the role patchEmb.weight/) });
  });
});
