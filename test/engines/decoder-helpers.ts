/** Shared pieces of the decoder engine tests: greedy decoding by argmax and logit comparisons. */
import type { DecoderEngineSession } from '../../lib/engines/decoder';
import { readF32, readJson } from '../helpers/fixtures';

/** Index of the largest value of row `row` of a [rows, n] array; the lowest index wins ties. */
export function argmax(values: Float32Array, n = values.length, row = 0): number {
  let best = row * n;
  for (let i = row * n + 1; i < (row + 1) * n; i++) if (values[i] > values[best]) best = i;
  return best - row * n;
}

/** Largest |a[i] - b[i]| over the first `n` values (a and b may be offset views). */
export function maxAbsDiff(a: ArrayLike<number>, b: ArrayLike<number>, n = Math.min(a.length, b.length)): number {
  let worst = 0;
  for (let i = 0; i < n; i++) worst = Math.max(worst, Math.abs(a[i] - b[i]));
  if (!(worst >= 0)) return Infinity; // NaN anywhere
  return worst;
}

export interface GreedyRun {
  tokens: number[];
  /** The logits that produced each token. */
  logits: Float32Array[];
}

/**
 * Feeds `prompt` (one batch), then picks the argmax and feeds it back, `steps` times or until a
 * stop id (included) is picked.
 */
export async function greedy(session: DecoderEngineSession, prompt: number[], steps: number, stopIds: number[] = []): Promise<GreedyRun> {
  const run: GreedyRun = { tokens: [], logits: [] };
  let logits = await session.eval(prompt);
  for (let i = 0; i < steps; i++) {
    const next = argmax(logits);
    run.tokens.push(next);
    run.logits.push(logits);
    if (stopIds.includes(next) || i === steps - 1) break;
    logits = await session.eval([next]);
  }
  return run;
}

/** stories260K: the 200 greedy tokens after BOS and their logits [200, 512] (fixture). */
export function storiesExpected(): { tokens: number[]; logits: Float32Array; bos: number; vocab: number } {
  const expected = readJson('llama-stories260k', 'expected.json');
  return {
    tokens: expected.greedy.tokens as number[],
    logits: readF32('llama-stories260k', 'greedy_logits.f32'),
    bos: expected.greedy.start_token as number,
    vocab: expected.config.vocab_size as number,
  };
}
