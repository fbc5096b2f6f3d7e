/**
 * The request handler: routing, the API key, errors in OpenAI's shape, client disconnects,
 * draining, metrics and the access log. `(req, res)` as node:http, Express (app.use(handler)) and Fastify (reply.hijack(), then
 * handler(request.raw, reply.raw)) call it.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as nodePath from 'node:path';
import { vocabularyIndex } from '../constrain';
import { loadEmbedder, type Embedder } from '../models/embedder';
import { loadModel, type Model } from '../models/model';
import { loadReranker, type Reranker } from '../models/reranker';
import { AdmissionQueue } from './admission';
import { ApiError, toApiError } from './api-error';
import { apiKeyChecker } from './auth';
import { readJsonBody } from './body';
import { browserGuard, type BrowserPolicy } from './browser-guard';
import { CHAT_PAGE_FILES, sendChatPage } from './chat-page';
import { sendJson, type Route, type RouteContext, type Served } from './context';
import { chatCompletions } from './routes/chat-completions';
import { completions } from './routes/completions';
import { embeddings } from './routes/embeddings';
import { rerank } from './routes/rerank';
import { responses } from './routes/responses';
import { listModels, retrieveModel } from './routes/models';
import { ServerMetrics } from './metrics';
import { OLLAMA_ROUTES, ollamaErrorBody } from './ollama/routes';
import { compileOllamaValidators } from './ollama/validation';
import { detokenize, tokenize } from './routes/tokenize';
import { ModelPool, type ServedModelSpec } from './model-pool';
import { ModelScheduler } from './scheduler';
import { compileValidators } from './validation';
import { rangeError } from '../base/errors';
import type { SpeculativeOptions } from '../generation/speculative';

/** Options of `createServer()` and `createHandler()`: what to serve and the bounds of the service. */
export interface ServeOptions extends BrowserPolicy {
  /** The text model (chat and text completions). */
  model?: Model;
  /** The embedding model (/v1/embeddings). */
  embedder?: Embedder;
  /** The reranker (/v1/rerank and /rerank). */
  reranker?: Reranker;
  /** Requests to /v1/* must send `Authorization: Bearer <apiKey>`. Default: none needed. */
  apiKey?: string;
  /** The ids clients name the models by. Default: the file or folder names. */
  modelId?: string;
  embedderId?: string;
  rerankerId?: string;
  /**
   * More models, loaded on their first request (concurrent first requests share one load) and
   * unloaded after `keepAliveMs` idle, or least recently used first past `maxLoaded` / `maxLoadedBytes`.
   * `model`, `embedder` and `reranker` stay loaded (they count against the bounds).
   */
  models?: readonly ServedModelSpec[];
  /** Models loaded at once. Default 3. */
  maxLoaded?: number;
  /** Weight bytes (the files' sizes) loaded at once. Default: no bound. */
  maxLoadedBytes?: number;
  /** How long an on-demand model stays loaded after its last request, in ms; < 0: until evicted. Default 5 minutes; Ollama's keep_alive sets it per request. */
  keepAliveMs?: number;
  /** Generations running at once (each holds a KV cache of the model's context length). Default 4. */
  maxActive?: number;
  /** Requests waiting for a slot before 429. Default 64. */
  maxQueued?: number;
  /**
   * KV cache bytes the running generations of a text model may take together, each counted at
   * prompt + max_tokens positions (at most the context): one that could never fit is a 400
   * `kv_budget_exceeded`, one that cannot fit now waits in the queue. Default: no bound but maxActive.
   */
  maxKvBytes?: number;
  /** Largest request body. Default 1 MiB. */
  maxBodyBytes?: number;
  /** Serve GET /metrics (Prometheus text format; loads prom-client). Default true. */
  metrics?: boolean;
  /** GET /metrics needs no API key, and no Host / Origin check, like /health. Default false. */
  metricsPublic?: boolean;
  /** Called once per request answered (or abandoned by its client), after its response ended. */
  accessLog?: (entry: AccessLogEntry) => void;
  /**
   * Folders whose image files a chat request's image part may name (`file://` URLs or absolute
   * paths, links resolved) for a Moondream model. Default none: data URLs only.
   */
  imageDirs?: readonly string[];
  /** Refuse unknown request fields (400). Default false: they are ignored and logged once, as llama-server does. */
  strict?: boolean;
  /** Serve the built-in chat page at GET / when a text model is served (the page needs no key; its API calls do). Default true. */
  ui?: boolean;
  /**
   * Context shift (llama-server's --context-shift) for /v1 chat and text completions: a prompt past
   * the context is cut (its BOS and the newest tokens kept), a generation that fills the context
   * drops the oldest half after the BOS and goes on, so `max_tokens` is honoured past the context.
   * Default false: a prompt that fills the context is a 400, `max_tokens` is capped by the room after it.
   */
  contextShift?: boolean;
  /**
   * Speculative decoding for every text generation (GenerateOptions.speculative; the CLI's
   * --speculative / --draft-model): prompt lookup, or a draft model, which serves only the text
   * models that share its vocabulary. Default: off.
   */
  speculative?: SpeculativeOptions;
}

