/**
 * The models a server answers for, loaded on demand: each entry is a text model, an embedder or a
 * reranker named by its id. Entries given as loaded objects (ServeOptions.model / embedder / reranker) are pinned: never
 * unloaded, never disposed here. Entries given as paths (ServeOptions.models) load on their first
 * request (concurrent first requests share one load), stay while requests hold them, and unload
 * when their keep-alive runs out after the last one, or least-recently-used first when loading
 * another would pass `maxLoaded` or `maxLoadedBytes` (the weights' file bytes: mapped pages, so an
 * unload costs only the next request's remap). A request holds its entry (a lease) until its
 * response ends, so nothing it uses is unloaded under it.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import type { Embedder, LoadEmbedderOptions } from '../models/embedder';
import { rangeError } from '../base/errors';
import type { LoadModelOptions, Model } from '../models/model';
import type { LoadRerankerOptions, Reranker } from '../models/reranker';
import { ApiError } from './api-error';
import type { AdmissionQueue } from './admission';
import type { ModelMetrics } from './metrics';
import type { ModelScheduler } from './scheduler';

/** A loaded text model as routes use it: its id, the model, its scheduler. */
export interface ServedTextModel {
  id: string;
  model: Model;
  scheduler: ModelScheduler;
}

/** A loaded embedder as routes use it: its id, the embedder, its admission queue, its metrics. */
export interface ServedEmbedder {
  id: string;
  embedder: Embedder;
  queue: AdmissionQueue;
  /** Where its requests report their tokens (absent without metrics). */
  metrics?: ModelMetrics;
}

/** A loaded reranker as routes use it: its id, the reranker, its admission queue, its metrics. */
export interface ServedReranker {
  id: string;
  reranker: Reranker;
  queue: AdmissionQueue;
  /** Where its requests report their tokens (absent without metrics). */
  metrics?: ModelMetrics;
}

/** What each kind of entry serves. */
export interface ServedByKind {
  text: ServedTextModel;
  embedding: ServedEmbedder;
  rerank: ServedReranker;
}

/** The kinds of model a server answers with. */
export type ServedKind = keyof ServedByKind;
const KINDS: readonly ServedKind[] = ['text', 'embedding', 'rerank'];
/** Why a model was unloaded: idle past its keep-alive, evicted for another, or the server closed. */
export type UnloadReason = 'keep_alive' | 'evicted' | 'closed';

/** A model the server may load on demand. */
export interface ServedModelSpec {
  /** The id requests name it by. */
  id: string;
  /** Its weights (a file or a folder), as loadModel / loadEmbedder / loadReranker take them. */
  path: string;
  kind: ServedKind;
  /** What it is loaded with (loadModel's options for text, loadEmbedder's for embedding, loadReranker's for rerank). */
  options?: LoadModelOptions | LoadEmbedderOptions | LoadRerankerOptions;
  /** What listings say of it before it is loaded (read from its header when the folder was listed). */
  info?: { format: string; architecture: string; contextLength: number };
}

/** The bounds of a pool (ServeOptions' names). */
export interface PoolLimits {
  /** Models loaded at once, pinned ones counted. Default POOL_DEFAULTS.maxLoaded. */
  maxLoaded?: number;
  /** Weight bytes loaded at once, pinned ones counted. Default: no bound. */
  maxLoadedBytes?: number;
  /** Milliseconds an on-demand model stays loaded after its last request; < 0: until evicted. Default 5 minutes (Ollama's). */
  keepAliveMs?: number;
}

export const POOL_DEFAULTS = { maxLoaded: 3, keepAliveMs: 5 * 60_000 };

