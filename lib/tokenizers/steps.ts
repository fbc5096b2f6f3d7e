/**
 * Long builds written once as generators that `yield` between slices of work (each a few
 * milliseconds): `runNow` finishes one in a single call (the synchronous APIs), `runYielding`
 * gives the event loop a turn at every yield (the async ones), so loading a 150k-token vocabulary
 * never holds the JS thread for its whole duration.
 */
export type Steps<T> = Generator<void, T, void>;

export function runNow<T>(steps: Steps<T>): T {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
  }
}

export async function runYielding<T>(steps: Steps<T>): Promise<T> {
  for (;;) {
    const r = steps.next();
    if (r.done) return r.value;
    await new Promise<void>((resolve) => setImmediate(resolve));
  }
}
