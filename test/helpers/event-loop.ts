import { performance } from 'node:perf_hooks';
import * as v8 from 'node:v8';
import * as vm from 'node:vm';

/**
 * Watches the event loop while a test awaits work: how often it turned, its longest wait, and
 * how long it was busy (running JavaScript or native code on this thread rather than waiting
 * for events: performance.eventLoopUtilization's active time).
 *
 * Timing on a shared machine is noisy, so tests compare `busy` and `longest` with the time the
 * same work takes when done on this thread in the same test (measured under the same load), not
 * with fixed milliseconds: work moved off the thread leaves `busy` a small fraction of it,
 * work done here (in one piece or in slices) makes `busy` about as long as the work itself.
 */
export interface EventLoopWatch {
  /** Stops watching; ticks = turns seen, longest = the longest gap between two turns (ms), busy (ms). */
  stop(): { ticks: number; longest: number; busy: number };
}

/**
 * The first turn is caught with setImmediate, the later ones with 1 ms timers: a chain of
 * immediates would keep the loop from ever waiting, and it would count as busy all along.
 */
export function watchEventLoop(): EventLoopWatch {
  let ticks = 0;
  let longest = 0;
  let last = performance.now();
  let done = false;
  const utilization = performance.eventLoopUtilization();
  const tick = () => {
    const now = performance.now();
    longest = Math.max(longest, now - last);
    last = now;
    ticks++;
    if (!done) setTimeout(tick, 1);
  };
  setImmediate(tick);
  return {
    stop() {
      done = true;
      longest = Math.max(longest, performance.now() - last);
      return { ticks, longest, busy: performance.eventLoopUtilization(utilization).active };
    },
  };
}

/** Milliseconds `work` takes on this thread (the reference the bounds above are relative to). */
export function timeOnThread(work: () => unknown): number {
  const started = performance.now();
  work();
  return performance.now() - started;
}

/**
 * A full garbage collection now, so that none falls due inside a watched window: a test process
 * that has run other test files may owe one that takes longer than the work being watched, and
 * it runs on this thread. (`gc` exists in contexts made after --expose-gc is set.)
 */
export function collectGarbage(): void {
  v8.setFlagsFromString('--expose-gc');
  (vm.runInNewContext('gc') as () => void)();
}
