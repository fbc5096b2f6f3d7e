/**
 * Speculative decoding (lib/generation/speculative.ts): prompt lookup against closed-form cases,
 * the verification rule against the closed-form distribution it must draw from (a fake session with
 * fixed logits, 20,000 fixed seeds, a chi-square test), and end to end on stories260K: greedy text
 * equal to llama2.c's golden run with prompt lookup and with a draft model, the cache left as plain
 * decoding leaves it, logprobs as plain decoding's, sampled output distributed as plain decoding's.
 */
import * as fs from 'node:fs';
import { native } from '../../lib/addon/native';
import { loadModel, type Model } from '../../lib/models/model';
import { bestDraftLength, DraftLength, promptLookupDraft, resolveSpeculative, verifyDraft, type SpeculativeOptions, type VerifyingSession } from '../../lib/generation/speculative';
import { fixture, readJson } from '../helpers/fixtures';

const stories = (...p: string[]) => fixture('llama-stories260k', ...p);
const golden = fs.readFileSync(stories('expected_greedy_200steps.txt'), 'utf8');
const expected = readJson('llama-stories260k', 'expected.json');
const target = { vocabSize: 512, idToToken: () => undefined };

describe('prompt lookup', () => {
  it('takes what followed the latest earlier occurrence of the longest recurring n-gram', () => {
    // The last 3 tokens (7 8 9) occurred at 1 and 5; the latest (5) is followed by 4 5.
    expect(promptLookupDraft([0, 7, 8, 9, 1, 7, 8, 9, 4, 5, 7, 8, 9], 2, 2, 4)).toEqual([4, 5]);
    // Longer n-grams first: 8 9 recurs after 3 as well, but 7 8 9 (at 1) wins.
    expect(promptLookupDraft([7, 8, 9, 6, 3, 8, 9, 2, 7, 8, 9], 3, 2, 4)).toEqual([6, 3, 8]);
    // No occurrence of the last 2 tokens: none with ngramMin 2, the last token's with ngramMin 1.
    expect(promptLookupDraft([1, 2, 3, 4, 2, 5], 4, 2, 4)).toEqual([]);
    expect(promptLookupDraft([1, 2, 3, 4, 5, 2], 4, 1, 4)).toEqual([3, 4, 5, 2]);
    // The draft stops at the end of the sequence; a sequence shorter than an n-gram has none.
    expect(promptLookupDraft([5, 6, 5, 6], 8, 2, 4)).toEqual([5, 6]);
    expect(promptLookupDraft([5], 8, 1, 4)).toEqual([]);
  });

  it('the best draft length is the closed form\'s argmax of tokens per unit of time', () => {
    // Always kept, rows free: as many as allowed; never kept: none.
    expect(bestDraftLength(1, 10, 0, 8)).toBe(8);
    expect(bestDraftLength(0, 10, 1, 8)).toBe(0);
    // a = 0.9, a pass 25 ms, 8.3 ms a row: k guesses give (1 - 0.9^(k+1)) / 0.1 tokens in 25 + 8.3k ms.
    const rate = (k: number) => (1 - 0.9 ** (k + 1)) / 0.1 / (25 + 8.3 * k);
    const argmax = [...Array(9).keys()].reduce((best, k) => (rate(k) > rate(best) ? k : best), 0);
    expect(bestDraftLength(0.9, 25, 8.3, 8)).toBe(argmax);
    expect(argmax).toBeGreaterThan(1);
    // Rows costing a whole pass: a guess pays only if it is always kept.
    expect(bestDraftLength(0.95, 10, 10, 8)).toBe(0);
  });

  it('the adaptive count: a plain pass first, then what the measured times and acceptance say; a probe when none pays', () => {
    const length = new DraftLength(8, 0);
    expect(length.next()).toBe(0);
    length.record(1, 20, 0, 0);
    // No verification timed yet: a row counted at an eighth of a pass, acceptance 1/2 (no guesses yet).
    expect(length.next()).toBe(bestDraftLength(0.5, 20, 2.5, 8));
    // Every guess rejected and rows as dear as a pass: plain steps, one guess every 8th pass.
    length.record(9, 200, 8, 0);
    const asked = Array.from({ length: 16 }, () => length.next());
    expect(asked.filter((k) => k > 0)).toEqual([1, 1]);
    expect(new DraftLength(4, 4).next()).toBe(4);
  });

  it('options are checked, naming the field', () => {
    expect(() => resolveSpeculative({ maxDraftTokens: 0 }, target)).toThrow(/speculative.maxDraftTokens/);
    expect(() => resolveSpeculative({ maxDraftTokens: 33 }, target)).toThrow(/speculative.maxDraftTokens/);
    expect(() => resolveSpeculative({ ngramMin: 3, ngramMax: 2 }, target)).toThrow(/ngramMin/);
    expect(() => resolveSpeculative({ maxDraftTokens: 4, minDraftTokens: 5 }, target)).toThrow(/speculative.minDraftTokens/);
    expect(() => resolveSpeculative({ draft: 'nope' as never }, target)).toThrow(/speculative.draft/);
    expect(resolveSpeculative(undefined, target)).toBeUndefined();
    expect(resolveSpeculative({}, target)!.maxDraftTokens).toBe(8);
  });
});

