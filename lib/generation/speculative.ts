/**
 * Speculative decoding: a drafter guesses the next few tokens, one forward pass over the last
 * token and the guesses (the weights read once for all of them) gives the logits after each, and
 * the guesses are kept while the token the sampler draws from those logits is the guess.
 *
 * Drafts are deterministic (a point mass q(d) = 1), so the rejection rule of speculative sampling
 * (accept d with probability min(1, p(d) / q(d)) = p(d), else draw from the residual
 * norm(max(0, p − q)) = p without d) is the same as drawing x ~ p once and keeping d when x = d,
 * emitting x otherwise: each emitted token is one draw from the distribution plain decoding would
 * draw it from, with the same penalties history, and one sampler draw per emitted token as plain
 * decoding makes; and the verification's rows are bitwise their one-token steps' (LanguageSession.evalSteps).
 * So greedy output is plain decoding's, the same seed gives the same sampled output, and sampled
 * output is distributed as plain decoding's.
 *
 *   model.generate(prompt, { speculative: { draft: 'prompt-lookup', maxDraftTokens: 8 } })
 */
import type { NativeSamplingParams, Sampler } from '../addon/binding';
import { rangeError } from '../base/errors';

/** Guesses what follows a sequence for one generation (a draft model's greedy continuation, lib/models/draft-model.ts). */
export interface DraftSource {
  /**
   * Up to `count` tokens likely to follow `sequence` (the prompt and every generated token so far,
   * the last one included); fewer or none where it has no guess.
   */
  draft(sequence: readonly number[], count: number, signal?: AbortSignal): Promise<number[]>;
  /** Called once when the generation ends in any way (a draft model's session goes back). */
  release?(): void;
}

/** The vocabulary a drafter must share with the model it drafts for. */
export interface DraftTarget {
  vocabSize: number;
  /** The token's text (Tokenizer.idToToken). */
  idToToken(id: number): string | undefined;
}

/** What makes a DraftSource for each generation: a Model (`Model.drafter`), or an object of your own. */
export interface DraftModel {
  /** A DraftSource for one generation of a model with `target`'s vocabulary (throws where the vocabularies differ). */
  drafter(target: DraftTarget): DraftSource;
}

/** GenerateOptions.speculative. */
export interface SpeculativeOptions {
  /**
   * Where the guesses come from: 'prompt-lookup' (the tokens that followed the latest earlier
   * occurrence of the sequence's last n-gram, in the prompt or the output; no second model), or a
   * DraftModel: a smaller loaded Model with the same vocabulary, whose greedy continuation is the
   * guess. Default 'prompt-lookup'.
   */
  draft?: 'prompt-lookup' | DraftModel;
  /**
   * Most tokens guessed per verification, 1-32. Default 8 (prompt lookup), 4 (a draft model). How
   * many of them a pass asks for follows the share of guesses kept so far and the pass times
   * measured so far (the count that gives the most tokens per second; 0 where guessing does not pay,
   * with a one-guess probe every 8 passes).
   */
  maxDraftTokens?: number;
  /** Fewest tokens asked for per pass, 0 to maxDraftTokens (= maxDraftTokens: always that many). Default 0. */
  minDraftTokens?: number;
  /** Prompt lookup: the longest and the shortest n-gram looked up (1-8). Defaults 4 and 2. */
  ngramMax?: number;
  ngramMin?: number;
}

/** What speculative decoding did in one generation (Generation.speculative). */
export interface SpeculativeStats {
  /** Tokens guessed and verified. */
  drafted: number;
  /** Guesses kept. */
  accepted: number;
  /** Forward passes that verified guesses (each reads the weights once). */
  verifications: number;
  /** One-token forward passes (verifications and plain steps; not a prompt's prefill). */
  passes: number;
  /** Tokens those passes generated (each one token and the guesses it kept: passes + accepted). */
  emitted: number;
}

export const MAX_DRAFT_TOKENS = 32;
const MAX_NGRAM = 8;

export interface ResolvedSpeculative {
  source: DraftSource;
  maxDraftTokens: number;
  minDraftTokens: number;
}

function checkInt(value: unknown, name: string, min: number, max: number): number | undefined {
  if (value === undefined) return undefined;
  if (!(typeof value === 'number' && Number.isInteger(value) && value >= min && value <= max)) {
    throw rangeError(`speculative.${name} must be an integer in [${min}, ${max}], got ${String(value)}`);
  }
  return value;
}