/** Builds what a route serves from a loaded model (its scheduler, its metrics), and tears it down. */
export interface PoolHooks {
  text(id: string, model: Model): ServedTextModel;
  embedding(id: string, embedder: Embedder): ServedEmbedder;
  rerank(id: string, reranker: Reranker): ServedReranker;
  /** The entry is unloaded (before its model is disposed): its scheduler and metrics go. */
  unloaded(id: string, reason: UnloadReason, served: Served): void;
  loaded?(id: string, seconds: number): void;
  /** How loads happen (the library's loadModel / loadEmbedder / loadReranker; tests count them). */
  loadModel(path: string, options?: LoadModelOptions): Promise<Model>;
  loadEmbedder(path: string, options?: LoadEmbedderOptions): Promise<Embedder>;
  loadReranker(path: string, options?: LoadRerankerOptions): Promise<Reranker>;
}

/** A loaded model of any kind, as the pool holds it. */
export type Served = ServedByKind[ServedKind];

interface Entry {
  readonly id: string;
  readonly kind: ServedKind;
  readonly spec?: ServedModelSpec; // absent for pinned entries
  readonly bytes: number;
  served?: Served;
  loading?: Promise<Served>;
  leases: number;
  lastUsed: number;
  keepAliveMs: number;
  timer?: NodeJS.Timeout;
}

/** What a request holds: the served model, until release(). */
export interface Lease<S extends Served> {
  served: S;
  /** Ends the hold (once; later calls do nothing): the keep-alive starts when no request holds the model. */
  release(): void;
}

/** One entry as listings show it. */
export interface PoolListing {
  id: string;
  kind: ServedKind;
  path: string;
  loaded: boolean;
  /** When an idle on-demand model unloads (ms since the epoch); undefined while held, pinned or kept until evicted. */
  expiresAt?: number;
  served?: Served;
  info?: ServedModelSpec['info'];
}

/** Bytes of the weights at `path`: the file, or a folder's files (not its subfolders). */
export function weightBytes(path: string): number {
  const stat = fs.statSync(path);
  if (!stat.isDirectory()) return stat.size;
  let size = 0;
  for (const entry of fs.readdirSync(path, { withFileTypes: true })) if (entry.isFile()) size += fs.statSync(nodePath.join(path, entry.name)).size;
  return size;
}

function checkLimits(limits: PoolLimits): Required<Pick<PoolLimits, 'maxLoaded' | 'keepAliveMs'>> & { maxLoadedBytes: number } {
  const maxLoaded = limits.maxLoaded ?? POOL_DEFAULTS.maxLoaded;
  if (!Number.isInteger(maxLoaded) || maxLoaded < 1) throw rangeError(`maxLoaded must be an integer >= 1, got ${maxLoaded}`);
  const maxLoadedBytes = limits.maxLoadedBytes ?? Infinity;
  if (!(maxLoadedBytes > 0)) throw rangeError(`maxLoadedBytes must be a number > 0, got ${limits.maxLoadedBytes}`);
  const keepAliveMs = limits.keepAliveMs ?? POOL_DEFAULTS.keepAliveMs;
  if (typeof keepAliveMs !== 'number' || Number.isNaN(keepAliveMs)) throw rangeError(`keepAliveMs must be a number, got ${keepAliveMs}`);
  return { maxLoaded, maxLoadedBytes, keepAliveMs };
}

/** The models a server answers for, loaded on demand (see the top of this file). */
export class ModelPool {
  private readonly entries = new Map<string, Entry>(); // by kind + id
  private readonly limits: ReturnType<typeof checkLimits>;
  private closed = false;

