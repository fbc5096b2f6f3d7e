/**
 * Text generation over any engine session that turns token ids into next-token logits: an async
 * iterator of { token, text } pieces with max tokens, stop tokens, stop strings (held back while
 * they may still be forming, never emitted), an AbortSignal, and UTF-8-safe streaming text.
 *
 *   for await (const piece of model.generate('Once upon a time', { maxTokens: 64 })) process.stdout.write(piece.text);
 */
import type { NativeSamplingParams, Sampler } from '../binding';
import type { JsonSchema } from './constrain';
import { AbortError, rangeError } from './errors';
import { lazy } from './lazy';
import { native } from './native';
import { resolveSampling, type ResolvedParams, type SamplingOptions } from './sampling';
import type { StreamDecoder, Tokenizer } from './tokenizers';

/** One sequence of an engine with its KV cache (lib/engines/kv-session.ts, lib/pipeline/session.ts). */
export interface LanguageSession {
  /** Positions held in the KV cache. */
  readonly position: number;
  /** The token ids at positions [0, position), oldest first (kept by the session: the penalty history). */
  readonly tokens: ArrayLike<number>;
  /** Feeds ids after `position`; resolves to the logits [V] after the last one. */
  eval(ids: ArrayLike<number>, options?: { signal?: AbortSignal }): Promise<Float32Array>;
  /**
   * Feeds ids and samples the next token with the generator state of `sampler`
   * (native/napi/sampler_napi.h), the penalties looking at `tokens`.
   */
  step(ids: ArrayLike<number>, sampler: Sampler, params: NativeSamplingParams, options?: { signal?: AbortSignal }): Promise<number>;
  /** Forgets every position from `n` on. */
  truncate(n: number): void;
  /** Stops a running eval (it rejects with AbortError). */
  abort(): void;
  dispose(): void;
}

export interface GenerateOptions extends SamplingOptions {
  /** Most tokens to generate (a stop token counts). Default: until a stop or the context is full. */
  maxTokens?: number;
  /** Generation ends before the first occurrence of any of these; the stop text is not emitted. */
  stop?: string | readonly string[];
  /** Token ids that end generation (their text is not emitted). Default: the model's EOS and BOS ids. */
  stopTokens?: readonly number[];
  /** Aborts generation: the iterator throws AbortError. */
  signal?: AbortSignal;
  /** Include the text of special tokens (other than the stop tokens) in `text`. Default false. */
  special?: boolean;
  /**
   * Constrains the output to JSON that validates against this schema (lib/constrain/json-schema.ts
   * lists what is supported; UnsupportedError for the rest). A stop token can only end a complete value.
   */
  jsonSchema?: JsonSchema;
}

export interface GeneratedPiece {
  /** The token just generated. The last piece may be the stop token that ended generation. */
  token: number;
  /**
   * Text that became final with this token: complete UTF-8 characters only, with text that might
   * begin a stop string held back until it is known not to. Often '' mid-character.
   */
  text: string;
}

export type StopReason = 'stop-token' | 'stop-string' | 'max-tokens' | 'context-full';

/** A generation in progress: async-iterable once; `text()` collects what is left. */
export interface Generation extends AsyncIterableIterator<GeneratedPiece> {
  /** Why generation ended; undefined while it runs (or after an abort or error). */
  readonly stopReason: StopReason | undefined;
  /** Every generated token so far, the stop token included. */
  readonly tokens: readonly number[];
  /** Runs to the end and returns the text of the pieces not yet consumed. */
  text(): Promise<string>;
}

/** A session lent to one generation. */
export interface SessionLease {
  session: LanguageSession;
  /** Gives the session back (called once, when the generation is over in any way). */
  release(): void;
}

/** What a generation runs on: a model's tokenizer and limits, and its sessions. */
export interface GenerationHost {
  tokenizer: Tokenizer;
  /** Positions a session holds at most. */
  contextLength: number;
  vocabSize: number;
  /** Lends a session, preferably one whose cache shares a long prefix with `ids`. */
  acquire(ids: readonly number[]): SessionLease;
}