/** Validates GenerateOptions.speculative (throws RangeError / TypeError naming the field) and makes the generation's drafter. */
export function resolveSpeculative(options: SpeculativeOptions | undefined, target: DraftTarget): ResolvedSpeculative | undefined {
  if (options === undefined) return undefined;
  if (typeof options !== 'object' || options === null) throw new TypeError('speculative must be an object');
  const draft = options.draft ?? 'prompt-lookup';
  const maxDraft = checkInt(options.maxDraftTokens, 'maxDraftTokens', 1, MAX_DRAFT_TOKENS);
  const ngramMax = checkInt(options.ngramMax, 'ngramMax', 1, MAX_NGRAM) ?? 4;
  const ngramMin = checkInt(options.ngramMin, 'ngramMin', 1, MAX_NGRAM) ?? Math.min(2, ngramMax);
  if (ngramMin > ngramMax) throw rangeError(`speculative.ngramMin (${ngramMin}) is more than ngramMax (${ngramMax})`);
  const maxDraftTokens = maxDraft ?? (draft === 'prompt-lookup' ? 8 : 4);
  const minDraftTokens = checkInt(options.minDraftTokens, 'minDraftTokens', 0, maxDraftTokens) ?? 0;
  if (draft === 'prompt-lookup') {
    return {
      source: { draft: async (sequence, count) => promptLookupDraft(sequence, count, ngramMin, ngramMax) },
      maxDraftTokens,
      minDraftTokens,
    };
  }
  if (typeof draft !== 'object' || draft === null || typeof (draft as DraftModel).drafter !== 'function') {
    throw new TypeError("speculative.draft must be 'prompt-lookup' or a DraftModel (a loaded Model, or an object with drafter(target))");
  }
  return { source: draft.drafter(target), maxDraftTokens, minDraftTokens };
}

/**
 * Prompt lookup: for n from `ngramMax` down to `ngramMin`, the latest earlier occurrence of the
 * sequence's last n tokens; the (up to `count`) tokens that followed it. [] when none recurs.
 */
export function promptLookupDraft(sequence: readonly number[], count: number, ngramMin: number, ngramMax: number): number[] {
  const length = sequence.length;
  for (let n = Math.min(ngramMax, length - 1); n >= ngramMin; n--) {
    const start = length - n;
    // An occurrence at i (sequence[i, i + n) = the last n tokens) with something after it, latest first.
    for (let i = start - 1; i >= 0; i--) {
      let k = 0;
      while (k < n && sequence[i + k] === sequence[start + k]) k++;
      if (k === n) return sequence.slice(i + n, Math.min(i + n + count, length)) as number[];
    }
  }
  return [];
}

/**
 * The number of guesses (0 to `max`) that gives the most tokens per unit of time, when each guess is
 * kept with probability `accept` given the ones before it were (so k guesses emit
 * 1 + a + … + a^k tokens on average) and a pass over 1 + k rows costs `single` + k · `perRow`.
 */
export function bestDraftLength(accept: number, single: number, perRow: number, max: number): number {
  let best = 0;
  let bestRate = 1 / single;
  let tokens = 1;
  let reach = 1;
  for (let k = 1; k <= max; k++) {
    reach *= accept;
    tokens += reach;
    const rate = tokens / (single + k * perRow);
    if (rate > bestRate) {
      best = k;
      bestRate = rate;
    }
  }
  return best;
}

/** One pass in this many guesses at least one token when the estimate says none pay, so the estimate can change. */
const PROBE_EVERY = 8;

/**
 * How many guesses a generation verifies next: from the share of guesses kept so far and the pass
 * times measured so far (a one-row pass, and what each verified row adds), the count that gives
 * the most tokens per second (bestDraftLength). Timing chooses only how many guesses are checked,
 * never the output.
 */
export class DraftLength {
  /** Guesses kept, and guesses rejected (at most one a pass: the rest of that pass's are never reached). */
  private accepted = 0;
  private rejected = 0;
  /** Milliseconds of a one-row pass, and added per verified row (exponential averages; undefined until measured). */
  private single: number | undefined;
  private perRow: number | undefined;
  private sinceDraft = 0;

  constructor(
    private readonly max: number,
    private readonly min: number,
  ) {}

  /** The guesses to ask for at the next pass (0: a plain step). */
  next(): number {
    if (this.min > 0) return this.min === this.max ? this.max : Math.max(this.min, this.estimate());
    if (this.single === undefined) return 0; // a plain pass first: its time is the unit
    const k = this.estimate();
    if (k > 0 || ++this.sinceDraft >= PROBE_EVERY) {
      this.sinceDraft = 0;
      return Math.max(k, 1);
    }
    return 0;
  }

  /** bestDraftLength for what was measured so far (before a pass was timed: as if a row cost an eighth of a pass). */
  private estimate(): number {
    if (this.single === undefined) return this.max;
    // The chance a guess is kept once reached (kept ones ÷ reached ones), with one of each assumed.
    const accept = (this.accepted + 1) / (this.accepted + this.rejected + 2);
    return bestDraftLength(accept, this.single, this.perRow ?? this.single / 8, this.max);
  }

