/**
 * An OpenAI-compatible HTTP server over a loaded model and/or embedder.
 *
 *   const server = createServer({ model: await loadModel('qwen3-0.6b.ajc1'), apiKey: 'secret' });
 *   server.listen(8080, '127.0.0.1');
 *   process.once('SIGTERM', () => server.drain().then(() => process.exit(0)));
 */
import * as http from 'node:http';
import { createHandler, type ServeHandler, type ServeOptions } from './handler';

export { createHandler } from './handler';
export type { ServeHandler, ServeOptions } from './handler';
export { ModelScheduler } from './scheduler';
export type { GenerationRequest, ScheduledGeneration, SchedulerLimits } from './scheduler';

export interface WeightmapServer extends http.Server {
  /** The request handler, to mount in another framework instead. */
  readonly handler: ServeHandler;
  /** Stops accepting connections, answers the requests in flight, then closes the idle connections. */
  drain(): Promise<void>;
}

/** A node:http server (not yet listening) answering the OpenAI API. */
export function createServer(options: ServeOptions): WeightmapServer {
  const handler = createHandler(options);
  const server = http.createServer(handler) as WeightmapServer;
  Object.defineProperty(server, 'handler', { value: handler });
  server.drain = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await handler.drain();
    server.closeIdleConnections();
    await closed;
  };
  return server;
}
