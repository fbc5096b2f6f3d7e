/**
 * The native sampler (native/sampling/sampler.cc) against closed forms: the xorshift64* generator
 * of FORMATS.md §5.7 computed with BigInt, greedy/top-k/top-p/min-p/penalty/bias semantics, exact
 * first draws, a brute-force reference of the whole pipeline, and empirical frequencies.
 */
import { native } from '../../lib/addon/native';
import type { NativeSamplingParams } from '../../lib/addon/binding';
import { mulberry32 } from '../helpers/rng';

const { Sampler, rngDraws } = native();

/** xorshift64* exactly as FORMATS.md §5.7 defines it (seed 0 replaced as sampler.h documents). */
function referenceU32(seed: bigint, count: number): number[] {
  let s = seed === 0n ? 0x9e3779b97f4a7c15n : seed;
  const out: number[] = [];
  for (let i = 0; i < count; i++) {
    s ^= s >> 12n;
    s = BigInt.asUintN(64, s ^ (s << 25n));
    s ^= s >> 27n;
    out.push(Number(BigInt.asUintN(64, s * 0x2545f4914f6cdd1dn) >> 32n));
  }
  return out;
}
const toF32 = (u: number) => (u >>> 8) / 16777216;

/** Native errors come from the addon's realm, not jest's: compare by name. */
function expectTypeError(fn: () => unknown): void {
  let caught: unknown;
  try {
    fn();
  } catch (error) {
    caught = error;
  }
  expect((caught as Error | undefined)?.name).toBe('TypeError');
}

function gaussian(rand: () => number): number {
  return Math.sqrt(-2 * Math.log(1 - rand())) * Math.cos(2 * Math.PI * rand());
}
function randomLogits(n: number, sd: number, seed: number): Float32Array {
  const rand = mulberry32(seed);
  const out = new Float32Array(n);
  for (let i = 0; i < n; i++) out[i] = sd * gaussian(rand);
  return out;
}
function argmaxLowest(x: ArrayLike<number>): number {
  let best = 0;
  for (let i = 1; i < x.length; i++) if (x[i] > x[best]) best = i;
  return best;
}

describe('xorshift64* generator', () => {
  it.each([1n, 42n, 1234567890123n, 0xffffffffffffffffn, 0n])('seed %s matches the closed form', (seed) => {
    const expected = referenceU32(seed, 1000);
    const { u32, f32 } = rngDraws(seed, 1000);
    expect(Array.from(u32)).toEqual(expected);
    expect(Array.from(f32)).toEqual(expected.map(toF32));
  });

  it('takes safe-integer numbers as seeds, rejects the rest', () => {
    expect(Array.from(rngDraws(7, 5).u32)).toEqual(referenceU32(7n, 5));
    expectTypeError(() => rngDraws(-1, 1));
    expectTypeError(() => rngDraws(1.5, 1));
    expectTypeError(() => rngDraws(2n ** 64n, 1));
    expectTypeError(() => rngDraws('1' as unknown as number, 1));
  });

  it('exposes the state, and reseeding restarts the stream', () => {
    const s = new Sampler(99n);
    expect(s.rngState).toBe(99n);
    const logits = new Float32Array([0, 0, 0, 0]);
    s.sample(logits, { temperature: 1 });
    expect(s.rngState).not.toBe(99n);
    s.reseed(99n);
    expect(s.rngState).toBe(99n);
  });
});

