/**
 * A stage's Prometheus metrics (docs/serving.md), in a registry of its own, and the plain HTTP
 * listener that serves them (StageOptions.metricsListen): GET /metrics only, loopback by default,
 * the stage's bearer token required when it has one (unless metricsPublic). prom-client and
 * node:http load when a stage asks for metrics.
 */
import type * as http from 'node:http';
import type * as PromClient from 'prom-client';
import { lazy } from '../base/lazy';
import { isLoopback } from '../base/loopback';
import { parseAddress, tokensEqual } from './auth';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const prom = lazy(() => require('prom-client') as typeof import('prom-client'));
// eslint-disable-next-line @typescript-eslint/no-require-imports
const httpModule = lazy(() => require('node:http') as typeof import('node:http'));

/** What the gauges read at each scrape. */
export interface StageGauges {
  sessions(): number;
  maxSessions: number;
  kvBytes(): number;
  maxKvBytes: number;
}

/** Why a stream was refused or ended early (the `reason` label). */
export type StageRefusal = 'unauthenticated' | 'draining' | 'max_sessions' | 'kv_budget' | 'invalid_argument' | 'internal' | 'idle_timeout';

/** What the streams report. */
export interface StageObserver {
  /** One step answered: from its tensor's arrival to its reply, the rows (positions) it carried, and the tensor bytes in and out. */
  step(seconds: number, rows: number, bytesIn: number, bytesOut: number): void;
  /** A stream refused or ended early, and why. */
  refused(reason: StageRefusal): void;
}

const STEP_BUCKETS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** A stage's Prometheus metrics (`weightmap stage --metrics-listen`): sessions, KV bytes, per-hop step latency, bytes, refusals. */
export class StageMetrics implements StageObserver {
  readonly registry: PromClient.Registry;
  private readonly steps: PromClient.Histogram<'layers'>;
  private readonly rows: PromClient.Counter<'layers'>;
  private readonly received: PromClient.Counter<'layers'>;
  private readonly sent: PromClient.Counter<'layers'>;
  private readonly refusals: PromClient.Counter<'layers' | 'reason'>;
  private readonly labels: { layers: string };

  constructor(layers: string, gauges: StageGauges) {
    const { Registry, Counter, Gauge, Histogram } = prom();
    const registry = (this.registry = new Registry());
    const registers = [registry];
    const labels = (this.labels = { layers });
    const labelNames = ['layers'] as const;
    const gauge = (name: string, help: string, read: () => number) =>
      new Gauge({
        name,
        help,
        labelNames,
        registers,
        collect(this: PromClient.Gauge<'layers'>) {
          this.set(labels, read());
        },
      });
    gauge('weightmap_stage_sessions', 'Sessions (Forward streams, each with a KV cache) open.', () => gauges.sessions());
    gauge('weightmap_stage_max_sessions', 'The --max-sessions bound.', () => gauges.maxSessions);
    gauge('weightmap_stage_kv_cache_used_bytes', 'KV cache bytes the sessions hold.', () => gauges.kvBytes());
    gauge('weightmap_stage_kv_cache_budget_bytes', 'The --max-kv-bytes bound.', () => gauges.maxKvBytes);
    gauge('weightmap_stage_kv_cache_usage_ratio', 'used / budget, 0 to 1.', () => Math.min(1, gauges.kvBytes() / gauges.maxKvBytes));
    this.steps = new Histogram({ name: 'weightmap_stage_step_seconds', help: "One hop: from a step's tensor arriving to its reply being written.", labelNames, buckets: STEP_BUCKETS, registers });
    this.rows = new Counter({ name: 'weightmap_stage_positions_total', help: 'Positions (tensor rows) stepped.', labelNames, registers });
    this.received = new Counter({ name: 'weightmap_stage_received_bytes_total', help: 'Tensor data bytes received.', labelNames, registers });
    this.sent = new Counter({ name: 'weightmap_stage_sent_bytes_total', help: 'Tensor data bytes sent.', labelNames, registers });
    this.refusals = new Counter({ name: 'weightmap_stage_streams_refused_total', help: 'Streams refused or ended early, by reason.', labelNames: ['layers', 'reason'], registers });
    for (const counter of [this.rows, this.received, this.sent]) counter.inc(labels, 0);
  }

  step(seconds: number, rows: number, bytesIn: number, bytesOut: number): void {
    this.steps.observe(this.labels, seconds);
    this.rows.inc(this.labels, rows);
    this.received.inc(this.labels, bytesIn);
    this.sent.inc(this.labels, bytesOut);
  }

  /** Counts one refusal under its reason. */
  refused(reason: StageRefusal): void {
    this.refusals.inc({ ...this.labels, reason });
  }

  /**
   * Serves GET /metrics on `listen` (host:port). Refuses (Error) an address off loopback unless
   * the stage has a token or `open` (metricsPublic) says anyone may read it.
   */
  async listen(listen: string, token: string | undefined, open: boolean): Promise<{ server: http.Server; address: string }> {
    const { host, port } = parseAddress(listen);
    if (!isLoopback(host) && token === undefined && !open) {
      throw Object.assign(new Error(`refusing to serve metrics on ${host} with no caller check: pass --token or --metrics-public`), { code: 'ERR_WEIGHTMAP_INSECURE_LISTEN' });
    }
    const server = httpModule().createServer((req, res) => void this.answer(req, res, open ? undefined : token));
    server.headersTimeout = 10_000;
    server.requestTimeout = 30_000;
    server.maxConnections = 64;
    await new Promise<void>((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => resolve());
    });
    const bound = server.address() as { port: number };
    return { server, address: `${host.includes(':') ? `[${host}]` : host}:${bound.port}` };
  }

  private async answer(req: http.IncomingMessage, res: http.ServerResponse, token: string | undefined): Promise<void> {
    const plain = (status: number, text: string, headers: Record<string, string> = {}) => {
      res.writeHead(status, { 'Content-Type': 'text/plain; charset=utf-8', ...headers });
      res.end(`${text}\n`);
    };
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') return plain(404, 'only GET /metrics here');
    if (req.method !== 'GET' && req.method !== 'HEAD') return plain(405, 'use GET /metrics');
    if (token !== undefined) {
      const match = /^Bearer\s+(.+)$/i.exec(req.headers.authorization ?? '');
      if (!match || !tokensEqual(match[1].trim(), token)) return plain(401, 'a valid bearer token is required', { 'WWW-Authenticate': 'Bearer' });
    }
    const text = await this.registry.metrics();
    res.writeHead(200, { 'Content-Type': this.registry.contentType, 'Content-Length': Buffer.byteLength(text), 'Cache-Control': 'no-store' });
    res.end(text);
  }
}
