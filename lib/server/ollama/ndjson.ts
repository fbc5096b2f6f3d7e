/** Ollama's streaming: one JSON object per line (application/x-ndjson), the last with done: true. */
import type { ServerResponse } from 'node:http';

export class NdjsonStream {
  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, { 'Content-Type': 'application/x-ndjson', 'Cache-Control': 'no-cache', 'X-Accel-Buffering': 'no' });
    res.flushHeaders();
  }

  /** Sends one line; waits while the client's socket is full (or until it closes). */
  async send(data: unknown): Promise<void> {
    if (this.res.writableEnded || this.res.destroyed) return;
    if (this.res.write(`${JSON.stringify(data)}\n`)) return;
    await new Promise<void>((resolve) => {
      const done = () => {
        this.res.off('drain', done);
        this.res.off('close', done);
        resolve();
      };
      this.res.on('drain', done);
      this.res.on('close', done);
    });
  }

  end(last: unknown): void {
    if (!this.res.writableEnded) this.res.end(`${JSON.stringify(last)}\n`);
  }
}
