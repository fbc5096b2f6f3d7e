/**
 * Context shift, as llama.cpp does it (llama-server --context-shift): a sequence that would pass
 * the context keeps its first `keep` tokens and drops the oldest half of the rest; a prompt longer
 * than the context is cut the same way before it is fed. weightmap does not rotate cached keys:
 * after a shift the kept tokens past `keep` are fed again (one prefill), so the continuation is
 * exactly a fresh generation after the kept tokens.
 */
import { rangeError } from '../base/errors';

/** GenerateOptions.contextShift: how a generation continues past a full context. */
export interface ContextShiftOptions {
  /**
   * Tokens at the start of the sequence that are never dropped (llama.cpp's n_keep), capped at the
   * context length - 4. Default: 0, plus the BOS token when the prompt starts with it.
   */
  keep?: number;
}

/** The tokens a generation keeps at the start: `keep`, the prompt's BOS counted in when given none, at most contextLength - 4. */
export function keptPrefix(options: ContextShiftOptions, ids: readonly number[], bos: number | undefined, contextLength: number): number {
  const { keep } = options;
  if (keep !== undefined && !(Number.isInteger(keep) && keep >= 0)) throw rangeError(`contextShift.keep must be an integer >= 0, got ${String(keep)}`);
  const wanted = keep ?? (bos !== undefined && ids[0] === bos ? 1 : 0);
  return Math.max(0, Math.min(wanted, contextLength - 4));
}

/** A full sequence shifted: its first `keep` tokens, then all but the oldest half of the rest. */
export function shiftedSequence(tokens: readonly number[], keep: number): number[] {
  const discard = Math.floor((tokens.length - keep) / 2);
  return [...tokens.slice(0, keep), ...tokens.slice(keep + discard)];
}

/**
 * A prompt of `contextLength` tokens or more cut to fit with room to generate, as llama-server
 * cuts one: the first `keep`, then the rest less whole blocks of half the context after `keep`,
 * oldest first. Shorter prompts come back as they are.
 */
export function truncatedPrompt(ids: readonly number[], contextLength: number, keep: number): readonly number[] {
  if (ids.length < contextLength) return ids;
  const block = Math.floor((contextLength - keep) / 2);
  const erased = Math.floor((ids.length - keep - block) / block);
  return [...ids.slice(0, keep), ...ids.slice(keep + erased * block)];
}
