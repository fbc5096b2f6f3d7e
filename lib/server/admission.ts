/**
 * A bounded FIFO of requests waiting for one of `maxActive` slots and, with a `budget`, for room
 * in it (each request's `cost`: the KV cache bytes it may take). Admission is decided at once
 * (a full queue is an ApiError 429 with Retry-After, before any response is written); a waiter
 * whose signal fires leaves the queue. Waiters are served in arrival order: a large request at
 * the head is not passed by smaller ones behind it.
 */
import { AbortError, rangeError } from '../base/errors';
import { ApiError } from './api-error';

/** At most `maxActive` requests running (their costs within `budget`), `maxQueued` waiting in arrival order; past that a 429. */
export class AdmissionQueue {
  private running = 0;
  private spent = 0;
  /** Grants a slot to each waiter, oldest first. */
  private readonly waiting: { cost: number; grant: () => void }[] = [];

  constructor(
    readonly maxActive: number,
    readonly maxQueued: number,
    /** Called for each request refused with 429 (the server's metrics). */
    private readonly onReject: () => void = () => {},
    /** What the running requests' costs may add up to. */
    readonly budget = Infinity,
  ) {
    if (!Number.isInteger(maxActive) || maxActive < 1) throw rangeError(`maxActive must be an integer >= 1, got ${maxActive}`);
    if (!Number.isInteger(maxQueued) || maxQueued < 0) throw rangeError(`maxQueued must be an integer >= 0, got ${maxQueued}`);
    if (!(budget > 0)) throw rangeError(`budget must be a number > 0, got ${budget}`);
  }

  get active(): number {
    return this.running;
  }

  /** The costs of the running requests, added up. */
  get used(): number {
    return this.spent;
  }

  private fits(cost: number): boolean {
    return this.running < this.maxActive && this.spent + cost <= this.budget;
  }

  get queued(): number {
    return this.waiting.length;
  }

  /**
   * Takes a slot (and `cost` of the budget): resolves to its release function once both are free.
   * Throws ApiError 429 at once when it cannot run now and the queue is full, RangeError for a cost
   * past the whole budget (it could never run); rejects with AbortError when `signal` fires first.
   */
  enter(signal: AbortSignal, cost = 0): Promise<() => void> {
    if (!(cost >= 0 && cost <= this.budget)) throw rangeError(`a cost of ${cost} can never fit the budget of ${this.budget}`);
    const now = this.waiting.length === 0 && this.fits(cost);
    if (!now && this.waiting.length >= this.maxQueued) {
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
      this.spent -= cost;
      while (this.waiting.length > 0 && this.fits(this.waiting[0].cost)) this.waiting.shift()!.grant();
    };
    const take = () => {
      this.running++;
      this.spent += cost;
    };
    if (now) {
      take();
      return Promise.resolve(release);
    }
    return new Promise((resolve, reject) => {
      const waiter = {
        cost,
        grant: () => {
          signal.removeEventListener('abort', onAbort);
          take();
          resolve(release);
        },
      };
      const onAbort = () => {
        const at = this.waiting.indexOf(waiter);
        if (at >= 0) this.waiting.splice(at, 1);
        // The head left: those behind it may fit now.
        if (at === 0) while (this.waiting.length > 0 && this.fits(this.waiting[0].cost)) this.waiting.shift()!.grant();
        reject(new AbortError(undefined, { cause: signal.reason }));
      };
      signal.addEventListener('abort', onAbort, { once: true });
      this.waiting.push(waiter);
    });
  }
}
