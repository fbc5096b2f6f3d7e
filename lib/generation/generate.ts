/**
 * Text generation over any engine session that turns token ids into next-token logits: an async
 * iterator of { token, text } pieces with max tokens, stop tokens, stop strings (held back while
 * they may still be forming, never emitted), an AbortSignal, and UTF-8-safe streaming text.
 *
 *   for await (const piece of model.generate('Once upon a time', { maxTokens: 64 })) process.stdout.write(piece.text);
 */
import type { NativeSamplingParams, Sampler } from '../addon/binding';
import type { CompiledJsonSchema, JsonSchema, TokenConstraint } from '../constrain';
import { AbortError, ConstraintError, rangeError } from '../base/errors';
import { lazy } from '../base/lazy';
import { native } from '../addon/native';
import { keptPrefix, shiftedSequence, truncatedPrompt, type ContextShiftOptions } from './context-shift';
import { anyTokenLeft, bannedTokens, resolveSampling, type ResolvedParams, type SamplingOptions } from './sampling';
import { resolveSpeculative, Speculator, type SpeculativeOptions, type SpeculativeStats, type VerifyingSession } from './speculative';
import type { StreamDecoder, Tokenizer } from '../tokenizers';

/** A step's abort signal and allowed-token bitset (a constraint's, the one sampling input that changes per step). */
export interface StepOptions {
  signal?: AbortSignal;
  allowedTokens?: Uint32Array;
}

/** One sequence of an engine with its KV cache (lib/engines/kv-session.ts, lib/pipeline/session.ts). */
export interface LanguageSession {
  /** Positions held in the KV cache. */
  readonly position: number;
  /** The token ids at positions [0, position), oldest first (kept by the session: the penalty history). */
  readonly tokens: ArrayLike<number>;
  /** Feeds ids after `position`; resolves to the logits [V] after the last one. */
  eval(ids: ArrayLike<number>, options?: { signal?: AbortSignal }): Promise<Float32Array>;
  /**
   * eval() resolving to the logits after every fed id [ids.length, V], each row bitwise what a
   * one-token eval at its position gives (engines that have it; speculative decoding verifies with it).
   */
  evalSteps?(ids: ArrayLike<number>, options?: { signal?: AbortSignal }): Promise<Float32Array>;
  /**
   * Feeds ids and samples the next token with the generator state of `sampler`
   * (native/napi/sampler_napi.h), the penalties looking at `tokens`. `params` is the same object at
   * every step of a generation (read once per Sampler); options.allowedTokens is the step's own.
   */
  step(ids: ArrayLike<number>, sampler: Sampler, params: NativeSamplingParams, options?: StepOptions): Promise<number>;
  /** Forgets every position from `n` on. */
  truncate(n: number): void;
  /**
   * Engines that take input rows at layer 0 (image embeddings; lib/engines/decoder.ts): feeds rows
   * [n, hidden] after `position`, named by `ids` in `tokens`, attending to each other when `bidirectional`.
   */
  evalRows?(rows: Float32Array, options: { ids?: ArrayLike<number>; bidirectional?: boolean; logits?: 'none' | 'last' | 'all'; signal?: AbortSignal }): Promise<Float32Array>;
  /** Bytes of the KV cache at its full context, and allocated now (sessions of a KvSession; absent where the cache lives elsewhere). */
  readonly cacheBytes?: number;
  readonly allocatedCacheBytes?: number;
  /** Stops a running eval (it rejects with AbortError). */
  abort(): void;
  /** Frees the session and its KV cache. */
  dispose(): void;
}