/** A session with fixed logits rows: row j is the same whatever was fed. */
function fixedSession(rows: number[][]): VerifyingSession & { cut: number[] } {
  let position = 10;
  const cut: number[] = [];
  return {
    cut,
    get position() {
      return position;
    },
    tokens: new Int32Array(64),
    async evalSteps(ids) {
      position += ids.length;
      return Float32Array.from(rows.slice(0, ids.length).flat());
    },
    truncate(n) {
      cut.push(n);
      position = n;
    },
  };
}

const softmax = (row: number[]) => {
  const e = row.map((x) => Math.exp(x - Math.max(...row)));
  const z = e.reduce((a, b) => a + b, 0);
  return e.map((x) => x / z);
};

/** The chi-square value a statistic with `df` degrees of freedom passes with probability 0.001 (Wilson-Hilferty). */
const chiSquare999 = (df: number) => df * (1 - 2 / (9 * df) + 3.09 * Math.sqrt(2 / (9 * df))) ** 3;

describe('verification', () => {
  it('draws each emitted token from the distribution plain decoding draws it from (closed form, 20,000 seeds)', async () => {
    const rows = [
      [0.5, 1.2, 2.0, -1, 0.1, 0.7],
      [1.0, 0.2, -0.5, 0.3, 2.2, 0.0],
      [0.0, 1.8, 0.4, 0.9, -0.2, 1.1],
      [0.3, 0.3, 0.3, 1.5, 0.8, -1.0],
    ];
    const draft = [2, 4, 1];
    const p = rows.map(softmax);
    // P(j guesses kept, then x drawn) = prod_{i<j} p_i(d_i) * p_j(x), x != d_j unless j = 3.
    const expectedP = new Map<string, number>();
    let prefix = 1;
    for (let j = 0; j <= draft.length; j++) {
      for (let x = 0; x < 6; x++) if (j === draft.length || x !== draft[j]) expectedP.set(`${j}:${x}`, prefix * p[j][x]);
      if (j < draft.length) prefix *= p[j][draft[j]];
    }
    const params = { temperature: 1, topK: 0, topP: 1, minP: 0 };
    const sampler = new (native().Sampler)(1);
    const counts = new Map<string, number>();
    const n = 20000;
    for (let seed = 1; seed <= n; seed++) {
      sampler.reseed(seed);
      const session = fixedSession(rows);
      const { tokens } = await verifyDraft(session, 3, draft, 6, sampler, params);
      // The kept guesses are what was drafted; the cache holds the fed token and them.
      expect(tokens.slice(0, -1)).toEqual(draft.slice(0, tokens.length - 1));
      expect(session.cut).toEqual([10 + tokens.length]);
      const key = `${tokens.length - 1}:${tokens[tokens.length - 1]}`;
      counts.set(key, (counts.get(key) ?? 0) + 1);
    }
    let chi = 0;
    let df = -1;
    for (const [key, prob] of expectedP) {
      const e = prob * n;
      if (e < 5) continue;
      chi += ((counts.get(key) ?? 0) - e) ** 2 / e;
      df++;
    }
    expect(df).toBeGreaterThan(10);
    expect(chi).toBeLessThan(chiSquare999(df));
  });
});

