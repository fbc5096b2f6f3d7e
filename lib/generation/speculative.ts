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
 * decoding makes. So greedy output is plain decoding's, and sampled output is distributed as it.
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
  /** Most tokens guessed per verification, 1-32. Default 8 (prompt lookup), 4 (a draft model). */
  maxDraftTokens?: number;
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
  if (draft === 'prompt-lookup') {
    return {
      source: { draft: async (sequence, count) => promptLookupDraft(sequence, count, ngramMin, ngramMax) },
      maxDraftTokens: maxDraft ?? 8,
    };
  }
  if (typeof draft !== 'object' || draft === null || typeof (draft as DraftModel).drafter !== 'function') {
    throw new TypeError("speculative.draft must be 'prompt-lookup' or a DraftModel (a loaded Model, or an object with drafter(target))");
  }
  return { source: draft.drafter(target), maxDraftTokens: maxDraft ?? 4 };
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

/** The session calls a verification makes (LanguageSession's). */
export interface VerifyingSession {
  readonly position: number;
  readonly tokens: ArrayLike<number>;
  evalAll(ids: ArrayLike<number>, options?: { signal?: AbortSignal }): Promise<Float32Array>;
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
  const logits = await session.evalAll([token, ...draft], signal ? { signal } : {});
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
