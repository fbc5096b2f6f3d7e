/**
 * `weightmap serve [MODEL] [--embedder MODEL] [--reranker MODEL] [--models DIR] [--host 127.0.0.1] [--port 8080] [--api-key KEY]`:
 * the OpenAI-compatible server (lib/server; docs/serving.md). MODEL, --embedder and --reranker are loaded at
 * start and stay; the models of --models DIR load on their first request and unload after
 * --keep-alive idle, or least recently used first past --max-loaded / --max-loaded-bytes. Prints the address it is bound to
 * (port 0: the port the system picked); SIGTERM or SIGINT stop it once the requests in flight are
 * answered, or aborted past --drain-timeout, and it returns (exit 0). Refuses
 * (exit 2, before loading anything) to listen off loopback without an API key unless told
 * --insecure-no-auth.
 */
import type { AddressInfo } from 'node:net';
import { InvalidArgumentError, type Command } from 'commander';
import { loadEmbedder, type Embedder } from '../models/embedder';
import { loadModel } from '../models/model';
import { loadReranker, type Reranker } from '../models/reranker';
import { isLoopback } from '../base/loopback';
import { createServer } from '../server';
import { CONNECTION_DEFAULTS } from '../server/connections';
import { SERVE_DEFAULTS, type AccessLogEntry } from '../server/handler';
import { POOL_DEFAULTS } from '../server/model-pool';
import { listModelsFolder } from '../server/models-folder';
import { keepAliveMs } from '../server/ollama/keep-alive';
import { addModelOptions, modelOptions } from './model-options';
import { addSpeculativeOptions, speculativeOptions } from './speculative-options';
import { action, choiceOption, intOption, numberOption } from './run-command';

/** Seconds SIGTERM / SIGINT wait for the requests in flight before aborting them. */
export const DRAIN_TIMEOUT_S = 30;

const LOG_FORMATS = ['none', 'json', 'text'] as const;

/** The access log line of one request in `format` (none: no line). */
function accessLogger(format: (typeof LOG_FORMATS)[number]): ((entry: AccessLogEntry) => void) | undefined {
  if (format === 'json') return (entry) => process.stderr.write(`${JSON.stringify(entry)}\n`);
  if (format === 'text') {
    return (e) => {
      const tokens = e.completionTokens !== undefined ? ` ${e.promptTokens}+${e.completionTokens} tokens` : e.promptTokens !== undefined ? ` ${e.promptTokens} tokens` : '';
      process.stderr.write(`${e.time} ${e.method} ${e.path}${e.model !== undefined ? ` ${JSON.stringify(e.model)}` : ''} ${e.status}${tokens} ${e.ms} ms\n`);
    };
  }
  return undefined;
}

/** --keep-alive: a duration as Ollama's keep_alive takes it ("5m", "30s", "-1"). */
function keepAliveOption(value: string): number {
  try {
    return keepAliveMs(value)!;
  } catch {
    throw new InvalidArgumentError(`'${value}' is not a duration (such as 5m, 1h, 30s, 0, or -1 for until evicted)`);
  }
}

function collect(value: string, previous: string[] = []): string[] {
  return [...previous, value];
}

