/**
 * Native chunk work ahead of a streaming writer: chunk [at, at + count) of `n` elements is started
 * with `start` (work on libuv's thread pool), up to `inFlight` chunks at once while the caller writes
 * the current one; the results come back in order, with where each chunk starts.
 */
export async function* pipelined<T>(
  n: number,
  chunk: number,
  inFlight: number,
  start: (at: number, count: number) => Promise<T>,
): AsyncGenerator<[at: number, result: T]> {
  const pending: Promise<T>[] = [];
  let started = 0;
  const fill = () => {
    while (pending.length < inFlight && started < n) {
      const done = start(started, Math.min(chunk, n - started));
      // Awaited below; this only keeps a rejection of a chunk nobody waits for (the caller stopped) quiet.
      done.catch(() => undefined);
      pending.push(done);
      started += chunk;
    }
  };
  fill();
  for (let at = 0; at < n; at += chunk) {
    const current = await pending.shift()!;
    fill();
    yield [at, current];
  }
}