/** Options of `model.generate()` and `model.chat()`: the sampling options plus when to stop. */
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
   * lists what is supported; UnsupportedError for the rest, ConstraintError past its bounds). A stop
   * token can only end a complete value. A schema is compiled when generation starts; one from
   * prepareJsonSchema (compiled in slices, off the event loop's long turns) is used as it is.
   */
  jsonSchema?: JsonSchema | CompiledJsonSchema;
  /**
   * Log-probabilities of each generated token under the model's distribution (log-softmax of its
   * logits, before sampling's adjustments), with this many most likely alternatives (0-20). Default: off.
   */
  logprobs?: number;
  /** Tool calls (lib/tools/): the spans of output that open with `open` are calls under `grammar`. */
  toolCalls?: ToolCallConstraint;
  /**
   * Continue past a full context (lib/generation/context-shift.ts, llama.cpp's context shift): keep the first
   * `keep` tokens, drop the oldest half of the rest, feed the kept ones again and go on; a prompt
   * that does not fit is cut the same way first. Needs a finite `maxTokens`. Default: off (a full
   * context ends generation, stop reason 'context-full'; a prompt longer than it is a RangeError).
   */
  contextShift?: ContextShiftOptions;
  /**
   * Speculative decoding (lib/generation/speculative.ts): guessed tokens verified several per
   * forward pass, the output the same as without it (greedy) or distributed as it (sampled). Used
   * after the prompt on engines with one-step rows (the decoder engine: Llama, Qwen, Gemma, ...);
   * a generation under `jsonSchema`, `toolCalls` or `contextShift` decodes one token per pass.
   * Default: off.
   */
  speculative?: SpeculativeOptions;
}

/** How a generation constrains the tool calls it writes (lib/tools/call-grammar.ts makes the grammar). */
export interface ToolCallConstraint {
  /** The text that opens a call in the output ('' : calls are only forced). */
  open: string;
  grammar: CompiledJsonSchema;
  /** The prompt ends with `open`: the first tokens are the call (and `open` leads the text). */
  forced: boolean;
  /** Generation ends as soon as a call is complete (stop reason 'tool-call'). */
  single: boolean;
  /**
   * The grammar of the call that the text before `open` heads, read from that text (Harmony: the
   * `to=functions.NAME` header names the tool); undefined: no call (the text is not a call's
   * header). Without it every call follows `grammar`.
   */
  grammarFor?: (header: string) => CompiledJsonSchema | undefined;
  /** The text the prompt ended with, which leads the output text (default: `open` when forced). */
  lead?: string;
  /**
   * A forced call whose header names the tool outside JSON and then holds tokens no mask allows
   * (Harmony's special tokens): the name is written first under `grammar` (one of the names), then
   * `after` is fed as it is (its special-token text as those tokens) and the arguments follow
   * `grammarFor(lead + name + after)`.
   */
  naming?: { grammar: CompiledJsonSchema; after: string };
}

/** One step of a generation, as its iterator yields it. */
export interface GeneratedPiece {
  /** The token just generated. The last piece may be the stop token that ended generation. */
  token: number;
  /**
   * Text that became final with this token: complete UTF-8 characters only, with text that might
   * begin a stop string held back until it is known not to. Often '' mid-character.
   */
  text: string;
  /** With GenerateOptions.logprobs: the token's log-probability and the most likely alternatives, best first. */
  logprob?: TokenLogprob;
}

/** Log-probability of a generated token, with the most likely alternatives. */
export interface TokenLogprob {
  logprob: number;
  top: { token: number; logprob: number }[];
}

/** MAX_TOP_LOGPROBS: OpenAI's bound on top_logprobs. */
export const MAX_TOP_LOGPROBS = 20;

/** log-softmax of `logits` at `token`, and the `k` most likely tokens (ties: lower id first). */
export function tokenLogprob(logits: Float32Array, token: number, k: number): TokenLogprob {
  let max = -Infinity;
  for (let i = 0; i < logits.length; i++) if (logits[i] > max) max = logits[i];
  let sum = 0;
  for (let i = 0; i < logits.length; i++) sum += Math.exp(logits[i] - max);
  const logZ = max + Math.log(sum);
  const best: number[] = [];
  for (let i = 0; i < logits.length && k > 0; i++) {
    if (best.length === k && logits[i] <= logits[best[k - 1]]) continue;
    let at = best.length === k ? k - 1 : best.length;
    while (at > 0 && logits[best[at - 1]] < logits[i]) at--;
    best.splice(at, 0, i);
    if (best.length > k) best.pop();
  }
  return { logprob: logits[token] - logZ, top: best.map((t) => ({ token: t, logprob: logits[t] - logZ })) };
}

/** Why a generation ended: a stop token, a stop string, `maxTokens`, a full context, or a tool call closed. */
export type StopReason = 'stop-token' | 'stop-string' | 'max-tokens' | 'context-full' | 'tool-call';

