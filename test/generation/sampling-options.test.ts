/** lib/generation/sampling.ts: defaults, validation (RangeError / TypeError), logit bias forms, seeds. */
import { resolveSampling, SAMPLING_DEFAULTS, type SamplingOptions } from '../../lib/generation/sampling';

function rangeError(options: SamplingOptions, pattern: RegExp, vocab?: number): void {
  let caught: unknown;
  try {
    resolveSampling(options, vocab);
  } catch (error) {
    caught = error;
  }
  expect(caught).toBeInstanceOf(RangeError);
  expect((caught as RangeError & { code: string }).code).toBe('ERR_OUT_OF_RANGE');
  expect((caught as Error).message).toMatch(pattern);
}

describe('resolveSampling', () => {
  it('fills in node-llama-cpp-style defaults: greedy, top-k 40, top-p 0.95, no penalties', () => {
    const { params, greedy } = resolveSampling({});
    expect(greedy).toBe(true);
    expect(params).toEqual({ ...SAMPLING_DEFAULTS });
    expect(SAMPLING_DEFAULTS).toEqual({
      temperature: 0, topK: 40, topP: 0.95, minP: 0, repeatPenalty: 1, frequencyPenalty: 0, presencePenalty: 0, penaltyLastN: 64,
    });
  });

  it('passes valid values through', () => {
    const { params, greedy, seed } = resolveSampling({
      temperature: 0.7, topK: 0, topP: 1, minP: 0.05, repeatPenalty: 1.1, frequencyPenalty: -0.5, presencePenalty: 0.25, penaltyLastN: -1, seed: 42,
    });
    expect(greedy).toBe(false);
    expect(seed).toBe(42n);
    expect(params).toEqual({ temperature: 0.7, topK: 0, topP: 1, minP: 0.05, repeatPenalty: 1.1, frequencyPenalty: -0.5, presencePenalty: 0.25, penaltyLastN: -1 });
  });

  it.each<[SamplingOptions, RegExp]>([
    [{ temperature: -0.1 }, /temperature/],
    [{ temperature: Infinity }, /temperature/],
    [{ temperature: NaN }, /temperature must not be NaN/],
    [{ topK: -1 }, /topK/],
    [{ topK: 2.5 }, /topK/],
    [{ topP: 1.01 }, /topP/],
    [{ topP: -0.01 }, /topP/],
    [{ minP: 1.5 }, /minP/],
    [{ repeatPenalty: 0 }, /repeatPenalty/],
    [{ repeatPenalty: -1 }, /repeatPenalty/],
    [{ frequencyPenalty: Infinity }, /frequencyPenalty/],
    [{ presencePenalty: -Infinity }, /presencePenalty/],
    [{ penaltyLastN: -2 }, /penaltyLastN/],
    [{ penaltyLastN: 1.5 }, /penaltyLastN/],
    [{ seed: -1 }, /seed/],
    [{ seed: 1.5 }, /seed/],
    [{ seed: 2 ** 53 }, /seed/],
    [{ seed: -1n }, /seed/],
    [{ seed: 1n << 64n }, /seed/],
    [{ logitBias: { 3: NaN } }, /finite or -Infinity/],
    [{ logitBias: { 3: Infinity } }, /finite or -Infinity/],
    [{ logitBias: [[-1, 1]] }, /token ids/],
    [{ logitBias: [[1.5, 1]] }, /token ids/],
  ])('rejects %p with a RangeError', (options, pattern) => rangeError(options, pattern));

  it('bounds logit-bias ids by the vocabulary when it is known', () => {
    rangeError({ logitBias: { 100: 1 } }, /outside the vocabulary \(size 100\)/, 100);
    expect(resolveSampling({ logitBias: { 99: 1 } }, 100).params.logitBiasIds).toEqual(Int32Array.of(99));
  });

  it('rejects wrong types with TypeErrors', () => {
    expect(() => resolveSampling({ temperature: '1' as unknown as number })).toThrow(TypeError);
    expect(() => resolveSampling({ seed: '1' as unknown as number })).toThrow(TypeError);
    expect(() => resolveSampling({ logitBias: [[1]] as unknown as [number, number][] })).toThrow(TypeError);
    expect(() => resolveSampling({ logitBias: { 1: 'x' } as unknown as Record<number, number> })).toThrow(TypeError);
    expect(() => resolveSampling(null as unknown as SamplingOptions)).toThrow(TypeError);
  });

  it('takes the logit bias as an object, a Map or pairs, -Infinity banning a token', () => {
    for (const bias of [{ 5: 2, 7: -Infinity }, new Map([[5, 2], [7, -Infinity]]), [[5, 2], [7, -Infinity]] as [number, number][]]) {
      const { params } = resolveSampling({ logitBias: bias });
      expect(Array.from(params.logitBiasIds!)).toEqual([5, 7]);
      expect(Array.from(params.logitBiasValues!)).toEqual([2, -Infinity]);
    }
    expect(resolveSampling({ logitBias: {} }).params.logitBiasIds).toBeUndefined();
  });

  it('draws a random non-zero 64-bit seed when none is given; BigInt seeds up to 2^64 - 1', () => {
    const seeds = new Set(Array.from({ length: 8 }, () => resolveSampling({}).seed));
    expect(seeds.size).toBe(8);
    for (const s of seeds) expect(s > 0n && s < 1n << 64n).toBe(true);
    expect(resolveSampling({ seed: (1n << 64n) - 1n }).seed).toBe((1n << 64n) - 1n);
    expect(resolveSampling({ seed: 0 }).seed).toBe(0n);
  });
});
