/**
 * The server's Prometheus metrics (GET /metrics; names in docs/serving.md), in a registry of its
 * own so that several servers in one process keep apart. Gauges are read from the schedulers when
 * scraped; counters and histograms are fed by ModelScheduler (generations), AdmissionQueue
 * (rejections), the model's decode loop (batch sizes) and the handler (requests). Besides
 * weightmap_* names, the three gauges the Kubernetes Gateway API Inference Extension's endpoint
 * picker reads by default are exported under vLLM's names (vllm:num_requests_waiting,
 * vllm:num_requests_running, vllm:kv_cache_usage_perc, labelled model_name).
 * prom-client loads when the first ServerMetrics is made, not with the library.
 */
import type * as PromClient from 'prom-client';
import { lazy } from '../base/lazy';
import type { SpeculativeStats } from '../generation/speculative';

// eslint-disable-next-line @typescript-eslint/no-require-imports
const prom = lazy(() => require('prom-client') as typeof import('prom-client'));

/** What the gauges of one served model read at each scrape. */
export interface MetricsSource {
  /** The id clients name the model by (the `model` label). */
  model: string;
  /** Requests being answered (holding a slot). */
  running(): number;
  /** Requests waiting for a slot. */
  waiting(): number;
  /** KV cache bytes: in use by running generations, kept by idle sessions, and the most the running ones may hold. */
  kvCache?(): { usedBytes: number; idleBytes: number; budgetBytes: number };
}

/** What one model's requests report as they run. */
export interface ModelMetrics {
  /** A request refused because every slot was busy and the queue full (429). */
  rejected(): void;
  /** The prompt was fed (its tokens) and the first token came, `seconds` after the request was submitted. */
  firstToken(promptTokens: number, seconds: number): void;
  /** A token after the first, `seconds` after the one before it. */
  nextToken(seconds: number): void;
  /** A generation ended (`generated` tokens, the stop token included), `seconds` after it was submitted; `complete`: it ran to its stop. */
  finished(generated: number, seconds: number, complete: boolean): void;
  /** A batched decode step of `rows` sequences. */
  batchStep(rows: number): void;
  /** A generation with speculative decoding ended: its guesses and forward passes. */
  speculated(stats: SpeculativeStats): void;
  /** Tokens an embedding or rerank request fed. */
  embedded(tokens: number): void;
}

const TTFT_BUCKETS = [0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 25, 60];
const ITL_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 1, 2.5, 5];
const E2E_BUCKETS = [0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];
const BATCH_BUCKETS = [1, 2, 4, 8, 16, 32, 64, 128];
const DURATION_BUCKETS = [0.005, 0.025, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300];

/** The routes the request counter names; any other path counts as 'other' (bounded label values). */
export const METRIC_ROUTES = new Set([
  '/v1/chat/completions', '/v1/completions', '/v1/embeddings', '/v1/rerank', '/rerank', '/v1/models', '/health', '/ready', '/metrics',
  '/api/version', '/api/tags', '/api/show', '/api/ps', '/api/chat', '/api/generate', '/api/embed',
]);

/** A server's Prometheus metrics (its own registry): `/metrics` renders them; names in docs/serving.md. */
export class ServerMetrics {
  readonly registry: PromClient.Registry;
  private readonly sources: MetricsSource[] = [];
  private readonly rejections: PromClient.Counter<'model'>;
  private readonly promptTokens: PromClient.Counter<'model'>;
  private readonly generationTokens: PromClient.Counter<'model'>;
  private readonly requestsFinished: PromClient.Counter<'model' | 'finished'>;
  private readonly ttft: PromClient.Histogram<'model'>;
  private readonly itl: PromClient.Histogram<'model'>;
  private readonly e2e: PromClient.Histogram<'model'>;
  private readonly batch: PromClient.Histogram<'model'>;
  private readonly drafted: PromClient.Counter<'model'>;
  private readonly accepted: PromClient.Counter<'model'>;
  private readonly decodePasses: PromClient.Counter<'model'>;
  private readonly decodedTokens: PromClient.Counter<'model'>;
  private readonly modelLoads: PromClient.Counter<'model'>;
  private readonly modelUnloads: PromClient.Counter<'model' | 'reason'>;
  private readonly loadSeconds: PromClient.Histogram<'model'>;
  private readonly httpRequests: PromClient.Counter<'method' | 'route' | 'status'>;
  private readonly httpDuration: PromClient.Histogram<'route'>;