describe('stories260K end to end', () => {
  let model: Model;
  beforeAll(async () => {
    model = await loadModel(stories('stories260K.bin'), { threads: 1 });
  });
  afterAll(() => model.dispose());

  it.each([
    [{ minDraftTokens: 8 }],
    [{ maxDraftTokens: 3, minDraftTokens: 3 }],
    [{ ngramMin: 1, ngramMax: 1, maxDraftTokens: 16, minDraftTokens: 16 }],
    [{}],
  ])('greedy 200 tokens with prompt lookup %j are the golden text', async (options) => {
    const gen = model.generate('', { maxTokens: 200, speculative: options });
    expect(await gen.text()).toBe(golden);
    expect(gen.tokens).toEqual(expected.greedy.tokens);
    const stats = gen.speculative!;
    // (how many guesses the adaptive count ({}) asks for follows pass times: only the output is fixed)
    if ((options as SpeculativeOptions).minDraftTokens !== undefined) {
      expect(stats.verifications).toBeGreaterThan(5);
      expect(stats.accepted).toBeGreaterThan(0);
    }
    // Every pass after the prompt emits one token plus the guesses it kept.
    // (the prompt is BOS alone: its pass is a one-token pass too)
    expect(stats.emitted).toBe(200);
    expect(stats.passes + stats.accepted).toBe(stats.emitted);
  });

  it('a generation that stops inside a verification leaves the cache as plain decoding would', async () => {
    for (const maxTokens of [13, 37, 58]) {
      const gen = model.generate('', { maxTokens, speculative: { ngramMin: 1, maxDraftTokens: 16, minDraftTokens: 16 } });
      await gen.text();
      expect(gen.tokens).toEqual(expected.greedy.tokens.slice(0, maxTokens));
      // The next generation reuses the cached prefix: it must hold the right tokens and no others.
      expect(await model.generate('', { maxTokens: 200 }).text()).toBe(golden);
    }
  });

  it('logprobs are plain decoding\'s, bit for bit (each verified row is its one-token step\'s)', async () => {
    const plain = model.generate('', { maxTokens: 60, logprobs: 3 });
    const spec = model.generate('', { maxTokens: 60, logprobs: 3, speculative: { ngramMin: 1, minDraftTokens: 8 } });
    const a: number[] = [];
    const b: number[] = [];
    for await (const piece of plain) a.push(piece.logprob!.logprob, ...piece.logprob!.top.map((t) => t.token));
    for await (const piece of spec) b.push(piece.logprob!.logprob, ...piece.logprob!.top.map((t) => t.token));
    expect(spec.speculative!.accepted).toBeGreaterThan(0);
    expect(b.length).toBe(a.length);
    expect(b).toEqual(a);
  });

  it('a draft model with the same vocabulary: greedy text golden, a model guessing for itself always right', async () => {
    const draft = await loadModel(stories('stories260K.bin'), { threads: 1 });
    try {
      const gen = model.generate('', { maxTokens: 200, speculative: { draft, minDraftTokens: 4 } });
      expect(await gen.text()).toBe(golden);
      const stats = gen.speculative!;
      expect(stats.drafted).toBeGreaterThan(100);
      expect(stats.accepted).toBe(stats.drafted);
      expect(stats.passes).toBeLessThanOrEqual(Math.ceil(200 / 5));
      // The draft model's session went back to its pool.
      expect(draft.sessions.busy).toBe(0);
    } finally {
      draft.dispose();
    }
  });

  it('a draft model with another vocabulary is a TypeError naming it', async () => {
    const other = await loadModel(fixture('ajc1-qwen3-tiny', 'model.bin'), { threads: 1 });
    try {
      expect(() => model.generate('', { speculative: { draft: other } })).toThrow(/draft model's vocabulary/);
    } finally {
      other.dispose();
    }
  });

  it('sampled output: the same seed gives plain decoding\'s text, and other seeds its distribution', async () => {
    const prompt = 'Once upon a time, there was a little girl named Lily. She loved to play outside in the park. Once upon a time, there was a little girl named';
    const sampling = { temperature: 0.7, topK: 0, topP: 1, repeatPenalty: 1.1, maxTokens: 12 };
    const run = async (seed: number, speculative: boolean) => {
      const gen = model.generate(prompt, { ...sampling, seed, ...(speculative ? { speculative: { ngramMin: 1, minDraftTokens: 8 } } : {}) });
      await gen.text();
      return { tokens: gen.tokens as number[], stats: gen.speculative };
    };
    let same = 0;
    let accepted = 0;
    const n = 150;
    // Every run below then finds the prompt cached and feeds its last token alone (a whole-prompt prefill rounds differently).
    await run(0, false);
    const plain: number[][] = [];
    const spec: number[][] = [];
    for (let seed = 1; seed <= n; seed++) {
      const a = await run(seed, false);
      const b = await run(seed, true);
      if (a.tokens.join() === b.tokens.join()) same++;
      accepted += b.stats!.accepted;
      plain.push(a.tokens);
      spec.push((await run(seed + 100_000, true)).tokens);
    }
    expect(accepted).toBeGreaterThan(2 * n);
    // One draw per emitted token from the same generator over the same logits: the same text.
    expect(same).toBe(n);
    // Two-sample chi-square on the tokens at each position, plain's seeds against speculative's others.
    for (let at = 1; at < 12; at += 2) {
      const a = new Map<number, number>();
      const b = new Map<number, number>();
      for (const t of plain) a.set(t[at], (a.get(t[at]) ?? 0) + 1);
      for (const t of spec) b.set(t[at], (b.get(t[at]) ?? 0) + 1);
      let chi = 0;
      let df = -1;
      let restA = 0;
      let restB = 0;
      for (const token of new Set([...a.keys(), ...b.keys()])) {
        const x = a.get(token) ?? 0;
        const y = b.get(token) ?? 0;
        if (x + y < 10) {
          restA += x;
          restB += y;
          continue;
        }
        chi += (x - y) ** 2 / (x + y);
        df++;
      }
      if (restA + restB > 0) {
        chi += (restA - restB) ** 2 / (restA + restB);
        df++;
      }
      if (df > 0) expect(chi).toBeLessThan(chiSquare999(df));
    }
  });
});
