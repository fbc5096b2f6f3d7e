/**
 * Work written as a generator that yields between small steps, run either to the end at once or in
 * slices that give the event loop a turn every few milliseconds.
 */

/** The time the event loop is held before it gets a turn. */
const SLICE_MS = 8;

export async function inSlices<T>(steps: Generator<void, T>): Promise<T> {
  let start = performance.now();
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
    if (performance.now() - start > SLICE_MS) {
      await new Promise((resolve) => setImmediate(resolve));
      start = performance.now();
    }
  }
}

export function toEnd<T>(steps: Generator<void, T>): T {
  for (;;) {
    const step = steps.next();
    if (step.done) return step.value;
  }
}