  constructor() {
    const { Registry, Counter, Gauge, Histogram } = prom();
    const registry = (this.registry = new Registry());
    const registers = [registry];
    const sources = this.sources;
    const gauge = (name: string, help: string, label: 'model' | 'model_name', read: (source: MetricsSource) => number | undefined) =>
      new Gauge({
        name,
        help,
        labelNames: [label],
        registers,
        collect(this: PromClient.Gauge<string>) {
          this.reset();
          for (const source of sources) {
            const value = read(source);
            if (value !== undefined) this.set({ [label]: source.model }, value);
          }
        },
      });
    const usage = (source: MetricsSource) => {
      const kv = source.kvCache?.();
      return kv === undefined ? undefined : kv.budgetBytes > 0 ? Math.min(1, kv.usedBytes / kv.budgetBytes) : 0;
    };
    gauge('weightmap_requests_running', 'Requests being answered (holding one of --max-active slots).', 'model', (s) => s.running());
    gauge('weightmap_requests_waiting', 'Requests waiting for a slot (at most --max-queued).', 'model', (s) => s.waiting());
    gauge('weightmap_kv_cache_used_bytes', "Bytes of KV cache allocated by the running generations' sessions.", 'model', (s) => s.kvCache?.().usedBytes);
    gauge('weightmap_kv_cache_idle_bytes', 'Bytes of KV cache kept by idle sessions for prefix reuse.', 'model', (s) => s.kvCache?.().idleBytes);
    gauge('weightmap_kv_cache_budget_bytes', 'Bytes of KV cache the running generations may hold: --max-active sessions at the full context (0 until a session was made).', 'model', (s) => s.kvCache?.().budgetBytes);
    gauge('weightmap_kv_cache_usage_ratio', 'weightmap_kv_cache_used_bytes / weightmap_kv_cache_budget_bytes (0 to 1).', 'model', usage);
    gauge('vllm:num_requests_waiting', 'Same as weightmap_requests_waiting, under the name the Gateway API Inference Extension reads (TotalQueuedRequests).', 'model_name', (s) => s.waiting());
    gauge('vllm:num_requests_running', 'Same as weightmap_requests_running, under vLLM\'s name (TotalRunningRequests).', 'model_name', (s) => s.running());
    gauge('vllm:kv_cache_usage_perc', 'Same as weightmap_kv_cache_usage_ratio (1 = full), under the name the Gateway API Inference Extension reads (KVCacheUtilization).', 'model_name', usage);

    const labelNames = ['model'] as const;
    this.rejections = new Counter({ name: 'weightmap_requests_rejected_total', help: 'Requests refused with 429: every slot busy and the queue full.', labelNames, registers });
    this.promptTokens = new Counter({ name: 'weightmap_prompt_tokens_total', help: 'Prompt tokens fed (generations that reached their first token, embedding inputs and rerank pairs).', labelNames, registers });
    this.generationTokens = new Counter({ name: 'weightmap_generation_tokens_total', help: 'Tokens generated, the stop token included (what usage.completion_tokens counts).', labelNames, registers });
    this.requestsFinished = new Counter({ name: 'weightmap_generations_total', help: 'Generations ended; finished="stop" ran to a stop or the token limit, "aborted" ended early (client gone, error).', labelNames: ['model', 'finished'], registers });
    this.ttft = new Histogram({ name: 'weightmap_time_to_first_token_seconds', help: 'From submission (queue wait included) to the first generated token.', labelNames, buckets: TTFT_BUCKETS, registers });
    this.itl = new Histogram({ name: 'weightmap_inter_token_latency_seconds', help: 'Between successive generated tokens of one generation.', labelNames, buckets: ITL_BUCKETS, registers });
    this.e2e = new Histogram({ name: 'weightmap_e2e_request_latency_seconds', help: 'From submission to the last token of generations that ran to their stop.', labelNames, buckets: E2E_BUCKETS, registers });
    this.drafted = new Counter({ name: 'weightmap_speculative_drafted_tokens_total', help: 'Tokens guessed by speculative decoding (prompt lookup or a draft model) and verified.', labelNames, registers });
    this.accepted = new Counter({ name: 'weightmap_speculative_accepted_tokens_total', help: 'Guessed tokens kept (acceptance rate: accepted / drafted).', labelNames, registers });
    this.decodePasses = new Counter({ name: 'weightmap_speculative_decode_passes_total', help: 'Forward passes after the prompt of generations with speculative decoding (tokens per weight read: weightmap_speculative_decoded_tokens_total / this).', labelNames, registers });
    this.decodedTokens = new Counter({ name: 'weightmap_speculative_decoded_tokens_total', help: 'Tokens generated after the first by generations with speculative decoding.', labelNames, registers });
    this.batch = new Histogram({ name: 'weightmap_batch_size', help: 'Sequences per batched decode step (decoder models; at most --max-active).', labelNames, buckets: BATCH_BUCKETS, registers });
    new Gauge({
      name: 'weightmap_models_loaded',
      help: 'Models loaded now (those loaded on demand and those kept loaded).',
      registers,
      collect(this: PromClient.Gauge<string>) {
        this.set(sources.length);
      },
    });
    this.modelLoads = new Counter({ name: 'weightmap_model_loads_total', help: 'On-demand model loads.', labelNames, registers });
    this.modelUnloads = new Counter({ name: 'weightmap_model_unloads_total', help: 'Model unloads by reason: keep_alive (idle past it), evicted (for another model), closed (the server stopped).', labelNames: ['model', 'reason'], registers });
    this.loadSeconds = new Histogram({ name: 'weightmap_model_load_seconds', help: 'Time to load an on-demand model (mapping, tokenizer).', labelNames, buckets: TTFT_BUCKETS, registers });
    this.httpRequests = new Counter({ name: 'weightmap_http_requests_total', help: 'HTTP requests answered, by method, route and status.', labelNames: ['method', 'route', 'status'], registers });
    this.httpDuration = new Histogram({ name: 'weightmap_http_request_duration_seconds', help: 'From the request to the end of its response.', labelNames: ['route'], buckets: DURATION_BUCKETS, registers });
  }

