/**
 * Server-sent events as OpenAI streams them: `data: {json}` events, then `data: [DONE]`; the
 * Responses API's events carry their type as the event name, and end without [DONE].
 */
import type { ServerResponse } from 'node:http';

export class SseStream {
  constructor(private readonly res: ServerResponse) {
    res.writeHead(200, {
      'Content-Type': 'text/event-stream; charset=utf-8',
      'Cache-Control': 'no-cache',
      Connection: 'keep-alive',
      'X-Accel-Buffering': 'no',
    });
    res.flushHeaders();
  }

  /** Sends one event; waits while the client's socket is full (or until it closes). */
  async send(data: unknown, event?: string): Promise<void> {
    if (this.res.writableEnded || this.res.destroyed) return;
    if (this.res.write(`${event !== undefined ? `event: ${event}\n` : ''}data: ${JSON.stringify(data)}\n\n`)) return;
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

  /** Ends the stream, with `data: [DONE]` unless `done` is false. */
  end(done = true): void {
    if (!this.res.writableEnded) this.res.end(done ? 'data: [DONE]\n\n' : undefined);
  }
}
