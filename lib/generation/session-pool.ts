/**
 * The sessions (KV caches) of one model. A generation borrows the idle session whose cache shares
 * the longest prefix with its prompt, so a chat's next turn, or a prompt that extends an earlier
 * one, feeds only what is new; concurrent generations get sessions of their own.
 */
import { DisposedError } from '../base/errors';
import { commonPrefixLength, type LanguageSession, type SessionLease } from './generate';

interface Slot {
  session: LanguageSession;
  /** Last time the slot was given back (for dropping the least recently used). */
  used: number;
}

export class SessionPool {
  private readonly idle: Slot[] = [];
  private readonly busy = new Set<Slot>();
  private clock = 0;
  private disposed = false;
  /** The largest full-context cache a session of this pool has had (it outlives the sessions). */
  private sessionBytes = 0;

  /** `create` makes a new session; at most `maxIdle` idle sessions keep their caches. */
  constructor(
    private readonly create: () => LanguageSession,
    private readonly maxIdle = 2,
  ) {}

  /** The bytes of the sessions' KV caches (LanguageSession.allocatedCacheBytes summed, busy and idle). */
  cacheBytes(): { busyBytes: number; idleBytes: number; sessionBytes: number } {
    let sessionBytes = this.sessionBytes;
    const sum = (slots: Iterable<Slot>) => {
      let bytes = 0;
      for (const { session } of slots) {
        bytes += session.allocatedCacheBytes ?? 0;
        sessionBytes = Math.max(sessionBytes, session.cacheBytes ?? 0);
      }
      return bytes;
    };
    const busyBytes = sum(this.busy);
    const idleBytes = sum(this.idle);
    this.sessionBytes = sessionBytes;
    return { busyBytes, idleBytes, sessionBytes };
  }

  /** Sessions in use and idle. */
  get size(): { busy: number; idle: number } {
    return { busy: this.busy.size, idle: this.idle.length };
  }

  acquire(ids: readonly number[]): SessionLease {
    if (this.disposed) throw new DisposedError('Model');
    let best = -1;
    let bestLength = -1;
    this.idle.forEach((slot, i) => {
      const length = commonPrefixLength(slot.session.tokens, ids);
      if (length > bestLength) {
        best = i;
        bestLength = length;
      }
    });
    const slot: Slot = best >= 0 ? this.idle.splice(best, 1)[0] : { session: this.create(), used: 0 };
    this.busy.add(slot);
    let released = false;
    return {
      session: slot.session,
      release: () => {
        if (released) return;
        released = true;
        this.busy.delete(slot);
        if (this.disposed) {
          slot.session.dispose();
          return;
        }
        slot.used = ++this.clock;
        this.idle.push(slot);
        if (this.idle.length > this.maxIdle) {
          this.idle.sort((a, b) => a.used - b.used);
          this.idle.shift()!.session.dispose();
        }
      },
    };
  }

  /** Disposes the idle sessions now and aborts the busy ones (disposed when given back). */
  dispose(): void {
    this.disposed = true;
    for (const slot of this.idle) slot.session.dispose();
    this.idle.length = 0;
    for (const slot of this.busy) slot.session.abort();
  }
}