/** One request as the access log tells it. */
export interface AccessLogEntry {
  /** ISO 8601 time the request arrived. */
  time: string;
  method: string;
  path: string;
  /** The model the request named, once the route knew it. */
  model?: string;
  /** The status sent; 499 when the client left before the response ended. */
  status: number;
  promptTokens?: number;
  completionTokens?: number;
  /** Milliseconds from the request to the end of its response. */
  ms: number;
}

/** What the handler's drain() takes. */
export interface DrainOptions {
  /**
   * Milliseconds to let the requests in flight finish; past it they are aborted (their
   * generations stopped, their connections closed). Default: no limit.
   */
  timeoutMs?: number;
}

/** The OpenAI-compatible API as a `node:http` request listener, to mount in Express, Fastify or a server of your own. */
export interface ServeHandler {
  /** Answers one request. */
  (req: IncomingMessage, res: ServerResponse): void;
  /** The scheduler of `model` (ServeOptions.model), when one is served. */
  readonly scheduler: ModelScheduler | undefined;
  /** Every model served, loaded or on demand. */
  readonly pool: ModelPool;
  /** Requests being answered. */
  readonly inFlight: number;
  /** The Prometheus registry of GET /metrics (undefined with metrics: false). */
  readonly metrics: ServerMetrics | undefined;
  /** Stops taking requests (503; /ready answers 503) and resolves once those in flight are answered or, past timeoutMs, aborted. */
  drain(options?: DrainOptions): Promise<void>;
}

export const SERVE_DEFAULTS = { maxActive: 4, maxQueued: 64, maxBodyBytes: 1 << 20 };

const POST_ROUTES: Record<string, Route> = {
  '/v1/chat/completions': chatCompletions,
  '/v1/completions': completions,
  '/v1/responses': responses,
  '/v1/embeddings': embeddings,
  '/v1/rerank': rerank,
  '/rerank': rerank,
  '/tokenize': tokenize,
  '/detokenize': detokenize,
};

function checkOptions(options: ServeOptions): Required<Pick<ServeOptions, 'maxActive' | 'maxQueued' | 'maxBodyBytes'>> {
  if (typeof options !== 'object' || options === null) throw new TypeError('createServer(options): options must be an object');
  if (options.model === undefined && options.embedder === undefined && options.reranker === undefined && !(options.models?.length)) {
    throw new TypeError('createServer needs a model, an embedder, a reranker or models');
  }
  const limits = { ...SERVE_DEFAULTS };
  for (const key of ['maxActive', 'maxQueued', 'maxBodyBytes'] as const) {
    const value = options[key];
    if (value === undefined) continue;
    if (!Number.isInteger(value) || value < (key === 'maxQueued' ? 0 : 1)) throw rangeError(`${key} must be an integer >= ${key === 'maxQueued' ? 0 : 1}, got ${value}`);
    limits[key] = value;
  }
  if (options.maxKvBytes !== undefined && !(Number.isInteger(options.maxKvBytes) && options.maxKvBytes >= 1)) throw rangeError(`maxKvBytes must be an integer >= 1, got ${options.maxKvBytes}`);
  return limits;
}

/** Whether `speculative` can draft for `model`: prompt lookup always, a draft model where the vocabularies are the same. */
function draftsFor(speculative: SpeculativeOptions, model: Model): boolean {
  const draft = speculative.draft;
  if (draft === undefined || draft === 'prompt-lookup') return true;
  try {
    draft.drafter({ vocabSize: model.vocabSize, idToToken: (id) => model.tokenizer.idToToken(id) }).release?.();
    return true;
  } catch {
    return false;
  }
}