export function registerServe(program: Command): void {
  const command = program
    .command('serve')
    .description('serve a model over an OpenAI-compatible HTTP API (chat, completions, embeddings, rerank)')
    .argument('[model]', 'weight file or folder of a text model, loaded at start and kept')
    .option('--embedder <model>', 'an embedding model to serve at /v1/embeddings, loaded at start and kept')
    .option('--reranker <model>', 'a cross-encoder to serve at /v1/rerank (and /rerank), loaded at start and kept')
    .option('--models <dir>', "a folder of models (files or folders), each loaded on its first request by its name")
    .option('--max-loaded <n>', `models loaded at once, past it the least recently used idle one is unloaded (default ${POOL_DEFAULTS.maxLoaded})`, intOption(1))
    .option('--max-loaded-bytes <n>', 'weight bytes loaded at once (default: no bound)', intOption(1))
    .option('--keep-alive <duration>', `how long a model of --models stays loaded after its last request: 5m, 30s, 0, -1 = until evicted (default ${POOL_DEFAULTS.keepAliveMs / 60_000}m)`, keepAliveOption)
    .option('--host <host>', 'address to bind', '127.0.0.1')
    .option('--port <n>', 'port to bind (0: any free port)', intOption(0, 65535), 8080)
    .option('--api-key <key>', 'require Authorization: Bearer KEY (default: $WEIGHTMAP_API_KEY, else none)')
    .option('--insecure-no-auth', 'allow --host off loopback without an API key (anyone who can reach it may use it)')
    .option('--allowed-host <name>', 'a name the Host header may carry besides IP addresses and localhost (repeatable; * for any)', collect)
    .option('--cors <origin>', 'a web origin whose pages may call the API: preflights answered, CORS headers sent (repeatable; * for any)', collect)
    .option('--max-active <n>', `generations running at once (default ${SERVE_DEFAULTS.maxActive})`, intOption(1))
    .option('--max-kv-bytes <n>', 'KV cache bytes the running generations of a model may take together, each at prompt + max_tokens positions: past it a request waits, one that never fits is a 400 (default: no bound but --max-active)', intOption(1))
    .option('--max-queued <n>', `requests waiting before 429 (default ${SERVE_DEFAULTS.maxQueued})`, intOption(0))
    .option('--max-body-bytes <n>', `largest request body; past it 413 (default ${SERVE_DEFAULTS.maxBodyBytes})`, intOption(1))
    .option('--max-connections <n>', `connections open at once (default ${CONNECTION_DEFAULTS.maxConnections})`, intOption(1))
    .option('--strict', 'refuse unknown request fields (400) instead of ignoring them')
    .option('--mmproj <file>', "the model's llama.cpp mmproj GGUF (vision encoder and projector): chat requests may then carry image_url parts")
    .option('--image-dir <dir>', "a folder whose image files chat requests may name (a vision model's image_url parts: file URLs or absolute paths; repeatable; default: data URLs only)", collect)
    .option('--max-connections-per-peer <n>', `connections open at once from one address (default ${CONNECTION_DEFAULTS.maxConnectionsPerPeer})`, intOption(1))
    .option('--no-metrics', 'serve no GET /metrics (Prometheus text format)')
    .option('--metrics-public', 'GET /metrics needs no API key (like /health)')
    .option('--no-ui', 'serve no chat page at GET / (the page needs no key; what it calls does)')
    .option('--context-shift', 'a prompt or generation past the context drops its oldest tokens (after the BOS) and goes on, instead of a 400 / finish_reason length')
    .option('--drain-timeout <s>', `on SIGTERM / SIGINT, seconds to let requests in flight finish before aborting them (default ${DRAIN_TIMEOUT_S})`, numberOption(0))
    .option('--log-format <format>', `an access log line per request on stderr: ${LOG_FORMATS.join(', ')} (default none)`, choiceOption(LOG_FORMATS), 'none');
  addSpeculativeOptions(addModelOptions(command)).action(
    action(async (modelPath: string | undefined, opts: Record<string, unknown>) => {
      const apiKey = (opts.apiKey as string | undefined) ?? (process.env.WEIGHTMAP_API_KEY || undefined);
      const host = opts.host as string;
      if (!isLoopback(host) && apiKey === undefined && !opts.insecureNoAuth) {
        throw new InvalidArgumentError(`refusing to listen on ${host} without an API key: pass --api-key KEY (or set WEIGHTMAP_API_KEY), listen on 127.0.0.1, or pass --insecure-no-auth`);
      }
      if (modelPath === undefined && opts.embedder === undefined && opts.reranker === undefined && opts.models === undefined) {
        throw new InvalidArgumentError('nothing to serve: name a MODEL, --embedder MODEL, --reranker MODEL or --models DIR');
      }
      const embedderOptions = opts.threads !== undefined ? { threads: opts.threads as number } : {};
      const folder = opts.models !== undefined ? await listModelsFolder(opts.models as string, { text: modelOptions(opts), embedding: embedderOptions, rerank: embedderOptions }) : undefined;
      for (const { path, reason } of folder?.skipped ?? []) process.stderr.write(`weightmap serve: passing over ${path}: ${reason}\n`);
      if (folder !== undefined && folder.models.length === 0 && modelPath === undefined && opts.embedder === undefined && opts.reranker === undefined) {
        throw new InvalidArgumentError(`${opts.models}: no model weightmap can serve in this folder`);
      }
      if (opts.mmproj !== undefined && modelPath === undefined) throw new InvalidArgumentError('--mmproj goes with the MODEL argument');
      const load = modelOptions(opts);
      const model = modelPath !== undefined ? await loadModel(modelPath, { ...load, ...(opts.mmproj !== undefined ? { mmproj: opts.mmproj as string } : {}) }) : undefined;
      const { speculative, draftModel } = await speculativeOptions(opts, load);
      let embedder: Embedder | undefined;
      if (opts.embedder !== undefined) embedder = await loadEmbedder(opts.embedder as string, embedderOptions);
      let reranker: Reranker | undefined;
      if (opts.reranker !== undefined) reranker = await loadReranker(opts.reranker as string, embedderOptions);
      const server = createServer({
        model,
        embedder,
        reranker,
        models: folder?.models,
        maxLoaded: opts.maxLoaded as number | undefined,
        maxLoadedBytes: opts.maxLoadedBytes as number | undefined,
        keepAliveMs: opts.keepAlive as number | undefined,
        apiKey,
        // The name it is bound to is one the Host header may carry.
        allowedHosts: [...(opts.allowedHost as string[] | undefined ?? []), ...(isWildcard(host) ? [] : [host])],
        corsOrigins: opts.cors as string[] | undefined,
        maxActive: opts.maxActive as number | undefined,
        maxQueued: opts.maxQueued as number | undefined,
        maxKvBytes: opts.maxKvBytes as number | undefined,
        maxBodyBytes: opts.maxBodyBytes as number | undefined,
        maxConnections: opts.maxConnections as number | undefined,
        maxConnectionsPerPeer: opts.maxConnectionsPerPeer as number | undefined,
        metrics: opts.metrics as boolean,
        metricsPublic: opts.metricsPublic === true,
        ui: opts.ui as boolean,
        contextShift: opts.contextShift === true,
        ...(speculative ? { speculative } : {}),
        accessLog: accessLogger(opts.logFormat as (typeof LOG_FORMATS)[number]),
        strict: opts.strict === true,
        imageDirs: (opts.imageDir as string[] | undefined) ?? [],
      });
      await new Promise<void>((resolve, reject) => {
        server.once('error', reject);
        server.listen(opts.port as number, host, () => resolve());
      });
      const { address, port, family } = server.address() as AddressInfo;
      const shown = family === 'IPv6' ? `[${address}]` : address;
      process.stdout.write(`weightmap serve: listening on http://${shown}:${port}\n`);
      await new Promise<void>((resolve) => {
        const stop = () => {
          process.stderr.write('weightmap serve: draining the requests in flight\n');
          process.off('SIGTERM', stop);
          process.off('SIGINT', stop);
          resolve();
        };
        process.on('SIGTERM', stop);
        process.on('SIGINT', stop);
      });
      const drainTimeoutS = (opts.drainTimeout as number | undefined) ?? DRAIN_TIMEOUT_S;
      await server.drain({ timeoutMs: drainTimeoutS * 1000 });
      model?.dispose();
      draftModel?.dispose();
      embedder?.dispose();
      reranker?.dispose();
    }),
  );
}

const isWildcard = (host: string) => host === '0.0.0.0' || host === '::' || host === '[::]';
