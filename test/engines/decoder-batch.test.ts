/**
 * DecoderEngine.stepBatch (native/engines/decoder/batch.cc): sessions at different positions,
 * with different prompts, joining and leaving a batch, must produce the tokens each produces
 * decoded alone (greedy), and keep the state a single step would leave.
 */
import type { Sampler } from '../../lib/addon/binding';
import { DecoderEngine, type DecoderEngineSession } from '../../lib/engines/decoder';
import { AbortError } from '../../lib/base/errors';
import { readWeights } from '../../lib/formats';
import { ajc1Format } from '../../lib/formats/containers/ajc1';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { native } from '../../lib/addon/native';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture, readJson } from '../helpers/fixtures';
import { testWorkspace } from '../helpers/workspace';
import { greedy, storiesExpected } from './decoder-helpers';
import { tinyDecoder, writeHfFolder } from './tiny-decoder';

const GREEDY = { temperature: 0 };

interface Member {
  prompt: number[];
  /** The batch step at which it joins (after its prompt is fed alone). */
  join: number;
  /** Tokens it generates in all. */
  steps: number;
}

/**
 * Runs `members` through one loop: at each step every member that has joined and not finished
 * feeds its last token in one stepBatch. Returns each member's tokens.
 */
async function batched(engine: DecoderEngine, members: Member[]): Promise<number[][]> {
  const state = members.map(() => ({ session: undefined as DecoderEngineSession | undefined, sampler: undefined as Sampler | undefined, tokens: [] as number[] }));
  for (let step = 0; state.some((s, i) => s.tokens.length < members[i].steps); step++) {
    const rows: number[] = [];
    for (const [i, m] of members.entries()) {
      const s = state[i];
      if (step < m.join || s.tokens.length >= m.steps) continue;
      if (!s.session) {
        s.session = engine.createSession({ contextLength: 128 });
        s.sampler = new (native().Sampler)(1);
        s.tokens.push(await s.session.step(m.prompt, s.sampler, GREEDY));
        continue;
      }
      rows.push(i);
    }
    if (rows.length === 0) continue;
    const out = await engine.stepBatch(rows.map((i) => ({ session: state[i].session!, token: state[i].tokens.at(-1)!, sampler: state[i].sampler!, params: GREEDY })));
    rows.forEach((i, r) => {
      const token = out[r];
      if (typeof token !== 'number') throw token;
      state[i].tokens.push(token);
      expect(state[i].session!.position).toBe(members[i].prompt.length + state[i].tokens.length - 1);
    });
  }
  for (const s of state) s.session?.dispose();
  return state.map((s) => s.tokens);
}

async function alone(engine: DecoderEngine, m: Member): Promise<number[]> {
  const session = engine.createSession({ contextLength: 128 });
  const run = await greedy(session, m.prompt, m.steps);
  session.dispose();
  return run.tokens;
}

