/**
 * Work a reader put off for the vocabulary it returned: a GGUF reader's 151k strings not yet
 * decoded, an ajc1 `.tokenizer`'s 151k token views not yet made. The vocabulary's getters do it
 * at once on first use; a Promise API that needs the whole vocabulary runs it first in slices
 * (runYielding), so that the first use finds it done.
 */
import type { TokenizerData } from '../addon/weights';
import type { Steps } from '../base/steps';

const deferred = new WeakMap<TokenizerData, () => Steps<unknown>>();

/** Records `steps` as what `data` still has to do before its getters answer without work. */
export function deferVocabularyWork(data: TokenizerData, steps: () => Steps<unknown>): void {
  deferred.set(data, steps);
}

/** What `data` has put off, in slices (steps.ts); nothing for data that put nothing off or has done it. */
export function* decodeVocabularySteps(data: TokenizerData): Steps<void> {
  const steps = deferred.get(data);
  if (steps) yield* steps();
}
