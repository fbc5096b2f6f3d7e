/**
 * An OpenAI-compatible HTTP server over a loaded model and/or embedder.
 *
 *   const server = createServer({ model: await loadModel('qwen3-0.6b.ajc1'), apiKey: 'secret' });
 *   server.listen(8080, '127.0.0.1');
 *   process.once('SIGTERM', () => server.drain().then(() => process.exit(0)));
 */
import type * as http from 'node:http';
import { lazy } from '../lazy';
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
// eslint-disable-next-line @typescript-eslint/no-require-imports
const httpModule = lazy(() => require('node:http') as typeof import('node:http'));

export function createServer(options: ServeOptions): WeightmapServer {
  const handler = createHandler(options);
  const server = httpModule().createServer(handler) as WeightmapServer;
  Object.defineProperty(server, 'handler', { value: handler });
  server.drain = async () => {
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await handler.drain();
    server.closeIdleConnections();
    await closed;
  };
  return server;
}
