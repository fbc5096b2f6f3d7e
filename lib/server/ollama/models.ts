/**
 * The Ollama API's model descriptions (/api/tags, /api/ps, /api/show) of the models served, and
 * the names it accepts for them: the id as /v1/models lists it, or with Ollama's ':latest' tag.
 */
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { ApiError } from '../api-error';
import { servedModel, type RouteContext, type Served, type ServedEmbedder, type ServedTextModel } from '../context';
import { keepAliveMs } from './keep-alive';

/** `requested` names `id`: the same, or `id:latest`. */
export function namesModel(requested: string, id: string): boolean {
  return requested === id || requested === `${id}:latest`;
}

/** The name Ollama clients see: the id with a tag (':latest' unless it has one). */
export const tagged = (id: string) => (id.includes(':') ? id : `${id}:latest`);

function notFound(requested: string): ApiError {
  return new ApiError(404, `model '${requested}' not found`, 'invalid_request_error', 'model', 'model_not_found');
}

/** The text model an Ollama request names, loaded and held for it; `keepAlive` is its keep_alive. */
export function ollamaTextModel(ctx: RouteContext, requested: string, keepAlive?: string | number): Promise<ServedTextModel> {
  return servedModel(ctx, 'text', requested, { names: namesModel, notFound: () => notFound(requested), keepAliveMs: keepAliveMs(keepAlive) });
}

export function ollamaEmbedder(ctx: RouteContext, requested: string, keepAlive?: string | number): Promise<ServedEmbedder> {
  return servedModel(ctx, 'embedding', requested, { names: namesModel, notFound: () => notFound(requested), keepAliveMs: keepAliveMs(keepAlive) });
}

interface Described {
  id: string;
  path: string;
  format: string;
  architecture: string;
  contextLength: number;
  capabilities: string[];
  expiresAt?: number;
  loaded: boolean;
}

function describedModels(served: Served): Described[] {
  return served.pool.list().map((entry): Described => {
    const base = { id: entry.id, path: entry.path, loaded: entry.loaded, expiresAt: entry.expiresAt };
    const s = entry.served;
    if (s && 'model' in s) {
      const { model } = s;
      return { ...base, format: model.info.format, architecture: model.info.architecture, contextLength: model.contextLength, capabilities: model.chatTemplate ? ['completion', 'chat'] : ['completion'] };
    }
    if (s && 'embedder' in s) return { ...base, format: s.embedder.info.format, architecture: s.embedder.config.architecture, contextLength: s.embedder.maxSeqLength, capabilities: ['embedding'] };
    if (s && 'reranker' in s) return { ...base, format: s.reranker.info.format, architecture: s.reranker.config.architecture, contextLength: s.reranker.maxSeqLength, capabilities: ['rerank'] };
    // Not loaded: what the listing of the models folder read from its header.
    const info = entry.info;
    return { ...base, format: info?.format ?? '', architecture: info?.architecture ?? '', contextLength: info?.contextLength ?? 0, capabilities: entry.kind === 'text' ? ['completion'] : [entry.kind] };
  });
}

/** Bytes of the weights: the file, or a folder's files (not its subfolders). */
function weightBytes(path: string): { size: number; modified: Date } {
  try {
    const stat = fs.statSync(path);
    if (!stat.isDirectory()) return { size: stat.size, modified: stat.mtime };
    let size = 0;
    for (const entry of fs.readdirSync(path, { withFileTypes: true })) if (entry.isFile()) size += fs.statSync(nodePath.join(path, entry.name)).size;
    return { size, modified: stat.mtime };
  } catch {
    return { size: 0, modified: new Date(0) };
  }
}

function entry(model: Described) {
  const { size, modified } = weightBytes(model.path);
  // Names this version of the file (path, size, time), not a hash of its bytes: reading gigabytes for a listing is not worth it.
  const digest = createHash('sha256').update(`${nodePath.resolve(model.path)}\0${size}\0${modified.getTime()}`).digest('hex');
  return {
    name: tagged(model.id),
    model: tagged(model.id),
    modified_at: modified.toISOString(),
    size,
    digest,
    details: { parent_model: '', format: model.format, family: model.architecture, families: [model.architecture], parameter_size: '', quantization_level: '' },
  };
}

/** GET /api/tags */
export function tags(served: Served) {
  return { models: describedModels(served).map(entry) };
}

/** GET /api/ps: the models loaded now; expires_at is when an idle one unloads (far ahead for those kept until evicted). */
export function running(served: Served) {
  return {
    models: describedModels(served)
      .filter((m) => m.loaded)
      .map((m) => ({ ...entry(m), expires_at: m.expiresAt !== undefined ? new Date(m.expiresAt).toISOString() : '2318-01-01T00:00:00Z', size_vram: 0 })),
  };
}

/** POST /api/show */
export function show(served: Served, requested: string) {
  const model = describedModels(served).find((m) => namesModel(requested, m.id));
  if (!model) throw notFound(requested);
  const { details, modified_at } = entry(model);
  return {
    modelfile: '',
    parameters: '',
    // Ollama's is a Go template; the model's own chat template (Jinja or built in) is applied here instead.
    template: '',
    details,
    model_info: { 'general.architecture': model.architecture, [`${model.architecture}.context_length`]: model.contextLength },
    capabilities: model.capabilities,
    modified_at,
  };
}
