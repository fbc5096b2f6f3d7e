/**
 * A bounded FIFO of requests waiting for one of `maxActive` slots. Admission is decided at once
 * (a full queue is an ApiError 429 with Retry-After, before any response is written); a waiter
 * whose signal fires leaves the queue.
 */
import { AbortError, rangeError } from '../base/errors';
import { ApiError } from './api-error';

/** At most `maxActive` requests running, `maxQueued` waiting in arrival order; past that a 429. */
export class AdmissionQueue {
  private running = 0;
  /** Grants a slot to each waiter, oldest first. */
  private readonly waiting: (() => void)[] = [];

  constructor(
    readonly maxActive: number,
    readonly maxQueued: number,
    /** Called for each request refused with 429 (the server's metrics). */
    private readonly onReject: () => void = () => {},
  ) {
    if (!Number.isInteger(maxActive) || maxActive < 1) throw rangeError(`maxActive must be an integer >= 1, got ${maxActive}`);
    if (!Number.isInteger(maxQueued) || maxQueued < 0) throw rangeError(`maxQueued must be an integer >= 0, got ${maxQueued}`);
  }

  get active(): number {
    return this.running;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Takes a slot: resolves to its release function once one is free. Throws ApiError 429 at once
   * when every slot is busy and the queue is full; rejects with AbortError when `signal` fires first.
   */
  enter(signal: AbortSignal): Promise<() => void> {
    if (this.running >= this.maxActive && this.waiting.length >= this.maxQueued) {
      this.onReject();
      throw new ApiError(429, `the server is busy (${this.running} running, ${this.waiting.length} queued); retry shortly`, 'rate_limit_error', null, 'server_busy', {
        'Retry-After': '1',
      });
    }
    if (signal.aborted) return Promise.reject(new AbortError(undefined, { cause: signal.reason }));
    let released = false;
    const release = () => {
      if (released) return;
      released = true;
      this.running--;
      const next = this.waiting.shift();
      if (next) next();
    };
    if (this.running < this.maxActive) {
      this.running++;
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const waiter = () => {
        signal.removeEventListener('abort', onAbort);
        this.running++;
        resolve(release);
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        reject(new AbortError(undefined, { cause: signal.reason }));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }
}