  /** A pass of `rows` rows (1: plain) took `ms`; `drafted` guesses of it, `accepted` kept. */
  record(rows: number, ms: number, drafted: number, accepted: number): void {
    const average = (old: number | undefined, value: number) => (old === undefined ? value : 0.7 * old + 0.3 * value);
    this.accepted += accepted;
    if (accepted < drafted) this.rejected++;
    if (rows === 1) this.single = average(this.single, ms);
    else if (this.single !== undefined) this.perRow = average(this.perRow, Math.max(0, ms - this.single) / (rows - 1));
  }
}

/**
 * A generation's speculative passes: how many guesses to ask for (DraftLength), the guesses, their
 * verification, and the stats. `pass` returns undefined where a plain step is to run (no guess
 * asked for or made); the caller times that step and reports it with `stepped`.
 */
export class Speculator {
  readonly stats: SpeculativeStats = { drafted: 0, accepted: 0, verifications: 0, passes: 0, emitted: 0 };
  private readonly length: DraftLength;

  constructor(
    private readonly resolved: ResolvedSpeculative,
    private readonly session: VerifyingSession,
    private readonly vocabSize: number,
  ) {
    this.length = new DraftLength(resolved.maxDraftTokens, resolved.minDraftTokens);
  }

  /** One pass after `token` (sampled, not yet fed); `room`: the most guesses the context and the token limit leave. */
  async pass(token: number, sequence: () => number[], room: number, sampler: Sampler, params: NativeSamplingParams, signal?: AbortSignal): Promise<Verified | undefined> {
    this.stats.passes++;
    const want = Math.min(this.length.next(), room);
    if (want <= 0) return undefined;
    const start = performance.now();
    const draft = (await this.resolved.source.draft(sequence(), want, signal)).slice(0, want);
    if (draft.length === 0) return undefined;
    for (const id of draft) {
      if (!Number.isInteger(id) || id < 0 || id >= this.vocabSize) throw rangeError(`speculative draft: ${id} is not a token id of this vocabulary (size ${this.vocabSize})`);
    }
    const verified = await verifyDraft(this.session, token, draft, this.vocabSize, sampler, params, signal);
    const kept = verified.tokens.length - 1;
    this.length.record(1 + draft.length, performance.now() - start, draft.length, kept);
    this.stats.verifications++;
    this.stats.drafted += draft.length;
    this.stats.accepted += kept;
    return verified;
  }

  /** A plain one-token step took `ms`. */
  stepped(ms: number): void {
    this.length.record(1, ms, 0, 0);
  }
}

/** The session calls a verification makes (LanguageSession's). */
export interface VerifyingSession {
  readonly position: number;
  readonly tokens: ArrayLike<number>;
  evalSteps(ids: ArrayLike<number>, options?: { signal?: AbortSignal }): Promise<Float32Array>;
  truncate(n: number): void;
}

/** One verification's outcome: the emitted tokens (the kept guesses and one drawn token) and each one's logits row. */
export interface Verified {
  tokens: number[];
  rows: Float32Array[];
}

/**
 * Feeds `token` (sampled, not yet in the cache) and the guesses `draft` as one pass, then draws
 * row by row: row j (the logits after `token` and draft[0, j)) is sampled with the penalties
 * history of the cache up to it; draft[j] is kept while it is the draw, and the first draw that is
 * not (or the draw after the last guess) is emitted last. The cache is cut back to hold `token`
 * and the kept guesses: the last emitted token is not fed, as after a plain step.
 */
export async function verifyDraft(
  session: VerifyingSession,
  token: number,
  draft: readonly number[],
  vocabSize: number,
  sampler: Sampler,
  params: NativeSamplingParams,
  signal?: AbortSignal,
): Promise<Verified> {
  const base = session.position;
  const logits = await session.evalSteps([token, ...draft], signal ? { signal } : {});
  if (logits.length !== (draft.length + 1) * vocabSize) {
    throw new Error(`speculative decoding: the session returned ${logits.length} logits for ${draft.length + 1} rows of ${vocabSize}`);
  }
  const history = Int32Array.from(session.tokens);
  const out: Verified = { tokens: [], rows: [] };
  for (let j = 0; j <= draft.length; j++) {
    const row = logits.subarray(j * vocabSize, (j + 1) * vocabSize);
    const drawn = sampler.sample(row, params, history.subarray(0, base + 1 + j));
    out.tokens.push(drawn);
    out.rows.push(row);
    if (j === draft.length || drawn !== draft[j]) break;
  }
  session.truncate(base + out.tokens.length);
  return out;
}