describe('stories260K (llama2.c f32)', () => {
  let weights: ModelWeights;
  let engine: DecoderEngine;
  const expected = storiesExpected();
  beforeAll(async () => {
    weights = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
    engine = await DecoderEngine.load(weights, { threads: 2 });
  });
  afterAll(() => {
    engine.dispose();
    closeWeights(weights);
  });

  test('sessions joining and leaving at different positions each follow the fixture greedy run', async () => {
    // All start from BOS, so every member's tokens are a prefix of the fixture's greedy tokens.
    const members: Member[] = [
      { prompt: [expected.bos], join: 0, steps: 40 },
      { prompt: [expected.bos], join: 3, steps: 20 },
      { prompt: [expected.bos], join: 7, steps: 45 },
      { prompt: [expected.bos], join: 30, steps: 10 },
    ];
    const tokens = await batched(engine, members);
    members.forEach((m, i) => expect(tokens[i]).toEqual(expected.tokens.slice(0, m.steps)));
  });

  test('different prompts: equal to each session decoded alone', async () => {
    const prompts = [expected.tokens.slice(0, 5), [expected.bos, ...expected.tokens.slice(10, 30)], [expected.bos, 42, 17, 300], [expected.bos]];
    const members = prompts.map((prompt, i) => ({ prompt: prompt[0] === expected.bos ? prompt : [expected.bos, ...prompt], join: 2 * i, steps: 25 - 3 * i }));
    const tokens = await batched(engine, members);
    for (const [i, m] of members.entries()) expect(tokens[i]).toEqual(await alone(engine, m));
  });

  test('an aborted row keeps its position; the others go on', async () => {
    const sessions = [0, 1, 2].map(() => engine.createSession({ contextLength: 64 }));
    const samplers = sessions.map(() => new (native().Sampler)(1));
    const first = await Promise.all(sessions.map((s, i) => s.step([expected.bos], samplers[i], GREEDY)));
    const out = await engine.stepBatch(
      sessions.map((session, i) => ({ session, token: first[i], sampler: samplers[i], params: GREEDY, ...(i === 1 ? { signal: AbortSignal.abort() } : {}) })),
    );
    expect(out[0]).toBe(expected.tokens[1]);
    expect(out[1]).toBeInstanceOf(AbortError);
    expect(out[2]).toBe(expected.tokens[1]);
    expect(sessions.map((s) => s.position)).toEqual([2, 1, 2]);
    // The aborted session resumes alone from where it was.
    expect(await sessions[1].step([first[1]], samplers[1], GREEDY)).toBe(expected.tokens[1]);
    for (const s of sessions) s.dispose();
  });

  test('an abort that lands while the step runs leaves each session consistent: committed with its token, or not at all', async () => {
    const sessions = [0, 1, 2].map(() => engine.createSession({ contextLength: 64 }));
    const samplers = sessions.map(() => new (native().Sampler)(1));
    const first = await Promise.all(sessions.map((s, i) => s.step([expected.bos], samplers[i], GREEDY)));
    const pending = engine.stepBatch(sessions.map((session, i) => ({ session, token: first[i], sampler: samplers[i], params: GREEDY })));
    sessions[1].abort(); // the step may already be done on this tiny model: either outcome is valid
    const out = await pending;
    expect(out[0]).toBe(expected.tokens[1]);
    expect(out[2]).toBe(expected.tokens[1]);
    if (out[1] instanceof AbortError) expect(sessions[1].position).toBe(1);
    else expect([out[1], sessions[1].position]).toEqual([expected.tokens[1], 2]);
    expect(sessions.map((s) => s.position).filter((p, i) => i !== 1)).toEqual([2, 2]);
    for (const s of sessions) s.dispose();
  });

  test('bad batches are refused before anything runs', async () => {
    const a = engine.createSession({ contextLength: 2 });
    const sampler = new (native().Sampler)(1);
    const other = new (native().Sampler)(2);
    await expect(engine.stepBatch([
      { session: a, token: 1, sampler },
      { session: a, token: 1, sampler: other },
    ])).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_BUSY' }); // the same session twice
    const b = engine.createSession({ contextLength: 2 });
    await expect(engine.stepBatch([
      { session: a, token: 1, sampler },
      { session: b, token: 1, sampler },
    ])).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_BUSY' });
    await expect(engine.stepBatch([{ session: a, token: expected.vocab, sampler }])).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    await a.step([expected.bos, expected.bos], sampler, GREEDY);
    await expect(engine.stepBatch([{ session: a, token: 1, sampler }])).rejects.toMatchObject({ code: 'ERR_OUT_OF_RANGE' });
    expect(a.position).toBe(2);
    a.dispose();
    b.dispose();
  });
});

