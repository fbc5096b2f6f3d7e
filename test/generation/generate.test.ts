/**
 * startGeneration's mechanics over a scripted session (each eval's logits pick the script's next
 * token): stop tokens, max tokens, a full context, stop strings held back and cut, UTF-8 split
 * across tokens, abort, early break, KV-prefix reuse and the engine's step() fast path.
 */
import type { NativeSamplingParams, Sampler } from '../../lib/addon/binding';
import { AbortError } from '../../lib/base/errors';
import { StopStringFilter, startGeneration, type GenerationHost, type LanguageSession, type SessionLease } from '../../lib/generation/generate';
import type { DecodeOptions, StreamDecoder, Tokenizer } from '../../lib/tokenizers';

const VOCAB = 64;
const EOS = 0;

/** Tokens as byte strings; id 0 is EOS (special), ids >= 1 decode to `bytes[id]`. */
class BytesTokenizer implements Partial<Tokenizer> {
  readonly vocabSize = VOCAB;
  readonly specialIds = { eos: EOS };
  constructor(private readonly bytes: Record<number, number[]>) {}
  createStreamDecoder(options?: DecodeOptions): StreamDecoder {
    let decoder = new TextDecoder('utf-8', { fatal: false });
    return {
      push: (id: number) => {
        if (id === EOS && options?.skipSpecialTokens) return '';
        const b = id === EOS ? [...Buffer.from('<eos>')] : this.bytes[id] ?? [];
        return decoder.decode(Uint8Array.from(b), { stream: true });
      },
      flush: () => {
        const rest = decoder.decode();
        decoder = new TextDecoder('utf-8', { fatal: false });
        return rest;
      },
    };
  }
}

const text = (s: string) => [...Buffer.from(s, 'utf8')];

/** A session whose logits after n positions put 10 on script(n) and 0 elsewhere; `tokens` are the ids it holds. */
class ScriptedSession implements LanguageSession {
  position = 0;
  readonly tokens: number[] = [];
  fed: number[][] = [];
  aborts = 0;
  disposed = false;
  private pendingReject: ((e: unknown) => void) | undefined;

  constructor(
    private readonly script: (position: number) => number,
    private readonly delayMs = 0,
  ) {}

  async eval(ids: ArrayLike<number>): Promise<Float32Array> {
    const batch = Array.from(ids);
    this.fed.push(batch);
    if (this.delayMs > 0) {
      await new Promise<void>((resolve, reject) => {
        const timer = setTimeout(resolve, this.delayMs);
        this.pendingReject = (e) => {
          clearTimeout(timer);
          reject(e);
        };
      });
      this.pendingReject = undefined;
    }
    this.position += batch.length;
    this.tokens.push(...batch);
    const logits = new Float32Array(VOCAB);
    logits[this.script(this.position)] = 10;
    return logits;
  }

  async step(ids: ArrayLike<number>, sampler: Sampler, params: NativeSamplingParams): Promise<number> {
    return sampler.sample(await this.eval(ids), params, Int32Array.from(this.tokens));
  }

  truncate(n: number): void {
    if (n > this.position) throw new RangeError('truncate past the position');
    this.position = n;
    this.tokens.length = n;
  }

  abort(): void {
    this.aborts++;
    this.pendingReject?.(new AbortError());
  }

  dispose(): void {
    this.disposed = true;
  }
}

/** `history`: the ids the session holds (ScriptedSession.tokens). */
function hostFor(session: LanguageSession, tokenizer: BytesTokenizer, options: { contextLength?: number } = {}) {
  const history = session.tokens;
  let releases = 0;
  let acquires = 0;
  const host: GenerationHost = {
    tokenizer: tokenizer as unknown as Tokenizer,
    contextLength: options.contextLength ?? 100,
    vocabSize: VOCAB,
    acquire(): SessionLease {
      acquires++;
      return { session, release: () => void releases++ };
    },
  };
  return { host, history, counts: () => ({ acquires, releases }) };
}