  /** Registers a served model's gauges; returns what its requests report to. */
  addModel(source: MetricsSource): ModelMetrics {
    this.sources.push(source);
    const labels = { model: source.model };
    // Zeros from the start, so that rates over the first requests are right.
    for (const counter of [this.rejections, this.promptTokens, this.generationTokens]) counter.inc(labels, 0);
    return {
      rejected: () => this.rejections.inc(labels),
      firstToken: (promptTokens, seconds) => {
        this.promptTokens.inc(labels, promptTokens);
        this.ttft.observe(labels, seconds);
      },
      nextToken: (seconds) => this.itl.observe(labels, seconds),
      finished: (generated, seconds, complete) => {
        this.generationTokens.inc(labels, generated);
        this.requestsFinished.inc({ ...labels, finished: complete ? 'stop' : 'aborted' });
        if (complete) this.e2e.observe(labels, seconds);
      },
      batchStep: (rows) => this.batch.observe(labels, rows),
      speculated: (stats) => {
        this.drafted.inc(labels, stats.drafted);
        this.accepted.inc(labels, stats.accepted);
        this.decodePasses.inc(labels, stats.passes);
        this.decodedTokens.inc(labels, stats.emitted);
      },
      embedded: (tokens) => this.promptTokens.inc(labels, tokens),
    };
  }

  /** An on-demand model was loaded, in `seconds`. */
  modelLoaded(model: string, seconds: number): void {
    this.modelLoads.inc({ model });
    this.loadSeconds.observe({ model }, seconds);
  }

  /** A model was unloaded: its gauges stop (its counters keep their totals). */
  modelUnloaded(model: string, reason: 'keep_alive' | 'evicted' | 'closed'): void {
    const i = this.sources.findIndex((s) => s.model === model);
    if (i >= 0) this.sources.splice(i, 1);
    this.modelUnloads.inc({ model, reason });
  }

  /** One HTTP request answered. */
  request(method: string, path: string, status: number, seconds: number): void {
    const route = METRIC_ROUTES.has(path) ? path : path.startsWith('/v1/models/') ? '/v1/models/{id}' : 'other';
    const known = ['GET', 'HEAD', 'POST', 'OPTIONS', 'DELETE', 'PUT'].includes(method) ? method : 'other';
    this.httpRequests.inc({ method: known, route, status: String(status) });
    this.httpDuration.observe({ route }, seconds);
  }

  /** The exposition: Prometheus text format. */
  async render(): Promise<{ contentType: string; text: string }> {
    return { contentType: this.registry.contentType, text: await this.registry.metrics() };
  }
}
