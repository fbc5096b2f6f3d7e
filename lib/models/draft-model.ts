/**
 * A draft model for speculative decoding (lib/generation/speculative.ts): a smaller model with the
 * target's vocabulary guesses the next tokens greedily, in a session of its own that keeps its KV
 * cache in step with the target's sequence (the common prefix kept, the rest fed) for the whole
 * generation.
 */
import type { SessionLease } from '../generation/generate';
import { commonPrefixLength } from '../generation/generate';
import type { DraftSource, DraftTarget } from '../generation/speculative';
import { native } from '../addon/native';
import type { Tokenizer } from '../tokenizers';

/** The ids compared between the draft's and the target's vocabularies: every one up to this many, then a stride over the rest. */
const COMPARED_IDS = 4096;

/** Throws a TypeError naming the first id whose token differs between the two vocabularies. */
export function checkSameVocabulary(draft: { vocabSize: number; tokenizer: Tokenizer }, target: DraftTarget): void {
  if (draft.vocabSize !== target.vocabSize) {
    throw new TypeError(`speculative.draft: the draft model's vocabulary has ${draft.vocabSize} tokens, the target's ${target.vocabSize}; they must be the same`);
  }
  const stride = Math.max(1, Math.floor(target.vocabSize / COMPARED_IDS));
  for (let id = 0; id < target.vocabSize; id += id < COMPARED_IDS ? 1 : stride) {
    const a = draft.tokenizer.idToToken(id);
    const b = target.idToToken(id);
    if (a !== b) throw new TypeError(`speculative.draft: token ${id} is ${JSON.stringify(a)} in the draft model's vocabulary and ${JSON.stringify(b)} in the target's`);
  }
}

/** Greedy guesses from a model's sessions (`acquire` lends one, as GenerationHost.acquire). */
export function modelDrafter(acquire: (ids: readonly number[]) => SessionLease, contextLength: number): DraftSource {
  let lease: SessionLease | undefined;
  const sampler = new (native().Sampler)(1);
  const greedy = { temperature: 0 };
  return {
    async draft(sequence, count, signal) {
      lease ??= acquire(sequence);
      const { session } = lease;
      const n = Math.min(count, contextLength - sequence.length);
      if (n <= 0) return [];
      // The cached prefix kept; at least the last id is fed again for its logits.
      const keep = Math.min(commonPrefixLength(session.tokens, sequence), sequence.length - 1);
      if (keep < session.position) session.truncate(keep);
      let feed: readonly number[] = sequence.slice(keep);
      const out: number[] = [];
      while (out.length < n) {
        const token = await session.step(feed, sampler, greedy, signal ? { signal } : {});
        out.push(token);
        feed = [token];
      }
      return out;
    },
    release() {
      lease?.release();
      lease = undefined;
    },
  };
}