async function collect(gen: AsyncIterable<{ token: number; text: string }>) {
  const pieces: { token: number; text: string }[] = [];
  for await (const p of gen) pieces.push(p);
  return pieces;
}

// Prompt ids 1..3, then the script emits 10, 11, 12, ... then EOS at position `eosAt`.
const counting = (eosAt: number) => (position: number) => (position >= eosAt ? EOS : 6 + position);
const letters = new BytesTokenizer(Object.fromEntries(Array.from({ length: VOCAB }, (_, i) => [i, text(String.fromCharCode(64 + i))])));

describe('startGeneration', () => {
  it('generates until a stop token, which ends the pieces with no text of its own', async () => {
    const session = new ScriptedSession(counting(7));
    const { host, history, counts } = hostFor(session, letters);
    const gen = startGeneration(host, [1, 2, 3], { stopTokens: [EOS] });
    const pieces = await collect(gen);
    expect(pieces).toEqual([
      { token: 9, text: 'I' },
      { token: 10, text: 'J' },
      { token: 11, text: 'K' },
      { token: 12, text: 'L' },
      { token: EOS, text: '' },
    ]);
    expect(gen.stopReason).toBe('stop-token');
    expect(gen.tokens).toEqual([9, 10, 11, 12, EOS]);
    expect(session.fed).toEqual([[1, 2, 3], [9], [10], [11], [12]]); // one prefill, then one token per step
    expect(history).toEqual([1, 2, 3, 9, 10, 11, 12]);
    expect(counts()).toEqual({ acquires: 1, releases: 1 });
  });

  it('stops after maxTokens (a stop token counts) and feeds nothing for maxTokens 0', async () => {
    const session = new ScriptedSession(counting(100));
    const { host } = hostFor(session, letters);
    const gen = startGeneration(host, [1, 2, 3], { maxTokens: 3 });
    expect((await collect(gen)).map((p) => p.token)).toEqual([9, 10, 11]);
    expect(gen.stopReason).toBe('max-tokens');
    const none = startGeneration(hostFor(new ScriptedSession(counting(100)), letters).host, [1], { maxTokens: 0 });
    expect(await none.text()).toBe('');
    expect(none.stopReason).toBe('max-tokens');
  });

  it('stops when the context is full: prompt + generated = the context, the last token never fed', async () => {
    const session = new ScriptedSession(counting(100));
    const { host, history } = hostFor(session, letters, { contextLength: 8 });
    const gen = startGeneration(host, [1, 2, 3, 4, 5], {});
    const pieces = await collect(gen);
    expect(pieces.map((p) => p.token)).toEqual([11, 12, 13]);
    expect(gen.stopReason).toBe('context-full');
    expect(history.length).toBe(7);
    expect(session.position).toBe(7);
    // A prompt that fills the context generates nothing (and feeds nothing).
    const full = new ScriptedSession(counting(100));
    const filled = startGeneration(hostFor(full, letters, { contextLength: 8 }).host, [1, 2, 3, 4, 5, 6, 7, 8], {});
    expect(await collect(filled)).toEqual([]);
    expect([filled.stopReason, full.position]).toEqual(['context-full', 0]);
    expect(() => startGeneration(host, [1, 2, 3, 4, 5, 6, 7, 8, 9], {})).toThrow(/more than the context length 8/);
  });

  it('holds back text that may start a stop string and never emits the stop string', async () => {
    // tokens 1..: 'Hel' 'lo S' 'TO' 'P wor' 'ld'
    const tok = new BytesTokenizer({ 1: text('>'), 2: text('Hel'), 3: text('lo S'), 4: text('TO'), 5: text('P wor'), 6: text('ld') });
    const script = (p: number) => [0, 0, 3, 4, 5, 6, 0][p] ?? 0; // after the prompt [1, 2]
    const gen = startGeneration(hostFor(new ScriptedSession(script), tok).host, [1, 2], { stop: ['STOP', 'never'] });
    const pieces = await collect(gen);
    expect(pieces).toEqual([
      { token: 3, text: 'lo ' }, // 'S' might begin 'STOP'
      { token: 4, text: '' }, // 'STO' still might
      { token: 5, text: '' }, // 'STOP' completes: cut before it
    ]);
    expect(gen.stopReason).toBe('stop-string');
  });

  it('releases held-back text that turns out not to be a stop string, and at the end', async () => {
    const tok = new BytesTokenizer({ 1: text('>'), 2: text('ab S'), 3: text('T'), 4: text('x'), 5: text(' S') });
    const script = (p: number) => [0, 2, 3, 4, 5][p] ?? 0;
    const gen = startGeneration(hostFor(new ScriptedSession(script), tok).host, [1], { stop: 'STOP', maxTokens: 4 });
    const pieces = await collect(gen);
    expect(pieces.map((p) => p.text)).toEqual(['ab ', '', 'STx', ' S']);
    expect(gen.stopReason).toBe('max-tokens');
  });

  it('StopStringFilter finds overlapping prefixes and the earliest stop', () => {
    const f = new StopStringFilter(['aab', 'b!']);
    expect(f.push('xa')).toEqual({ text: 'x', stopped: false });
    expect(f.push('a')).toEqual({ text: '', stopped: false });
    expect(f.push('a')).toEqual({ text: 'a', stopped: false }); // 'aaa': keep 'aa'
    expect(f.push('b!')).toEqual({ text: '', stopped: true }); // 'aab!' holds both; 'aab' starts first
    const g = new StopStringFilter([]);
    expect(g.push('anything')).toEqual({ text: 'anything', stopped: false });
  });

  it('streams whole UTF-8 characters when a character is split across tokens', async () => {
    const [c3, a9] = text('é');
    const tok = new BytesTokenizer({ 1: text('>'), 2: text('caf'), 3: [c3], 4: [a9], 5: [0xe2, 0x82] });
    const script = (p: number) => [0, 2, 3, 4, 5][p] ?? 0;
    const gen = startGeneration(hostFor(new ScriptedSession(script), tok).host, [1], { maxTokens: 4 });
    const pieces = await collect(gen);
    expect(pieces.map((p) => p.text)).toEqual(['caf', '', 'é', '\ufffd']); // the cut-off '€' flushes as U+FFFD
  });

  it('rejects bad options synchronously', () => {
    const { host } = hostFor(new ScriptedSession(counting(9)), letters);
    expect(() => startGeneration(host, [1], { maxTokens: -1 })).toThrow(RangeError);
    expect(() => startGeneration(host, [1], { maxTokens: 1.5 })).toThrow(RangeError);
    expect(() => startGeneration(host, [1], { temperature: -1 })).toThrow(RangeError);
    expect(() => startGeneration(host, [], {})).toThrow(/no tokens/);
    expect(() => startGeneration(host, [1], { stop: [5 as unknown as string] })).toThrow(TypeError);
    expect(() => startGeneration(host, [1], { signal: {} as AbortSignal })).toThrow(TypeError);
  });
});

