/** What a route gets: the request, its response, an AbortSignal fired when the client leaves, and the models served. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import { ApiError } from './api-error';
import type { ModelPool, ServedByKind, ServedEmbedder, ServedKind, ServedReranker, ServedTextModel } from './model-pool';

export type { ServedEmbedder, ServedReranker, ServedTextModel } from './model-pool';

export interface Served {
  /** The models, loaded or loadable on demand. */
  pool: ModelPool;
  /** Unix seconds the server started (the models' `created`). */
  created: number;
  /** Unknown request fields are 400s (ServeOptions.strict); else ignored and logged once. */
  strict?: boolean;
  /** Prompts and generations past the context shift (ServeOptions.contextShift). */
  contextShift?: boolean;
  /** Folders whose image files chat requests may name (ServeOptions.imageDirs). */
  imageDirs?: readonly string[];
}

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** Fires when the client disconnects before the response is complete. */
  signal: AbortSignal;
  served: Served;
  /** What the route tells the access log: the model it served and the tokens. */
  log: { model?: string; promptTokens?: number; completionTokens?: number };
  /** The request's JSON body (size-limited). */
  body(): Promise<unknown>;
  /** Releases of the models this request holds: run when its response has ended. */
  leases: (() => void)[];
}

export type Route = (ctx: RouteContext) => Promise<void>;

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

const KIND_NAMES: Record<ServedKind, string> = { text: 'text generation', embedding: 'embedding', rerank: 'rerank' };

function notServed(served: Served, kind: ServedKind, requested: string): ApiError {
  const ids = served.pool.list(kind).map((e) => `'${e.id}'`);
  const message =
    ids.length === 0
      ? `this server has no ${KIND_NAMES[kind]} model`
      : `the model '${requested}' does not exist here; this server's ${KIND_NAMES[kind]} model${ids.length > 1 ? 's are' : ' is'} ${ids.join(', ')}`;
  return new ApiError(404, message, 'invalid_request_error', 'model', 'model_not_found');
}

/**
 * The model of `kind` that `requested` names (404 otherwise; `names` matches as Ollama does when
 * given), loaded if it was not, and held for this request until its response ends.
 */
export async function servedModel<K extends ServedKind>(
  ctx: RouteContext,
  kind: K,
  requested: string,
  options: { keepAliveMs?: number; names?: (requested: string, id: string) => boolean; notFound?: () => ApiError } = {},
): Promise<ServedByKind[K]> {
  const id = ctx.served.pool.find(kind, requested, options.names);
  if (id === undefined) throw options.notFound?.() ?? notServed(ctx.served, kind, requested);
  const lease = await ctx.served.pool.acquire(kind, id, options.keepAliveMs);
  ctx.leases.push(lease.release);
  return lease.served as never;
}

/** The served text model that `requested` names (404 otherwise). */
export function textModel(ctx: RouteContext, requested: string): Promise<ServedTextModel> {
  return servedModel(ctx, 'text', requested);
}

/** The served embedding model that `requested` names (404 otherwise). */
export function embeddingModel(ctx: RouteContext, requested: string): Promise<ServedEmbedder> {
  return servedModel(ctx, 'embedding', requested);
}

/** The served reranker that `requested` names (404 otherwise); undefined names the only one (a 400 when there are several). */
export function rerankModel(ctx: RouteContext, requested: string | undefined): Promise<ServedReranker> {
  const all = ctx.served.pool.list('rerank');
  if (requested === undefined && all.length > 1) {
    throw new ApiError(400, `this server has ${all.length} rerankers (${all.map((e) => `'${e.id}'`).join(', ')}): name one in 'model'`, 'invalid_request_error', 'model');
  }
  return servedModel(ctx, 'rerank', requested ?? all[0]?.id ?? '');
}