describe('ajc1-qwen3-tiny (Q8_0, QK-norm, GQA)', () => {
  const c0 = readJson('ajc1-qwen3-tiny', 'expected.json').cases[0];
  let weights: ModelWeights;
  let engine: DecoderEngine;
  beforeAll(async () => {
    weights = await ajc1Format.read(fixture('ajc1-qwen3-tiny', 'model.bin'));
    engine = await DecoderEngine.load(weights, { threads: 2 });
  });
  afterAll(() => {
    engine.dispose();
    closeWeights(weights);
  });

  test('different prompts at different positions: equal to each session decoded alone, and the fixture', async () => {
    const ids: number[] = c0.prompt.ids;
    const members: Member[] = [
      { prompt: ids, join: 0, steps: c0.greedy.tokens.length },
      { prompt: ids.slice(0, 7), join: 1, steps: 12 },
      { prompt: ids.slice(3), join: 4, steps: 15 },
      { prompt: ids.slice(0, 2), join: 9, steps: 6 },
    ];
    const tokens = await batched(engine, members);
    expect(tokens[0]).toEqual(c0.greedy.tokens);
    for (const [i, m] of members.entries()) expect(tokens[i]).toEqual(await alone(engine, m));
  });
});

// GGUF block types (the tiled ggml kernels take all rows at once), Qwen2's q/k/v biases and
// Llama 3's RoPE frequency factors.
const GGUF = ['llama-ropefreqs', 'qwen2-bias', 'qwen3-qknorm'].flatMap((folder) =>
  (readJson('gguf-quants', folder, 'expected.json').variants as { file: string; cases: { prompt: { ids: number[] } }[] }[]).map(
    (v) => [folder, v.file, v.cases[0].prompt.ids] as const,
  ),
);
describe.each(GGUF)('gguf-quants %s: %s', (folder, file, ids) => {
  test('batched greedy tokens equal each session decoded alone', async () => {
    const weights = await readWeights(fixture('gguf-quants', folder, file));
    const engine = await DecoderEngine.load(weights, { threads: 2 });
    const members: Member[] = [
      { prompt: ids, join: 0, steps: 10 },
      { prompt: ids.slice(0, Math.max(1, ids.length >> 1)), join: 1, steps: 8 },
      { prompt: ids.slice(-3), join: 3, steps: 6 },
    ];
    const tokens = await batched(engine, members);
    for (const [i, m] of members.entries()) expect(tokens[i]).toEqual(await alone(engine, m));
    engine.dispose();
    closeWeights(weights);
  });
});

describe('tiny Mistral quantized to Q8_0 at load, every width an odd multiple of 32', () => {
  // hidden 96, q/o 96, intermediate 288 (stories15M's dim): on AVX-512 each row runs as pairs of
  // zmm groups plus one lone group, in the single step (matvec_q8) and the batched one (the
  // prepared rows form) alike.
  const ws = testWorkspace('decoder-batch-q8tail-');
  const hf = {
    architectures: ['MistralForCausalLM'],
    model_type: 'mistral',
    hidden_size: 96,
    intermediate_size: 288,
    num_hidden_layers: 2,
    num_attention_heads: 3,
    num_key_value_heads: 1,
    head_dim: 32,
    vocab_size: 352,
    max_position_embeddings: 128,
    rms_norm_eps: 1e-5,
    rope_theta: 10000,
    sliding_window: null,
    hidden_act: 'silu',
    tie_word_embeddings: true,
  };
  test('batched steps give the tokens of single steps', async () => {
    const dir = writeHfFolder(tinyDecoder(hf, 14), ws.fresh('model'));
    const weights = await readWeights(dir);
    const engine = await DecoderEngine.load(weights, { threads: 2, quant: 'q8_0' });
    const prompt = Array.from({ length: 9 }, (_, i) => (i * 37 + 5) % 352);
    const members: Member[] = [
      { prompt, join: 0, steps: 14 },
      { prompt: prompt.slice(0, 3), join: 1, steps: 10 },
      { prompt: prompt.slice(4), join: 3, steps: 9 },
    ];
    const tokens = await batched(engine, members);
    for (const [i, m] of members.entries()) expect(tokens[i]).toEqual(await alone(engine, m));
    engine.dispose();
    closeWeights(weights);
  });
});