  constructor(
    pinned: { text?: { id: string; model: Model }; embedding?: { id: string; embedder: Embedder }; rerank?: { id: string; reranker: Reranker } },
    specs: readonly ServedModelSpec[],
    limits: PoolLimits,
    private readonly hooks: PoolHooks,
  ) {
    this.limits = checkLimits(limits);
    const add = (entry: Entry) => {
      const key = `${entry.kind}\0${entry.id}`;
      if ([...this.entries.values()].some((e) => e.id === entry.id)) throw new TypeError(`two models have the id '${entry.id}'`);
      this.entries.set(key, entry);
    };
    const now = Date.now();
    if (pinned.text) {
      const { id, model } = pinned.text;
      add({ id, kind: 'text', bytes: safeBytes(model.info.path), served: hooks.text(id, model), leases: 0, lastUsed: now, keepAliveMs: -1 });
    }
    if (pinned.embedding) {
      const { id, embedder } = pinned.embedding;
      add({ id, kind: 'embedding', bytes: safeBytes(embedder.info.path), served: hooks.embedding(id, embedder), leases: 0, lastUsed: now, keepAliveMs: -1 });
    }
    if (pinned.rerank) {
      const { id, reranker } = pinned.rerank;
      add({ id, kind: 'rerank', bytes: safeBytes(reranker.info.path), served: hooks.rerank(id, reranker), leases: 0, lastUsed: now, keepAliveMs: -1 });
    }
    for (const spec of specs) {
      if (typeof spec?.id !== 'string' || spec.id === '' || typeof spec.path !== 'string' || !KINDS.includes(spec.kind)) {
        throw new TypeError(`models: each entry needs an id, a path and a kind ('text', 'embedding' or 'rerank'), got ${JSON.stringify(spec)}`);
      }
      add({ id: spec.id, kind: spec.kind, spec, bytes: weightBytes(spec.path), leases: 0, lastUsed: 0, keepAliveMs: this.limits.keepAliveMs });
    }
  }

  /** Every entry, loaded or not, in the order given. */
  list(kind?: ServedKind): PoolListing[] {
    return [...this.entries.values()]
      .filter((e) => kind === undefined || e.kind === kind)
      .map((e) => ({
        id: e.id,
        kind: e.kind,
        path: e.spec?.path ?? (e.served ? servedPath(e.served) : ''),
        loaded: e.served !== undefined,
        expiresAt: e.served && e.spec && e.leases === 0 && e.keepAliveMs >= 0 ? e.lastUsed + e.keepAliveMs : undefined,
        served: e.served,
        info: e.spec?.info,
      }));
  }

  /** The loaded models of a kind. */
  loaded<K extends ServedKind>(kind: K): ServedByKind[K][] {
    return [...this.entries.values()].filter((e) => e.kind === kind && e.served).map((e) => e.served) as never;
  }

  /** The id of the entry `requested` names under `names` (exact, or a rule such as Ollama's ':latest'). */
  find(kind: ServedKind, requested: string, names: (requested: string, id: string) => boolean = (r, id) => r === id): string | undefined {
    for (const e of this.entries.values()) if (e.kind === kind && names(requested, e.id)) return e.id;
    return undefined;
  }

  /**
   * Holds the model `id` of `kind` for a request, loading it first when it is not loaded.
   * `keepAliveMs` (Ollama's keep_alive) replaces the entry's keep-alive from this request on.
   */
  async acquire<K extends ServedKind>(kind: K, id: string, keepAliveMs?: number): Promise<Lease<ServedByKind[K]>> {
    const entry = this.entries.get(`${kind}\0${id}`);
    if (entry === undefined) throw new ApiError(404, `the model '${id}' does not exist here`, 'invalid_request_error', 'model', 'model_not_found');
    if (this.closed) throw new ApiError(503, 'the server is shutting down', 'server_error', null, 'server_shutting_down');
    entry.leases++;
    clearTimeout(entry.timer);
    entry.timer = undefined;
    if (keepAliveMs !== undefined && entry.spec) entry.keepAliveMs = keepAliveMs;
    try {
      // `loading` is cleared once the load settles (not inside load(), which may throw before it is assigned).
      const served = entry.served ?? (await (entry.loading ??= this.load(entry).finally(() => (entry.loading = undefined))));
      entry.lastUsed = Date.now();
      let released = false;
      return {
        served: served as never,
        release: () => {
          if (released) return;
          released = true;
          this.release(entry);
        },
      };
    } catch (error) {
      this.release(entry);
      throw error;
    }
  }