describe('greedy', () => {
  it('is the argmax, the lowest id winning ties; greedy draws nothing from the generator', () => {
    const s = new Sampler(5);
    expect(s.sample(new Float32Array([1, 3, 2, 3, 3]))).toBe(1);
    expect(s.sample(new Float32Array([1, 3, 2, 3, 3]), { temperature: 0 })).toBe(1);
    expect(s.sample(new Float32Array([-5, -1, -1]), { temperature: -1 })).toBe(1);
    for (let seed = 0; seed < 6; seed++) {
      const logits = randomLogits(seed % 2 ? 151936 : 1000, 3, seed);
      expect(s.sample(logits)).toBe(argmaxLowest(logits));
    }
    expect(s.rngState).toBe(5n);
  });

  it('treats NaN as never winning and an all -inf vocabulary as token 0', () => {
    const s = new Sampler(1);
    expect(s.sample(new Float32Array([NaN, 1, NaN, 2]))).toBe(3);
    expect(s.sample(new Float32Array([-Infinity, -Infinity]))).toBe(0);
    expect(s.sample(new Float32Array([-Infinity, -Infinity]), { temperature: 1, topP: 0.5 })).toBe(0);
    for (let i = 0; i < 50; i++) expect(s.sample(new Float32Array([NaN, 0, NaN, 0.5]), { temperature: 1 })).not.toBe(0);
  });

  it('top-k = 1 and a tiny top-p are greedy at any temperature', () => {
    const s = new Sampler(3);
    for (let seed = 0; seed < 10; seed++) {
      const logits = randomLogits(5000, 2, 100 + seed);
      const best = argmaxLowest(logits);
      expect(s.sample(logits, { temperature: 1.5, topK: 1 })).toBe(best);
      expect(s.sample(logits, { temperature: 1.5, topP: 1e-6 })).toBe(best);
      expect(s.sample(logits, { temperature: 1.5, topP: 0 })).toBe(best);
      expect(s.sample(logits, { temperature: 1.5, minP: 1 })).toBe(best);
    }
  });
});

describe('penalties and bias change exactly the penalised logits', () => {
  const logits = new Float32Array([2, -2, 0.5, 3, -1, 4]);

  it('repeat penalty divides positive logits and multiplies negative ones, once per distinct token', () => {
    const recent = new Int32Array([0, 1, 1, 5, 9999, -3]);
    const out = Sampler.adjustLogits(logits, { repeatPenalty: 2, penaltyLastN: 64 }, recent);
    expect(Array.from(out)).toEqual([1, -4, 0.5, 3, -1, 2]);
    expect(Array.from(logits)).toEqual([2, -2, 0.5, 3, -1, 4]); // input untouched
  });

  it('frequency and presence penalties subtract count·f + p', () => {
    const recent = new Int32Array([2, 2, 2, 4]);
    const out = Sampler.adjustLogits(logits, { frequencyPenalty: 0.5, presencePenalty: 0.25, penaltyLastN: -1 }, recent);
    const f = (x: number) => Math.fround(x);
    expect(Array.from(out)).toEqual([2, -2, f(0.5 - 3 * 0.5 - 0.25), 3, f(-1 - 0.5 - 0.25), 4]);
  });

  it('looks only at the last penaltyLastN tokens; 0 turns penalties off', () => {
    const recent = new Int32Array([0, 3, 5]);
    expect(Array.from(Sampler.adjustLogits(logits, { repeatPenalty: 2, penaltyLastN: 1 }, recent))).toEqual([2, -2, 0.5, 3, -1, 2]);
    expect(Array.from(Sampler.adjustLogits(logits, { repeatPenalty: 2, penaltyLastN: 2 }, recent))).toEqual([2, -2, 0.5, 1.5, -1, 2]);
    expect(Array.from(Sampler.adjustLogits(logits, { repeatPenalty: 2, penaltyLastN: 0 }, recent))).toEqual(Array.from(logits));
  });

  it('adds the logit bias (ids outside the vocabulary ignored) before the penalties', () => {
    const params: NativeSamplingParams = {
      logitBiasIds: new Int32Array([1, 3, 77, -1]),
      logitBiasValues: new Float32Array([1, -Infinity, 5, 5]),
      repeatPenalty: 2,
      penaltyLastN: 8,
    };
    // id 1: (-2 + 1) * 2 = -2 (bias first, then the negative logit is multiplied)
    expect(Array.from(Sampler.adjustLogits(logits, params, new Int32Array([1])))).toEqual([2, -2, 0.5, -Infinity, -1, 4]);
    const s = new Sampler(1);
    expect(s.sample(logits, { logitBiasIds: new Int32Array([5]), logitBiasValues: new Float32Array([-Infinity]) })).toBe(3);
    expect(s.sample(logits, { logitBiasIds: new Int32Array([1]), logitBiasValues: new Float32Array([7]) })).toBe(1);
    for (let i = 0; i < 100; i++) {
      const t = s.sample(logits, { temperature: 2, logitBiasIds: new Int32Array([5, 3]), logitBiasValues: new Float32Array([-Infinity, -Infinity]) });
      expect([3, 5]).not.toContain(t);
    }
  });

  it('a penalty can flip the greedy choice', () => {
    const s = new Sampler(1);
    const l = new Float32Array([2, 1.9]);
    expect(s.sample(l)).toBe(0);
    expect(s.sample(l, { repeatPenalty: 1.1 }, new Int32Array([0]))).toBe(1);
  });

  it('rejects malformed params with TypeErrors', () => {
    const s = new Sampler(1);
    expectTypeError(() => s.sample(new Float32Array(3), { temperature: 'hot' as unknown as number }));
    expectTypeError(() => s.sample(new Float32Array(3), { topK: 1.5 }));
    expectTypeError(() => s.sample(new Float32Array(3), { logitBiasIds: new Int32Array(1) }));
    expectTypeError(() => s.sample(new Float32Array(3), { logitBiasIds: new Int32Array(2), logitBiasValues: new Float32Array(1) }));
    expectTypeError(() => s.sample(new Float64Array(3) as unknown as Float32Array));
    expect(() => s.sample(new Float32Array(0))).toThrow(/1 to/);
    expectTypeError(() => s.sample(new Float32Array(3), {}, [1] as unknown as Int32Array));
  });
});