/** The OpenAI-compatible API as a request listener (what createServer() listens with), to mount in another framework. */
export function createHandler(options: ServeOptions): ServeHandler {
  const limits = checkOptions(options);
  compileValidators(); // here rather than in the first request
  compileOllamaValidators();
  const checkKey = apiKeyChecker(options.apiKey);
  const browsers = browserGuard(options);
  const metrics = options.metrics === false ? undefined : new ServerMetrics();
  const servedText = (id: string, model: Model) => {
    let scheduler: ModelScheduler | undefined = undefined;
    const observer = metrics?.addModel({
      model: id,
      running: () => scheduler!.active,
      waiting: () => scheduler!.queued,
      kvCache: () => {
        const kv = model.kvCache;
        return { usedBytes: kv.busyBytes, idleBytes: kv.idleBytes, budgetBytes: options.maxKvBytes ?? kv.sessionBytes * limits.maxActive };
      },
    });
    const speculative = options.speculative && draftsFor(options.speculative, model) ? { speculative: options.speculative } : {};
    scheduler = new ModelScheduler(model, { ...limits, ...(options.maxKvBytes !== undefined ? { maxKvBytes: options.maxKvBytes } : {}) }, observer, speculative);
    // The vocabulary index of constrained output takes a few hundred ms of work once: start it now
    // (in slices, in the background), not in the first request that asks for JSON.
    try {
      vocabularyIndex(model.tokenizer, model.vocabSize).catch(() => {}); // a failure reaches the request that needs it
    } catch {
      // a tokenizer without byte strings: json response formats answer 400 when asked for
    }
    return { id, model, scheduler };
  };
  const servedEmbedder = (id: string, embedder: Embedder) => {
    let queue: AdmissionQueue | undefined = undefined;
    const observer = metrics?.addModel({ model: id, running: () => queue!.active, waiting: () => queue!.queued });
    queue = new AdmissionQueue(1, limits.maxQueued, observer ? () => observer.rejected() : undefined);
    return { id, embedder, queue, metrics: observer };
  };
  const servedReranker = (id: string, reranker: Reranker) => {
    let queue: AdmissionQueue | undefined = undefined;
    const observer = metrics?.addModel({ model: id, running: () => queue!.active, waiting: () => queue!.queued });
    queue = new AdmissionQueue(1, limits.maxQueued, observer ? () => observer.rejected() : undefined);
    return { id, reranker, queue, metrics: observer };
  };
  const pool = new ModelPool(
    {
      text: options.model && { id: options.modelId ?? nodePath.basename(options.model.info.path), model: options.model },
      embedding: options.embedder && { id: options.embedderId ?? nodePath.basename(options.embedder.info.path), embedder: options.embedder },
      rerank: options.reranker && { id: options.rerankerId ?? nodePath.basename(options.reranker.info.path), reranker: options.reranker },
    },
    options.models ?? [],
    { maxLoaded: options.maxLoaded, maxLoadedBytes: options.maxLoadedBytes, keepAliveMs: options.keepAliveMs },
    {
      text: servedText,
      embedding: servedEmbedder,
      rerank: servedReranker,
      loaded: (id, seconds) => metrics?.modelLoaded(id, seconds),
      unloaded: (id, reason, unloaded) => {
        if ('scheduler' in unloaded) unloaded.scheduler.close();
        metrics?.modelUnloaded(id, reason);
      },
      loadModel,
      loadEmbedder,
      loadReranker,
    },
  );
  const served: Served = { created: Math.floor(Date.now() / 1000), strict: options.strict === true, contextShift: options.contextShift === true, imageDirs: options.imageDirs ?? [], pool };
  const pinnedText = options.model ? pool.loaded('text')[0] : undefined;

  const inFlight = new Set<AbortController>();
  let draining = false;
  const drained: (() => void)[] = [];

  // HEAD is GET without the body (node:http sends the headers alone).
  async function route(ctx: RouteContext, method: string, path: string): Promise<void> {
    if (path === '/health') {
      // No Host or Origin check: it tells only the counts, and health checkers name the server as they like.
      if (method !== 'GET' && method !== 'HEAD') throw new ApiError(405, 'use GET /health', 'invalid_request_error');
      // Alive: 200 while the process answers, draining included (a liveness probe must not kill a drain).
      const schedulers = pool.loaded('text').map((t) => t.scheduler);
      sendJson(ctx.res, 200, {
        status: draining ? 'draining' : 'ok',
        active: schedulers.reduce((sum, s) => sum + s.active, 0),
        queued: schedulers.reduce((sum, s) => sum + s.queued, 0),
      });
      return;
    }
    if (path === '/ready') {
      // Ready: the models are loaded (they are, once a handler exists) and it is not draining.
      if (method !== 'GET' && method !== 'HEAD') throw new ApiError(405, 'use GET /ready', 'invalid_request_error');
      sendJson(ctx.res, draining ? 503 : 200, { status: draining ? 'draining' : 'ready' });
      return;
    }
    if (path === '/metrics' && metrics && options.metricsPublic) return sendMetrics(ctx, method);
    if (method === 'OPTIONS') return browsers.preflight(ctx.req, ctx.res);
    browsers.check(ctx.req, ctx.res);
    if (path === '/metrics' && metrics) {
      // Answered while draining too: the last scrapes see the drain.
      checkKey(ctx.req);
      return sendMetrics(ctx, method);
    }
    if (draining) throw new ApiError(503, 'the server is shutting down', 'server_error', null, 'server_shutting_down', { Connection: 'close' });
    if (options.ui !== false && Object.hasOwn(CHAT_PAGE_FILES, path) && pool.list('text').length > 0) return sendChatPage(ctx, method, path);
    checkKey(ctx.req);
    if (path === '/v1/models' || path.startsWith('/v1/models/')) {
      if (method !== 'GET' && method !== 'HEAD') throw new ApiError(405, `use GET ${path}`, 'invalid_request_error');
      if (path === '/v1/models') return listModels(ctx);
      let id: string;
      try {
        id = decodeURIComponent(path.slice('/v1/models/'.length));
      } catch {
        throw new ApiError(400, 'malformed model id in the URL', 'invalid_request_error');
      }
      return retrieveModel(ctx, id);
    }
    const ollama = OLLAMA_ROUTES[path];
    if (ollama) {
      if (method !== ollama.method && !(ollama.method === 'GET' && method === 'HEAD')) throw new ApiError(405, `use ${ollama.method} ${path}`, 'invalid_request_error');
      return ollama.route(ctx);
    }
    const post = POST_ROUTES[path];
    if (!post) throw new ApiError(404, `no route ${method} ${path}`, 'invalid_request_error', null, 'not_found');
    if (method !== 'POST') throw new ApiError(405, `use POST ${path}`, 'invalid_request_error');
    return post(ctx);
  }

  async function sendMetrics(ctx: RouteContext, method: string): Promise<void> {
    if (method !== 'GET' && method !== 'HEAD') throw new ApiError(405, 'use GET /metrics', 'invalid_request_error');
    const { contentType, text } = await metrics!.render();
    ctx.res.writeHead(200, { 'Content-Type': contentType, 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
    ctx.res.end(text);
  }

  async function handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const controller = new AbortController();
    inFlight.add(controller);
    const started = performance.now();
    const time = new Date().toISOString();
    const onClose = () => {
      if (!res.writableFinished) controller.abort(new Error('the client disconnected'));
    };
    res.on('close', onClose);
    const log: RouteContext['log'] = {};
    const body = async () => {
      const parsed = await readJsonBody(req, limits.maxBodyBytes);
      const model = (parsed as { model?: unknown } | null)?.model;
      if (typeof model === 'string') log.model = model.slice(0, 256);
      return parsed;
    };
    const ctx: RouteContext = { req, res, signal: controller.signal, served, log, body, leases: [] };
    let path = '(malformed)';
    try {
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
      // The Ollama API's errors are { error: message }; a stream's is its last line.
      const ollama = path.startsWith('/api/');
      if (!res.headersSent) {
        sendJson(res, apiError.status, ollama ? ollamaErrorBody(apiError) : apiError.body, apiError.headers);
      } else if (!res.writableEnded) {
        // Mid-stream: one last event with the error, then the end of the stream.
        res.end(ollama ? `${JSON.stringify(ollamaErrorBody(apiError))}\n` : `data: ${JSON.stringify(apiError.body)}\n\n`);
      }
    } finally {
      res.off('close', onClose);
      for (const release of ctx.leases) release();
      inFlight.delete(controller);
      if (draining && inFlight.size === 0) drained.splice(0).forEach((resolve) => resolve());
      if (metrics || options.accessLog) {
        const ms = performance.now() - started;
        const status = controller.signal.aborted && !res.writableFinished ? 499 : res.statusCode;
        const method = req.method ?? 'GET';
        metrics?.request(method, path, status, ms / 1000);
        options.accessLog?.({ time, method, path, ...ctx.log, status, ms: Math.round(ms * 10) / 10 });
      }
    }
  }

  const handler = ((req: IncomingMessage, res: ServerResponse) => {
    void handle(req, res);
  }) as ServeHandler;
  Object.defineProperties(handler, {
    scheduler: { get: () => pinnedText?.scheduler },
    pool: { value: pool },
    inFlight: { get: () => inFlight.size },
    metrics: { value: metrics },
  });
  handler.drain = (drainOptions = {}) => {
    const timeoutMs = drainOptions.timeoutMs;
    if (timeoutMs !== undefined && !(timeoutMs >= 0)) throw rangeError(`drain: timeoutMs must be a number >= 0, got ${timeoutMs}`);
    draining = true;
    const done = inFlight.size === 0 ? Promise.resolve() : new Promise<void>((resolve) => drained.push(resolve));
    void done.then(() => {
      for (const text of pool.loaded('text')) text.scheduler.close();
      pool.close();
    });
    if (timeoutMs === undefined || inFlight.size === 0) return done;
    const timer = setTimeout(() => {
      for (const controller of inFlight) controller.abort(new Error(`the server stopped: the drain timeout of ${timeoutMs} ms passed`));
    }, timeoutMs);
    return done.finally(() => clearTimeout(timer));
  };
  return handler;
}
