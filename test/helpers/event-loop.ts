/**
 * Counts the turns of the event loop while a test awaits work: a call that does its work in a
 * native worker (or yields between slices) lets the loop turn meanwhile. How long the loop waits is
 * a benchmark's figure (scripts/bench/load.js), never a test's: the machine is shared.
 */
export interface EventLoopWatch {
  /** Stops watching; the turns seen. */
  stop(): { ticks: number };
}

/** The first turn is caught with setImmediate, the later ones with 1 ms timers (a chain of immediates would spin). */
export function watchEventLoop(): EventLoopWatch {
  let ticks = 0;
  let done = false;
  const tick = () => {
    ticks++;
    if (!done) setTimeout(tick, 1);
  };
  setImmediate(tick);
  return {
    stop() {
      done = true;
      return { ticks };
    },
  };
}
