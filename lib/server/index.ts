/**
 * An OpenAI-compatible HTTP server over a loaded model and/or embedder.
 *
 *   const server = createServer({ model: await loadModel('qwen3-0.6b.ajc1'), apiKey: 'secret' });
 *   server.listen(8080, '127.0.0.1');
 *   process.once('SIGTERM', () => server.drain().then(() => process.exit(0)));
 */
import type * as http from 'node:http';
import { lazy } from '../base/lazy';
import { checkConnectionLimits, limitConnections, type ConnectionLimits } from './connections';
import { createHandler, type DrainOptions, type ServeHandler, type ServeOptions } from './handler';

export { createHandler } from './handler';
export type { AccessLogEntry, DrainOptions, ServeHandler, ServeOptions } from './handler';
export type { MetricsSource, ModelMetrics, ServerMetrics } from './metrics';
export type { Lease, ModelPool, PoolListing, Served, ServedByKind, ServedEmbedder, ServedKind, ServedModelSpec, ServedReranker, ServedTextModel, UnloadReason } from './model-pool';
export type { AdmissionQueue } from './admission';
export type { ConnectionLimits } from './connections';
export type { BrowserPolicy } from './browser-guard';

export interface ServerOptions extends ServeOptions, ConnectionLimits {}
export { ModelScheduler } from './scheduler';
export type { GenerationRequest, RequestFields, ScheduledGeneration, SchedulerLimits } from './scheduler';

/** The `node:http` server `createServer()` returns, with its handler and a graceful `drain()`. */
export interface WeightmapServer extends http.Server {
  /** The request handler, to mount in another framework instead. */
  readonly handler: ServeHandler;
  /**
   * Stops accepting connections, answers the requests in flight (past `timeoutMs`, aborts them),
   * then closes the idle connections.
   */
  drain(options?: DrainOptions): Promise<void>;
}

// eslint-disable-next-line @typescript-eslint/no-require-imports
const httpModule = lazy(() => require('node:http') as typeof import('node:http'));

/** A node:http server (not yet listening) answering the OpenAI API, its connections bounded (connections.ts). */
export function createServer(options: ServerOptions): WeightmapServer {
  const limits = checkConnectionLimits(options ?? {});
  const handler = createHandler(options);
  const server = httpModule().createServer() as WeightmapServer;
  server.on('request', limitConnections(server, limits, handler));
  Object.defineProperty(server, 'handler', { value: handler });
  server.drain = async (drainOptions) => {
    const answered = handler.drain(drainOptions); // first: it checks the options
    const closed = new Promise<void>((resolve) => server.close(() => resolve()));
    await answered;
    server.closeIdleConnections();
    await closed;
  };
  return server;
}