/** A generation in progress: async-iterable once; `text()` collects what is left. */
export interface Generation extends AsyncIterableIterator<GeneratedPiece> {
  /** Why generation ended; undefined while it runs (or after an abort or error). */
  readonly stopReason: StopReason | undefined;
  /** Every generated token so far, the stop token included. */
  readonly tokens: readonly number[];
  /** Runs to the end and returns the text of the pieces not yet consumed. */
  text(): Promise<string>;
  /** With GenerateOptions.speculative: the guesses made and kept so far (undefined where it was not used). */
  readonly speculative: SpeculativeStats | undefined;
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

function withLogprob(piece: GeneratedPiece, logprob: TokenLogprob | undefined): GeneratedPiece {
  if (logprob !== undefined) piece.logprob = logprob;
  return piece;
}

function checkGenerateOptions(options: GenerateOptions): { maxTokens: number; stops: string[] } {
  if (options.logprobs !== undefined && !(Number.isInteger(options.logprobs) && options.logprobs >= 0 && options.logprobs <= MAX_TOP_LOGPROBS)) {
    throw rangeError(`logprobs must be an integer in [0, ${MAX_TOP_LOGPROBS}], got ${String(options.logprobs)}`);
  }
  const { maxTokens = Infinity, stop } = options;
  if (typeof maxTokens !== 'number' || !(maxTokens === Infinity || (Number.isInteger(maxTokens) && maxTokens >= 0))) {
    throw rangeError(`maxTokens must be an integer >= 0, got ${String(maxTokens)}`);
  }
  const stops = stop === undefined ? [] : typeof stop === 'string' ? [stop] : [...stop];
  for (const s of stops) if (typeof s !== 'string') throw new TypeError('stop must be a string or an array of strings');
  if (options.signal !== undefined && !(options.signal instanceof AbortSignal)) throw new TypeError('signal must be an AbortSignal');
  return { maxTokens, stops };
}

/** The calls a verification makes of a session with one-step rows. */
function verifyingSession(session: LanguageSession): VerifyingSession {
  return {
    get position() {
      return session.position;
    },
    get tokens() {
      return session.tokens;
    },
    evalSteps: (ids, options) => session.evalSteps!(ids, options),
    truncate: (n) => session.truncate(n),
  };
}

/** JSON-schema constraints, loaded by the first generation that asks for one. */
const constrainModule = lazy(() => require('../constrain') as typeof import('../constrain'));

/**
 * Starts generating after `ids`. Nothing runs until the first next(): then a session is borrowed
 * from `host`, its KV cache keeps its longest common prefix with `ids`, the rest is fed as one
 * prefill, then one token at a time. Throws (synchronously) for bad options or a prompt that does
 * not fit the context.
 */
export function startGeneration(host: GenerationHost, ids: readonly number[], options: GenerateOptions = {}): Generation {
  const { maxTokens, stops } = checkGenerateOptions(options);
  const sampling = resolveSampling(options, host.vocabSize);
  if (ids.length === 0) throw rangeError('generate: the prompt has no tokens (encode it with its BOS, or pass ids)');
  const shift = options.contextShift;
  const keep = shift ? keptPrefix(shift, ids, host.tokenizer.specialIds?.bos, host.contextLength) : 0;
  if (shift) {
    if (maxTokens === Infinity) throw rangeError('generate: contextShift needs a maxTokens (a generation that shifts never fills the context)');
    ids = truncatedPrompt(ids, host.contextLength, keep);
  }
  if (ids.length > host.contextLength) {
    throw rangeError(`generate: the prompt has ${ids.length} tokens, more than the context length ${host.contextLength}`);
  }
  const stopTokens = new Set(options.stopTokens ?? []);
  const signal = options.signal;
  const logprobs = options.logprobs;
  const { tokenizer, contextLength } = host;
  // An unsupported schema, or one past the bounds, throws now.
  const schema = options.jsonSchema === undefined ? undefined : constrainModule().compiledJsonSchema(options.jsonSchema);
  const banned = bannedTokens(sampling.params, host.vocabSize);
  if (!anyTokenLeft(host.vocabSize, undefined, banned)) {
    throw new ConstraintError('NO_ALLOWED_TOKEN', `logitBias bans every token of the vocabulary (size ${host.vocabSize}): nothing can be generated`);
  }

  const speculative = options.jsonSchema || options.toolCalls || shift ? undefined : resolveSpeculative(options.speculative, { vocabSize: host.vocabSize, idToToken: (id) => host.tokenizer.idToToken(id) });
  let stats: SpeculativeStats | undefined;

  const generated: number[] = [];
  let stopReason: StopReason | undefined;

  async function* run(): AsyncGenerator<GeneratedPiece> {
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
    const constraint = schema === undefined ? undefined : await constrainModule().jsonSchemaConstraint(tokenizer, host.vocabSize, schema, [...stopTokens]);
    const tools = options.toolCalls;
    const toolConstraint = (grammar = tools!.grammar) => constrainModule().jsonSchemaConstraint(tokenizer, host.vocabSize, grammar, []);
    // The call being written (its stop tokens are never allowed: the call ends by its grammar).
    let call: TokenConstraint | undefined = tools?.forced ? await toolConstraint(tools.naming?.grammar) : undefined;
    // The name being written (tools.naming) and its text so far.
    let naming = tools?.forced === true && tools.naming !== undefined;
    let name = '';
    // Recent output text (special tokens' included), where the opening of a call is looked for.
    let tail = tools && !tools.forced ? (tools.lead ?? '') : '';
    let lead = tools?.lead ?? (tools?.forced ? tools.open : '');
    const lease = host.acquire(ids);
    const { session } = lease;
    // Tokens a verification emitted and not yet yielded, with their logits rows; the cache holds all but the last.
    let pending: { token: number; row: Float32Array }[] = [];
    const speculator = speculative && session.evalSteps ? new Speculator(speculative, verifyingSession(session), host.vocabSize) : undefined;
    stats = speculator?.stats;
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
        let stepLogprob: TokenLogprob | undefined;
        // The token comes from a counted pass (a verification's pending ones too).
        let fromPass = pending.length > 0;
        try {
          let allowedTokens: Uint32Array | undefined;
          const active = call ?? constraint;
          if (active) {
            allowedTokens = active.allowed();
            // The sampler would pick some banned token: end with a typed error instead.
            if (!anyTokenLeft(host.vocabSize, allowedTokens, banned)) {
              throw new ConstraintError('NO_ALLOWED_TOKEN', `jsonSchema: no token of the vocabulary${banned ? ' that the logit bias leaves' : ''} continues the JSON text`);
            }
          }
          const plainStart = performance.now();
          if (speculator && pending.length === 0 && feed.length === 1) {
            // Room for the guesses: in the context, and before maxTokens (the drawn token after them counts too).
            const room = Math.min(contextLength - session.position - 2, maxTokens - generated.length - 1);
            const verified = await speculator.pass(feed[0], () => [...ids, ...generated], room, sampler, sampling.params, signal);
            if (verified) pending = verified.tokens.map((t, i) => ({ token: t, row: verified.rows[i] }));
            fromPass = true;
          }
          if (pending.length > 0) {
            const next = pending.shift()!;
            token = next.token;
            if (logprobs !== undefined) stepLogprob = tokenLogprob(next.row, token, logprobs);
          } else if (logprobs === undefined) {
            token = await session.step(feed, sampler, sampling.params, { signal, ...(allowedTokens ? { allowedTokens } : {}) });
            if (fromPass) speculator!.stepped(performance.now() - plainStart);
          } else {
            // The logits are needed: fed, then sampled here with the same sampler and penalties window.
            const logits = await session.eval(feed, { signal });
            token = sampler.sample(logits, sampling.params, Int32Array.from(session.tokens), allowedTokens);
            stepLogprob = tokenLogprob(logits, token, logprobs);
          }
        } finally {
          running = false;
        }
        generated.push(token);
        if (stats && fromPass) stats.emitted++;
        // A verification's tokens but its last are in the cache already.
        feed = pending.length > 0 ? [] : [token];
        let decoded = stopTokens.has(token) ? '' : decoder.push(token);
        let callDone = false;
        if (call) {
          call.advance(token);
          if (naming) name += decoded;
          if (naming && call.complete) {
            // The header's rest is fed with the next step; the arguments' grammar is the named tool's.
            naming = false;
            const after = tools!.naming!.after;
            const afterIds = tokenizer.encode(after, { addSpecialTokens: false });
            if (session.position + 1 + afterIds.length >= contextLength) {
              // The header's rest does not fit: the context is full, the call cut short (as at the token limit).
              stopReason = 'context-full';
              const piece = filter.push(decoded);
              yield withLogprob({ token, text: piece.text + filter.flush() + decoder.flush() }, stepLogprob);
              return;
            }
            feed = [token, ...afterIds];
            generated.push(...afterIds);
            decoded += after;
            const grammar = tools!.grammarFor ? tools!.grammarFor((tools!.lead ?? '') + name + after) : tools!.grammar;
            call = grammar === undefined ? undefined : await toolConstraint(grammar);
            callDone = call === undefined;
          } else if (call.complete) {
            call = undefined;
            callDone = tools!.single;
          }
        } else if (tools && tools.open) {
          const special = tokenizer.isSpecial(token) ? (tokenizer.idToToken(token) ?? '') : '';
          // A special opening (Mistral's [TOOL_CALLS]) is kept in the text, which the reply is parsed from.
          if (special === tools.open && options.special !== true) decoded += special;
          // (a header before the opening, Harmony's, is up to ~80 bytes and a 64-byte tool name)
          tail = (tail + (special || decoded)).slice(-(tools.open.length + 192));
          const at = tail.indexOf(tools.open);
          if (at >= 0) {
            const grammar = tools.grammarFor ? tools.grammarFor(tail.slice(0, at)) : tools.grammar;
            const opened = grammar === undefined ? undefined : await toolConstraint(grammar);
            // What the token wrote past the opening is the call's first bytes (not a call if the grammar rejects them).
            call = opened?.advanceBytes(Buffer.from(tail.slice(at + tools.open.length), 'utf8')) ? opened : undefined;
            tail = '';
          }
        } else {
          constraint?.advance(token);
        }
        if (lead) {
          decoded = lead + decoded;
          lead = '';
        }

        if (callDone) {
          stopReason = 'tool-call';
          const piece = filter.push(decoded);
          yield withLogprob({ token, text: piece.text + filter.flush() + decoder.flush() }, stepLogprob);
          return;
        }
        if (stopTokens.has(token)) {
          stopReason = 'stop-token';
          yield withLogprob({ token, text: filter.flush() + decoder.flush() }, stepLogprob);
          return;
        }
        const piece = filter.push(decoded);
        if (piece.stopped) {
          stopReason = 'stop-string';
          yield withLogprob({ token, text: piece.text }, stepLogprob);
          return;
        }
        // The cache + this token = the whole sequence; one more token would not fit (the cache runs ahead while a verification's tokens are pending).
        const full = session.position - pending.length + 1 >= contextLength;
        if (full && shift && generated.length < maxTokens) {
          // The kept tokens past `keep` are fed again with the next step (no key rotation).
          const kept = shiftedSequence([...Array.from(session.tokens), token], keep);
          session.truncate(keep);
          feed = kept.slice(keep);
          yield withLogprob({ token, text: piece.text }, stepLogprob);
          continue;
        }
        if (full || generated.length >= maxTokens) {
          // The last token: release the held-back text and any incomplete character.
          const tail = filter.push(decoder.flush());
          stopReason = tail.stopped ? 'stop-string' : full && generated.length < maxTokens ? 'context-full' : 'max-tokens';
          yield withLogprob({ token, text: piece.text + tail.text + (tail.stopped ? '' : filter.flush()) }, stepLogprob);
          return;
        }
        yield withLogprob({ token, text: piece.text }, stepLogprob);
      }
      stopReason = 'max-tokens'; // maxTokens 0
    } catch (error) {
      // An aborted or failed step leaves the cache (and its tokens) at its last committed position.
      if (signal?.aborted && !(error instanceof AbortError)) throw new AbortError(undefined, { cause: error });
      throw error;
    } finally {
      signal?.removeEventListener('abort', onAbort);
      // Guesses kept but never yielded leave the cache, which then holds what plain decoding's would.
      try {
        if (pending.length > 0) session.truncate(session.position - pending.length);
      } catch {
        // (a session disposed under the generation: nothing to cut back)
      }
      speculative?.source.release?.();
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
    get speculative() {
      return stats;
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
