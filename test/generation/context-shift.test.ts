/**
 * Context shift (GenerateOptions.contextShift) on stories260K loaded with a 64-token context,
 * greedy, its stop tokens banned so that only the context ends a run. The expectation is built
 * here, not by lib/context-shift.ts: the run without shift fills the context (sequence S); S is
 * shifted by hand (the first `keep` tokens, then S less the oldest floor((|S| - keep) / 2) after
 * them) and a fresh generation after those kept tokens gives the continuation. The shifted run's
 * tokens must equal the first run's followed by the fresh one's, through one shift and through
 * three. A prompt longer than the context is cut as llama-server cuts one, and generates what a
 * fresh run after the cut prompt generates.
 */
import { loadModel, type Model } from '../../lib/models/model';
import { fixture } from '../helpers/fixtures';

const CONTEXT = 64;
const BAN_STOPS = new Map([[1, -Infinity], [2, -Infinity]]);
const GREEDY = { temperature: 0, logitBias: BAN_STOPS };

let model: Model;

beforeAll(async () => {
  model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin'), contextLength: CONTEXT });
});

afterAll(() => model.dispose());

/** The greedy tokens after `ids` (no shift), at most `maxTokens`, and why they ended. */
async function fresh(ids: readonly number[], maxTokens: number): Promise<{ tokens: number[]; stopReason?: string }> {
  const generation = model.generate(ids, { ...GREEDY, maxTokens });
  await generation.text();
  return { tokens: [...generation.tokens], stopReason: generation.stopReason };
}

const shiftByHand = (sequence: number[], keep: number) => [...sequence.slice(0, keep), ...sequence.slice(keep + Math.floor((sequence.length - keep) / 2))];

/** What a run with `shifts` shifts then `tail` more tokens must generate, built from fresh runs. */
async function expected(prompt: number[], keep: number, shifts: number, tail: number): Promise<number[]> {
  const out: number[] = [];
  let ids = prompt;
  for (let i = 0; i < shifts; i++) {
    const run = await fresh(ids, 10_000);
    expect(run.stopReason).toBe('context-full');
    const sequence = [...ids, ...run.tokens];
    expect(sequence).toHaveLength(CONTEXT);
    out.push(...run.tokens);
    ids = shiftByHand(sequence, keep);
  }
  const last = await fresh(ids, tail);
  expect(last.tokens).toHaveLength(tail);
  return [...out, ...last.tokens];
}

describe('contextShift', () => {
  const prompt = () => model.encode('Once upon a time');

  it('keeps the BOS and drops the oldest half of the rest: the continuation is a fresh generation after the kept tokens', async () => {
    const ids = prompt();
    expect(ids[0]).toBe(model.tokenizer.specialIds.bos);
    const want = await expected(ids, 1, 1, 12);
    const generation = model.generate(ids, { ...GREEDY, maxTokens: want.length, contextShift: {} });
    await generation.text();
    expect(generation.tokens).toEqual(want);
    expect(generation.stopReason).toBe('max-tokens');
    // Without it the same run ends at the full context.
    expect((await fresh(ids, want.length)).stopReason).toBe('context-full');
  });

  it('through three shifts, keeping 6 tokens', async () => {
    const ids = prompt();
    const want = await expected(ids, 6, 3, 5);
    const generation = model.generate(ids, { ...GREEDY, maxTokens: want.length, contextShift: { keep: 6 } });
    await generation.text();
    expect(generation.tokens).toEqual(want);
  });

  it('cuts a prompt longer than the context as llama-server does, then generates as after the cut prompt', async () => {
    const long = [...prompt(), ...model.tokenizer.encode(' and the little dog ran to the park to play with a ball', { addSpecialTokens: false }).concat(...Array(16).fill(model.tokenizer.encode(' with his friend', { addSpecialTokens: false })))];
    expect(long.length).toBeGreaterThan(CONTEXT);
    // keep 1 (the BOS), blocks of floor(63 / 2) = 31 after it, as many dropped as leave it shorter than the context.
    const block = Math.floor((CONTEXT - 1) / 2);
    const erased = Math.floor((long.length - 1 - block) / block);
    const cut = [long[0], ...long.slice(1 + erased * block)];
    expect(cut.length).toBeLessThan(CONTEXT);
    const n = Math.min(8, CONTEXT - cut.length); // within the room after the cut prompt: no shift while generating
    const want = await fresh(cut, n);
    expect(want.tokens).toHaveLength(n);
    const generation = model.generate(long, { ...GREEDY, maxTokens: n, contextShift: {} });
    await generation.text();
    expect(generation.tokens).toEqual(want.tokens);
    expect(() => model.generate(long, { ...GREEDY, maxTokens: 8 })).toThrow(RangeError);
  });

  it('needs a finite maxTokens and an integer keep >= 0 (RangeError)', () => {
    expect(() => model.generate(prompt(), { contextShift: {} })).toThrow(/contextShift needs a maxTokens/);
    expect(() => model.generate(prompt(), { maxTokens: 4, contextShift: { keep: -1 } })).toThrow(RangeError);
    expect(() => model.generate(prompt(), { maxTokens: 4, contextShift: { keep: 1.5 } })).toThrow(RangeError);
  });
});