describe('abort and early exit', () => {
  it('an abort during an eval stops it and the iterator throws AbortError; the lease is returned', async () => {
    const session = new ScriptedSession(counting(100), 20);
    const { host, history, counts } = hostFor(session, letters);
    const controller = new AbortController();
    const gen = startGeneration(host, [1, 2, 3], { signal: controller.signal });
    const seen: number[] = [];
    await expect(
      (async () => {
        for await (const p of gen) {
          seen.push(p.token);
          if (seen.length === 2) setTimeout(() => controller.abort(), 5); // lands inside the next eval
        }
      })(),
    ).rejects.toBeInstanceOf(AbortError);
    expect(seen).toEqual([9, 10]);
    expect(session.aborts).toBe(1);
    expect(history).toEqual([1, 2, 3, 9]); // the aborted eval of 10 never committed
    expect(session.position).toBe(4);
    expect(counts().releases).toBe(1);
    expect(gen.stopReason).toBeUndefined();
  });

  it('an already aborted signal throws at the first next() without borrowing a session', async () => {
    const controller = new AbortController();
    controller.abort();
    const { host, counts } = hostFor(new ScriptedSession(counting(100)), letters);
    const gen = startGeneration(host, [1], { signal: controller.signal });
    await expect(gen.next()).rejects.toBeInstanceOf(AbortError);
    expect(counts()).toEqual({ acquires: 0, releases: 0 });
  });

  it('breaking out of for-await returns the session at once and evaluates nothing more', async () => {
    const session = new ScriptedSession(counting(100));
    const { host, history, counts } = hostFor(session, letters);
    const gen = startGeneration(host, [1, 2, 3], {});
    for await (const p of gen) if (p.token === 10) break;
    expect(counts()).toEqual({ acquires: 1, releases: 1 });
    expect(session.fed.length).toBe(2);
    expect(history).toEqual([1, 2, 3, 9]);
    expect(await gen.next()).toEqual({ done: true, value: undefined });
  });

  it('a generation that is never iterated borrows nothing', () => {
    const { host, counts } = hostFor(new ScriptedSession(counting(100)), letters);
    startGeneration(host, [1, 2], {});
    expect(counts()).toEqual({ acquires: 0, releases: 0 });
  });
});

