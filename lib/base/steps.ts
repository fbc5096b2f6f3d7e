/**
 * Long builds written once as generators that `yield` at checkpoints between small pieces of work
 * (each well under a millisecond): `runNow` finishes one in a single call (the synchronous APIs),
 * `runYielding` gives the event loop a turn at the first checkpoint after each SLICE_MS of work
 * (the async ones), so loading a 150k-token vocabulary never holds the JS thread for long. The
 * slices are measured, not counted, because the pieces differ in cost from one build to another
 * and from one machine (or load) to another.
 */
import { performance } from 'node:perf_hooks';

export type Steps<T> = Generator<void, T, void>;

/** Milliseconds of work between two turns of the event loop. */
const SLICE_MS = 4;

export function runNow<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

export async function runYielding<T>(steps: Steps<T>): Promise<T> {
  for (let start = performance.now(); ; ) {
    const r = steps.next();
    if (r.done) return r.value;
    if (performance.now() - start < SLICE_MS) continue;
    await nextLoopTurn();
    start = performance.now();
  }
}

/**
 * Resolves once the event loop has passed its timers and poll phases. One setImmediate is not
 * enough: queued from a slice that ran in the poll phase (an I/O or worker callback), it runs in
 * the same iteration's check phase, so that slice and the next would hold the thread back to back.
 * An immediate queued from the check phase waits for the next iteration, hence two.
 */
function nextLoopTurn(): Promise<void> {
  return new Promise<void>((resolve) => setImmediate(() => setImmediate(resolve)));
}