/** Length of the longest common prefix. */
export function commonPrefixLength(a: ArrayLike<number>, b: ArrayLike<number>): number {
  const n = Math.min(a.length, b.length);
  let i = 0;
  while (i < n && a[i] === b[i]) i++;
  return i;
}

/** Validates ids against the vocabulary and copies them. */
export function checkTokenIds(ids: ArrayLike<number>, vocabSize: number, what = 'token ids'): number[] {
  const out = Array.from(ids);
  for (const id of out) {
    if (!Number.isInteger(id) || id < 0 || id >= vocabSize) throw rangeError(`${what}: ${id} is not a token id of this vocabulary (size ${vocabSize})`);
  }
  return out;
}

/**
 * Holds back the tail of the text that could still grow into a stop string, and finds a
 * completed one. Emitted text never contains the start of a stop string that later completes.
 */
export class StopStringFilter {
  private pending = '';
  private readonly stops: string[];

  constructor(stops: readonly string[]) {
    this.stops = stops.filter((s) => s.length > 0);
  }

  /** Adds text; returns the text now safe to emit, and whether a stop string completed. */
  push(text: string): { text: string; stopped: boolean } {
    if (this.stops.length === 0) return { text, stopped: false };
    this.pending += text;
    let cut = -1;
    for (const stop of this.stops) {
      const at = this.pending.indexOf(stop);
      if (at >= 0 && (cut < 0 || at < cut)) cut = at;
    }
    if (cut >= 0) {
      const out = this.pending.slice(0, cut);
      this.pending = '';
      return { text: out, stopped: true };
    }
    const hold = this.heldSuffixLength();
    const out = this.pending.slice(0, this.pending.length - hold);
    this.pending = this.pending.slice(this.pending.length - hold);
    return { text: out, stopped: false };
  }

  /** Releases whatever is held back (generation ended for another reason). */
  flush(): string {
    const out = this.pending;
    this.pending = '';
    return out;
  }

  /** The longest suffix of `pending` that is a proper prefix of a stop string. */
  private heldSuffixLength(): number {
    let best = 0;
    for (const stop of this.stops) {
      for (let k = Math.min(stop.length - 1, this.pending.length); k > best; k--) {
        if (this.pending.endsWith(stop.slice(0, k))) {
          best = k;
          break;
        }
      }
    }
    return best;
  }
}

function checkGenerateOptions(options: GenerateOptions): { maxTokens: number; stops: string[] } {
  const { maxTokens = Infinity, stop } = options;
  if (typeof maxTokens !== 'number' || !(maxTokens === Infinity || (Number.isInteger(maxTokens) && maxTokens >= 0))) {
    throw rangeError(`maxTokens must be an integer >= 0, got ${String(maxTokens)}`);
  }
  const stops = stop === undefined ? [] : typeof stop === 'string' ? [stop] : [...stop];
  for (const s of stops) if (typeof s !== 'string') throw new TypeError('stop must be a string or an array of strings');
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new TypeError('signal must be an AbortSignal');
  return { maxTokens, stops };
}

/**
 * Starts generating after `ids`. Nothing runs until the first next(): then a session is borrowed
 * from `host`, its KV cache keeps its longest common prefix with `ids`, the rest is fed as one
 * prefill, then one token at a time. Throws (synchronously) for bad options or a prompt that does
 * not fit the context.
 */
/** JSON-schema constraints, loaded by the first generation that asks for one. */
const constrainModule = lazy(() => require('./constrain') as typeof import('./constrain'));

