/**
 * The request handler: routing, the API key, errors in OpenAI's shape, client disconnects, and
 * draining. `(req, res)` as node:http, Express (app.use(handler)) and Fastify (reply.hijack(), then
 * handler(request.raw, reply.raw)) call it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as nodePath from 'node:path';
import { vocabularyIndex } from '../constrain';
import type { Embedder } from '../embedder';
import type { Model } from '../model';
import { AdmissionQueue } from './admission';
import { ApiError, toApiError } from './api-error';
import { apiKeyChecker } from './auth';
import { readJsonBody } from './body';
import { sendJson, type Route, type RouteContext, type Served } from './context';
import { chatCompletions } from './routes/chat-completions';
import { completions } from './routes/completions';
import { embeddings } from './routes/embeddings';
import { listModels, retrieveModel } from './routes/models';
import { ModelScheduler } from './scheduler';
import { compileValidators } from './validation';
import { rangeError } from '../errors';

export interface ServeOptions {
  /** The text model (chat and text completions). */
  model?: Model;
  /** The embedding model (/v1/embeddings). */
  embedder?: Embedder;
  /** Requests to /v1/* must send `Authorization: Bearer <apiKey>`. Default: none needed. */
  apiKey?: string;
  /** The ids clients name the models by. Default: the file or folder names. */
  modelId?: string;
  embedderId?: string;
  /** Generations running at once (each holds a KV cache of the model's context length). Default 4. */
  maxActive?: number;
  /** Requests waiting for a slot before 429. Default 64. */
  maxQueued?: number;
  /** Largest request body. Default 1 MiB. */
  maxBodyBytes?: number;
}

export interface ServeHandler {
  (req: IncomingMessage, res: ServerResponse): void;
  /** The text model's scheduler, when one is served. */
  readonly scheduler: ModelScheduler | undefined;
  /** Requests being answered. */
  readonly inFlight: number;
  /** Stops taking requests (503) and resolves once those in flight are answered. */
  drain(): Promise<void>;
}

const DEFAULTS = { maxActive: 4, maxQueued: 64, maxBodyBytes: 1 << 20 };

const POST_ROUTES: Record<string, Route> = {
  '/v1/chat/completions': chatCompletions,
  '/v1/completions': completions,
  '/v1/embeddings': embeddings,
};

function checkOptions(options: ServeOptions): Required<Pick<ServeOptions, 'maxActive' | 'maxQueued' | 'maxBodyBytes'>> {
  if (typeof options !== 'object' || options === null) throw new TypeError('createServer(options): options must be an object');
  if (options.model === undefined && options.embedder === undefined) throw new TypeError('createServer needs a model, an embedder or both');
  const limits = { ...DEFAULTS };
  for (const key of ['maxActive', 'maxQueued', 'maxBodyBytes'] as const) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < (key === 'maxQueued' ? 0 : 1)) throw rangeError(`${key} must be an integer >= ${key === 'maxQueued' ? 0 : 1}, got ${value}`);
    limits[key] = value;
  }
  return limits;
}

export function createHandler(options: ServeOptions): ServeHandler {
  const limits = checkOptions(options);
  compileValidators(); // here rather than in the first request
  const checkKey = apiKeyChecker(options.apiKey);
  const served: Served = { created: Math.floor(Date.now() / 1000) };
  if (options.model) {
    served.text = { id: options.modelId ?? nodePath.basename(options.model.info.path), model: options.model, scheduler: new ModelScheduler(options.model, limits) };
    // The vocabulary index of constrained output takes a few hundred ms of work once: start it now
    // (in slices, in the background), not in the first request that asks for JSON.
    try {
      vocabularyIndex(options.model.tokenizer, options.model.vocabSize).catch(() => {}); // a failure reaches the request that needs it
    } catch {
      // a tokenizer without byte strings: json response formats answer 400 when asked for
    }
  }
  if (options.embedder) {
    served.embedding = { id: options.embedderId ?? nodePath.basename(options.embedder.info.path), embedder: options.embedder, queue: new AdmissionQueue(1, limits.maxQueued) };
  }

  let inFlight = 0;
  let draining = false;
  const drained: (() => void)[] = [];

  async function route(ctx: RouteContext, method: string, path: string): Promise<void> {
    if (path === '/health') {
      if (method !== 'GET') throw new ApiError(405, 'use GET /health', 'invalid_request_error');
      const status = draining ? 503 : 200;
      sendJson(ctx.res, status, { status: draining ? 'draining' : 'ok', active: served.text?.scheduler.active ?? 0, queued: served.text?.scheduler.queued ?? 0 });
      return;
    }
    if (draining) throw new ApiError(503, 'the server is shutting down', 'server_error', null, 'server_shutting_down', { Connection: 'close' });
    checkKey(ctx.req);
    if (path === '/v1/models' || path.startsWith('/v1/models/')) {
      if (method !== 'GET') throw new ApiError(405, `use GET ${path}`, 'invalid_request_error');
      if (path === '/v1/models') return listModels(ctx);
      let id: string;
      try {
        id = decodeURIComponent(path.slice('/v1/models/'.length));
      } catch {
        throw new ApiError(400, 'malformed model id in the URL', 'invalid_request_error');
      }
      return retrieveModel(ctx, id);
    }
    const post = POST_ROUTES[path];
    if (!post) throw new ApiError(404, `no route ${method} ${path}`, 'invalid_request_error', null, 'not_found');
    if (method !== 'POST') throw new ApiError(405, `use POST ${path}`, 'invalid_request_error');
    return post(ctx);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    inFlight++;
    const controller = new AbortController();
    const onClose = () => {
      if (!res.writableFinished) controller.abort(new Error('the client disconnected'));
    };
    res.on('close', onClose);
    const ctx: RouteContext = { req, res, signal: controller.signal, served, body: () => readJsonBody(req, limits.maxBodyBytes) };
    try {
      let path: string;
      try {
        path = new URL(req.url ?? '/', 'http://localhost').pathname.replace(/\/+$/, '') || '/';
      } catch {
        throw new ApiError(400, 'malformed request URL', 'invalid_request_error');
      }
      await route(ctx, req.method ?? 'GET', path);
    } catch (error) {
      if (controller.signal.aborted) {
        res.destroy(); // nobody is listening: free the half-closed socket now
        return;
      }
      const apiError = toApiError(error);
      if (apiError.status >= 500) process.emitWarning(`weightmap serve: ${(error as Error)?.stack ?? String(error)}`);
      if (!res.headersSent) {
        sendJson(res, apiError.status, apiError.body, apiError.headers);
      } else if (!res.writableEnded) {
        // Mid-stream: one last event with the error, then the end of the stream.
        res.end(`data: ${JSON.stringify(apiError.body)}\n\n`);
      }
    } finally {
      res.off('close', onClose);
      inFlight--;
      if (draining && inFlight === 0) drained.splice(0).forEach((resolve) => resolve());
    }
  }

  const handler = ((req: IncomingMessage, res: ServerResponse) => {
    void handle(req, res);
  }) as ServeHandler;
  Object.defineProperties(handler, {
    scheduler: { get: () => served.text?.scheduler },
    inFlight: { get: () => inFlight },
  });
  handler.drain = () => {
    draining = true;
    return inFlight === 0 ? Promise.resolve() : new Promise((resolve) => drained.push(resolve));
  };
  return handler;
}