/**
 * The whole pipeline in float64 with full sorts: the set each stage keeps, then the walk in id
 * order. Returns the token and how far the draw was from flipping (distance of coin·total to the
 * nearest cdf step and of the top-p mass to p, relative), so a comparison can skip knife edges.
 */
function referenceSample(
  input: Float32Array,
  p: Required<Pick<NativeSamplingParams, 'temperature' | 'topK' | 'topP' | 'minP'>>,
  coin: number,
): { token: number; slack: number } {
  const l = Array.from(input);
  const n = l.length;
  const order = l.map((_, i) => i).sort((a, b) => l[b] - l[a] || a - b);
  const max = l[order[0]];
  if (p.temperature <= 0) return { token: order[0], slack: Infinity };
  let keep = n;
  if (p.topK > 0 && p.topK < n) keep = p.topK;
  let slack = Infinity;
  if (p.topP < 1) {
    let total = 0;
    for (let i = 0; i < keep; i++) total += Math.exp(l[order[i]] - max);
    let cum = 0;
    for (let i = 0; i < keep; i++) {
      const w = Math.exp(l[order[i]] - max) / total;
      if (cum + w > p.topP) {
        slack = Math.min(cum + w - p.topP, p.topP - cum);
        keep = i + 1;
        break;
      }
      cum += w;
    }
  }
  if (p.minP > 0) {
    const threshold = Math.fround(max + Math.log(Math.fround(p.minP)));
    let k = 0;
    while (k < keep && l[order[k]] >= threshold) k++;
    keep = Math.max(1, k);
  }
  const set = order.slice(0, keep).sort((a, b) => a - b);
  const weights = set.map((id) => Math.exp((l[id] - max) / p.temperature));
  const total = weights.reduce((a, b) => a + b, 0);
  const r = coin * total;
  let cum = 0;
  for (let i = 0; i < set.length; i++) {
    if (r < cum + weights[i]) return { token: set[i], slack: Math.min(slack, (r - cum) / total, (cum + weights[i] - r) / total) };
    cum += weights[i];
  }
  return { token: set[set.length - 1], slack: 0 };
}

describe('the full pipeline against a float64 brute-force reference', () => {
  it('agrees on 465 random cases (vocabularies 7 to 151936, ties, -inf, every truncation mix)', () => {
    const rand = mulberry32(2024);
    let compared = 0;
    let knifeEdges = 0;
    for (let c = 0; c < 600; c++) {
      const n = [7, 300, 5000, 151936][c % 4];
      if (n === 151936 && c % 40 !== 3) continue; // a few large cases keep the test fast
      const logits = randomLogits(n, 0.5 + 4 * rand(), 1000 + c);
      if (c % 5 === 0) for (let j = 0; j < n / 4; j++) logits[Math.floor(rand() * n)] = logits[Math.floor(rand() * n)];
      if (c % 7 === 0) for (let j = 0; j < 3; j++) logits[Math.floor(rand() * n)] = -Infinity;
      const params = {
        temperature: c % 13 === 0 ? 0 : 0.2 + 2 * rand(),
        topK: rand() < 0.5 ? 1 + Math.floor(rand() * (rand() < 0.5 ? 40 : 6000)) : 0,
        topP: rand() < 0.5 ? rand() : 1,
        minP: rand() < 0.3 ? 0.3 * rand() : 0,
      };
      const seed = BigInt(1 + c * 7919);
      const coin = toF32(referenceU32(seed, 1)[0]);
      const got = new Sampler(seed).sample(logits, params);
      const want = referenceSample(logits, params, coin);
      // Within float rounding of a step (the native sums run in float over up to 151936 terms).
      if (want.slack < 2e-6) {
        knifeEdges++;
        continue;
      }
      compared++;
      if (got !== want.token) throw new Error(`case ${c}: n=${n} ${JSON.stringify(params)} got ${got}, expected ${want.token}`);
    }
    expect(compared).toBeGreaterThan(420);
    expect(knifeEdges).toBeLessThan(10);
  });

  it('draws the first token exactly as the inverse cdf of coin = f32(first u32) in id order', () => {
    // logits ln([0.1, 0.2, 0.3, 0.4]) at T = 1: cdf 0.1, 0.3, 0.6, 1.0
    const logits = new Float32Array([0.1, 0.2, 0.3, 0.4].map(Math.log));
    const cdf = [0.1, 0.3, 0.6, 1.0];
    for (let seed = 1; seed <= 200; seed++) {
      const coin = toF32(referenceU32(BigInt(seed), 1)[0]);
      if (cdf.some((c) => Math.abs(c - coin) < 1e-5)) continue;
      expect(new Sampler(seed).sample(logits, { temperature: 1 })).toBe(cdf.findIndex((c) => coin < c));
    }
  });
});

