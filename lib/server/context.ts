/** What a route gets: the request, its response, an AbortSignal fired when the client leaves, and the models served. */
import type { IncomingMessage, ServerResponse } from 'node:http';
import type { Embedder } from '../embedder';
import type { Model } from '../model';
import type { AdmissionQueue } from './admission';
import { ApiError } from './api-error';
import type { ModelScheduler } from './scheduler';

export interface ServedTextModel {
  id: string;
  model: Model;
  scheduler: ModelScheduler;
}

export interface ServedEmbedder {
  id: string;
  embedder: Embedder;
  queue: AdmissionQueue;
}

export interface Served {
  text?: ServedTextModel;
  embedding?: ServedEmbedder;
  /** Unix seconds the server started (the models' `created`). */
  created: number;
}

export interface RouteContext {
  req: IncomingMessage;
  res: ServerResponse;
  /** Fires when the client disconnects before the response is complete. */
  signal: AbortSignal;
  served: Served;
  /** The request's JSON body (size-limited). */
  body(): Promise<unknown>;
}

export type Route = (ctx: RouteContext) => Promise<void>;

export function sendJson(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  const text = JSON.stringify(body);
  res.writeHead(status, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), ...headers });
  res.end(text);
}

function notServed(kind: string, requested: string, served: string | undefined): ApiError {
  const message = served === undefined ? `this server has no ${kind} model` : `the model '${requested}' does not exist here; this server's ${kind} model is '${served}'`;
  return new ApiError(404, message, 'invalid_request_error', 'model', 'model_not_found');
}

/** The served text model that `requested` names (404 otherwise). */
export function textModel(served: Served, requested: string): ServedTextModel {
  if (served.text === undefined || served.text.id !== requested) throw notServed('text generation', requested, served.text?.id);
  return served.text;
}

/** The served embedding model that `requested` names (404 otherwise). */
export function embeddingModel(served: Served, requested: string): ServedEmbedder {
  if (served.embedding === undefined || served.embedding.id !== requested) throw notServed('embedding', requested, served.embedding?.id);
  return served.embedding;
}