describe('the KV cache', () => {
  it('keeps the longest common prefix and feeds the rest; an identical prompt re-feeds its last id', async () => {
    const session = new ScriptedSession(counting(100));
    const { host, history } = hostFor(session, letters);
    await startGeneration(host, [1, 2, 3, 4], { maxTokens: 1 }).text();
    expect(history).toEqual([1, 2, 3, 4]);
    session.fed = [];
    await startGeneration(host, [1, 2, 3, 7, 8], { maxTokens: 1 }).text();
    expect(session.fed).toEqual([[7, 8]]);
    session.fed = [];
    await startGeneration(host, [1, 2, 3, 7, 8], { maxTokens: 1 }).text();
    expect(session.fed).toEqual([[8]]);
    session.fed = [];
    await startGeneration(host, [5], { maxTokens: 1 }).text();
    expect(session.fed).toEqual([[5]]);
    expect(history).toEqual([5]);
  });

  it('uses the engine\'s step() with the sampling params and a Sampler; the session keeps the penalty history', async () => {
    const calls: { ids: number[]; params: NativeSamplingParams; sampler: Sampler; history: number[] }[] = [];
    const tokens: number[] = [];
    const session: LanguageSession = {
      get position() {
        return tokens.length;
      },
      tokens,
      eval: () => Promise.reject(new Error('eval must not be used')),
      step: async (ids, sampler, params) => {
        tokens.push(...Array.from(ids));
        calls.push({ ids: Array.from(ids), params, sampler, history: [...tokens] });
        return 20 + tokens.length;
      },
      truncate: (n) => void (tokens.length = n),
      abort: () => undefined,
      dispose: () => undefined,
    };
    const { host } = hostFor(session as unknown as ScriptedSession, letters);
    const gen = startGeneration(host, [1, 2], { maxTokens: 3, temperature: 0.5, repeatPenalty: 1.2, penaltyLastN: 3, seed: 7 });
    expect((await collect(gen)).map((p) => p.token)).toEqual([22, 23, 24]);
    expect(calls.map((c) => c.ids)).toEqual([[1, 2], [22], [23]]);
    expect(calls[0].params).toMatchObject({ temperature: 0.5, repeatPenalty: 1.2, penaltyLastN: 3 });
    expect(calls[0].sampler.rngState).toBe(7n);
    expect(new Set(calls.map((c) => c.sampler)).size).toBe(1); // one generator for the whole generation
    // The history a step samples with (the sampler takes its last penaltyLastN, sampler-native.test.ts).
    expect(calls.map((c) => c.history)).toEqual([[1, 2], [1, 2, 22], [1, 2, 22, 23]]);
  });
});