  private async load(entry: Entry): Promise<Served> {
    const spec = entry.spec!;
    if (entry.bytes > this.limits.maxLoadedBytes) {
      throw new ApiError(400, `the model '${entry.id}' needs ${entry.bytes} bytes, more than this server loads at once (maxLoadedBytes ${this.limits.maxLoadedBytes})`, 'invalid_request_error', 'model', 'model_too_large');
    }
    this.makeRoom(entry);
    const started = performance.now();
    const served =
      spec.kind === 'text'
        ? this.hooks.text(entry.id, await this.hooks.loadModel(spec.path, spec.options as LoadModelOptions | undefined))
        : spec.kind === 'rerank'
          ? this.hooks.rerank(entry.id, await this.hooks.loadReranker(spec.path, spec.options as LoadRerankerOptions | undefined))
          : this.hooks.embedding(entry.id, await this.hooks.loadEmbedder(spec.path, spec.options as LoadEmbedderOptions | undefined));
    if (this.closed) {
      dispose(served);
      throw new ApiError(503, 'the server is shutting down', 'server_error', null, 'server_shutting_down');
    }
    entry.served = served;
    this.hooks.loaded?.(entry.id, (performance.now() - started) / 1000);
    return served;
  }

  /** Unloads idle on-demand entries, least recently used first, until `entry` fits. */
  private makeRoom(entry: Entry): void {
    const resident = () => [...this.entries.values()].filter((e) => e !== entry && (e.served !== undefined || e.loading !== undefined));
    const fits = () => {
      const others = resident();
      return others.length + 1 <= this.limits.maxLoaded && others.reduce((sum, e) => sum + e.bytes, 0) + entry.bytes <= this.limits.maxLoadedBytes;
    };
    while (!fits()) {
      const idle = resident().filter((e) => e.spec !== undefined && e.served !== undefined && e.leases === 0).sort((a, b) => a.lastUsed - b.lastUsed);
      if (idle.length === 0) {
        throw new ApiError(503, `every loaded model is in use: '${entry.id}' cannot be loaded now (maxLoaded ${this.limits.maxLoaded})`, 'server_error', 'model', 'models_busy', { 'Retry-After': '1' });
      }
      this.unload(idle[0], 'evicted');
    }
  }

  private release(entry: Entry): void {
    entry.leases--;
    entry.lastUsed = Date.now();
    if (entry.leases > 0 || entry.spec === undefined || entry.served === undefined || entry.keepAliveMs < 0) return;
    if (entry.keepAliveMs === 0) return this.unload(entry, 'keep_alive');
    entry.timer = setTimeout(() => {
      if (entry.leases === 0) this.unload(entry, 'keep_alive');
    }, Math.min(entry.keepAliveMs, 2 ** 31 - 1)); // setTimeout's largest delay
    entry.timer.unref();
  }

  private unload(entry: Entry, reason: UnloadReason): void {
    clearTimeout(entry.timer);
    entry.timer = undefined;
    const served = entry.served;
    if (served === undefined) return;
    entry.served = undefined;
    this.hooks.unloaded(entry.id, reason, served);
    dispose(served);
  }

  /** Unloads every on-demand model (pinned ones are the caller's to dispose); later acquires are 503. */
  close(): void {
    this.closed = true;
    for (const entry of this.entries.values()) if (entry.spec) this.unload(entry, 'closed');
  }
}

function dispose(served: Served): void {
  if ('model' in served) served.model.dispose();
  else if ('reranker' in served) served.reranker.dispose();
  else served.embedder.dispose();
}

function servedPath(served: Served): string {
  return 'model' in served ? served.model.info.path : 'reranker' in served ? served.reranker.info.path : served.embedder.info.path;
}

function safeBytes(path: string): number {
  try {
    return weightBytes(path);
  } catch {
    return 0;
  }
}
