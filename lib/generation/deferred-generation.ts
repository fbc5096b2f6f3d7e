/**
 * A Generation whose prompt is still being tokenized (a long text, in the tokenizer worker): it
 * starts once the ids are there. Whatever starting it throws (a prompt longer than the context,
 * bad options) comes out of the first next() or text() instead of the generate() call.
 */
import type { GeneratedPiece, Generation, StopReason } from './generate';
import type { SpeculativeStats } from './speculative';

export function deferredGeneration(ids: Promise<number[]>, start: (ids: number[]) => Generation): Generation {
  let inner: Generation | undefined;
  let closed = false;
  const started = ids.then((list) => (inner = start(list)));
  started.catch(() => undefined); // reported by the first call that awaits it
  const generation: Generation = {
    get stopReason(): StopReason | undefined {
      return inner?.stopReason;
    },
    get tokens(): readonly number[] {
      return inner?.tokens ?? [];
    },
    get speculative(): SpeculativeStats | undefined {
      return inner?.speculative;
    },
    async next(): Promise<IteratorResult<GeneratedPiece>> {
      const g = await started;
      return closed ? { done: true, value: undefined } : g.next();
    },
    async return(value?: unknown): Promise<IteratorResult<GeneratedPiece>> {
      closed = true;
      return inner ? inner.return!(value) : { done: true, value: undefined };
    },
    async throw(error?: unknown): Promise<IteratorResult<GeneratedPiece>> {
      closed = true;
      if (inner) return inner.throw!(error);
      throw error;
    },
    async text(): Promise<string> {
      return (await started).text();
    },
    [Symbol.asyncIterator]() {
      return generation;
    },
  };
  return generation;
}
