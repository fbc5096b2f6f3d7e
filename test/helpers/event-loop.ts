/** Watches the event loop while a test awaits work: how often it turned, and its longest wait. */
export interface EventLoopWatch {
  /** Stops watching; ticks = turns seen, longest = the longest gap between two turns (ms). */
  stop(): { ticks: number; longest: number };
}

export function watchEventLoop(): EventLoopWatch {
  let ticks = 0;
  let longest = 0;
  let last = performance.now();
  let done = false;
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    ticks++;
    if (!done) setImmediate(tick);
  };
  setImmediate(tick);
  return {
    stop() {
      done = true;
      return { ticks, longest };
    },
  };
}