export function startGeneration(host: GenerationHost, ids: readonly number[], options: GenerateOptions = {}): Generation {
  const { maxTokens, stops } = checkGenerateOptions(options);
  const sampling = resolveSampling(options, host.vocabSize);
  if (ids.length === 0) throw rangeError('generate: the prompt has no tokens (encode it with its BOS, or pass ids)');
  if (ids.length > host.contextLength) {
    throw rangeError(`generate: the prompt has ${ids.length} tokens, more than the context length ${host.contextLength}`);
  }
  const stopTokens = new Set(options.stopTokens ?? []);
  const signal = options.signal;
  const { tokenizer, contextLength } = host;
  if (options.jsonSchema !== undefined) constrainModule().compileJsonSchema(options.jsonSchema); // an unsupported schema throws now

  const generated: number[] = [];
  let stopReason: StopReason | undefined;

  async function* run(): AsyncGenerator<GeneratedPiece> {
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
    const constraint = options.jsonSchema === undefined ? undefined : await constrainModule().jsonSchemaConstraint(tokenizer, host.vocabSize, options.jsonSchema, [...stopTokens]);
    const lease = host.acquire(ids);
    const { session } = lease;
    let running = false;
    const onAbort = () => {
      if (running) session.abort();
    };
    signal?.addEventListener('abort', onAbort, { once: true });
    try {
      // Reuse the cached prefix; at least the last prompt id is fed again to get its logits.
      const keep = Math.min(commonPrefixLength(session.tokens, ids), ids.length - 1);
      if (keep < session.position) session.truncate(keep);
      let feed: number[] = ids.slice(keep);

      // The stream decoder is primed with the prompt, so the first generated piece decodes in
      // context (SentencePiece drops a leading space only at the start of the text or after BOS).
      const decoder: StreamDecoder = tokenizer.createStreamDecoder({ skipSpecialTokens: options.special !== true });
      for (const id of ids) decoder.push(id);
      const filter = new StopStringFilter(stops);
      const sampler = new (native().Sampler)(sampling.seed);

      // The sequence (prompt + generated) never exceeds the context: a prompt that fills it
      // generates nothing.
      if (ids.length >= contextLength && maxTokens > 0) {
        stopReason = 'context-full';
        return;
      }
      while (generated.length < maxTokens) {
        if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
        running = true;
        let token: number;
        try {
          const params = constraint ? { ...sampling.params, allowedTokens: constraint.allowed() } : sampling.params;
          token = await session.step(feed, sampler, params, { signal });
        } finally {
          running = false;
        }
        generated.push(token);
        feed = [token];
        constraint?.advance(token);

        if (stopTokens.has(token)) {
          stopReason = 'stop-token';
          yield { token, text: filter.flush() + decoder.flush() };
          return;
        }
        const piece = filter.push(decoder.push(token));
        if (piece.stopped) {
          stopReason = 'stop-string';
          yield { token, text: piece.text };
          return;
        }
        // The cache + this token = the whole sequence; one more token would not fit.
        const full = session.position + 1 >= contextLength;
        if (full || generated.length >= maxTokens) {
          // The last token: release the held-back text and any incomplete character.
          const tail = filter.push(decoder.flush());
          stopReason = tail.stopped ? 'stop-string' : full && generated.length < maxTokens ? 'context-full' : 'max-tokens';
          yield { token, text: piece.text + tail.text + (tail.stopped ? '' : filter.flush()) };
          return;
        }
        yield { token, text: piece.text };
      }
      stopReason = 'max-tokens'; // maxTokens 0
    } catch (error) {
      // An aborted or failed step leaves the cache (and its tokens) at its last committed position.
      if (signal?.aborted && !(error instanceof AbortError)) throw new AbortError(undefined, { cause: error });
      throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      lease.release();
    }
  }

  const iterator = run();
  return {
    get stopReason() {
      return stopReason;
    },
    get tokens() {
      return generated;
    },
    next: () => iterator.next(),
    return: (value?: unknown) => iterator.return(value as never),
    throw: (error?: unknown) => iterator.throw(error),
    [Symbol.asyncIterator]() {
      return this;
    },
    async text() {
      let text = '';
      for (;;) {
        const { value, done } = await iterator.next();
        if (done) return text;
        text += value.text;
      }
    },
  };
}