describe('randomness', () => {
  const logits = randomLogits(1000, 1, 77);
  const params = { temperature: 1, topP: 0.95 };
  const run = (seed: number | bigint) => {
    const s = new Sampler(seed);
    return Array.from({ length: 64 }, () => s.sample(logits, params));
  };

  it('the same seed gives the same tokens, another seed other tokens', () => {
    expect(run(11)).toEqual(run(11));
    expect(run(11n)).toEqual(run(11));
    expect(run(12)).not.toEqual(run(11));
  });

  it('temperature-1 frequencies over a known softmax lie within 5 standard errors', () => {
    const probs = [0.05, 0.15, 0.3, 0.5];
    const l = new Float32Array(probs.map((p) => Math.log(p) + 3));
    const s = new Sampler(123456789n);
    const N = 40000;
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < N; i++) counts[s.sample(l, { temperature: 1 })]++;
    probs.forEach((p, i) => {
      expect(Math.abs(counts[i] / N - p)).toBeLessThan(5 * Math.sqrt((p * (1 - p)) / N));
    });
  });

  it('top-k 2 renormalises over the two best; temperature 0.5 squares the odds', () => {
    const l = new Float32Array([Math.log(0.1), Math.log(0.3), Math.log(0.6), Math.log(0.05)]);
    const s = new Sampler(42n);
    const N = 30000;
    const counts = [0, 0, 0, 0];
    for (let i = 0; i < N; i++) counts[s.sample(l, { temperature: 0.5, topK: 2 })]++;
    expect(counts[0] + counts[3]).toBe(0);
    const p1 = 0.09 / (0.09 + 0.36); // (0.3² : 0.6²)
    expect(Math.abs(counts[1] / N - p1)).toBeLessThan(5 * Math.sqrt((p1 * (1 - p1)) / N));
  });

  it('min-p keeps exactly the tokens with prob >= minP · max prob', () => {
    // probs ∝ [1, 0.5, 0.25, 0.1]: minP 0.3 keeps ids 0 and 1
    const l = new Float32Array([0, Math.log(0.5), Math.log(0.25), Math.log(0.1)]);
    const s = new Sampler(8n);
    const seen = new Set<number>();
    for (let i = 0; i < 2000; i++) seen.add(s.sample(l, { temperature: 1, minP: 0.3 }));
    expect([...seen].sort()).toEqual([0, 1]);
  });

  it('top-p keeps the shortest prefix whose mass exceeds p', () => {
    // probs [0.5, 0.3, 0.15, 0.05]: p = 0.79 keeps 2 tokens (0.8 > 0.79), p = 0.8 keeps 3
    const l = new Float32Array([0.5, 0.3, 0.15, 0.05].map(Math.log));
    const s = new Sampler(9n);
    const seen = (p: number) => {
      const set = new Set<number>();
      for (let i = 0; i < 3000; i++) set.add(s.sample(l, { temperature: 1, topP: p }));
      return [...set].sort();
    };
    expect(seen(0.79)).toEqual([0, 1]);
    expect(seen(0.81)).toEqual([0, 1, 2]);
  });
});
