/**
 * GET /metrics against what the clients saw: N requests → the counters say N, the tokens are the
 * sums of the responses' usage, one time-to-first-token per generation and one inter-token gap per
 * token after the first; the gauges (running, waiting, KV bytes) against the scheduler and
 * Model.kvCache while a generation holds the only slot; 429s counted; the API key rule
 * (--metrics-public lifts it); each server its own registry; /ready and /health while draining;
 * a drain timeout that aborts what is still running; the access log.
 */
import OpenAI from 'openai';
import { loadModel, type Model } from '../../lib/models/model';
import type { AccessLogEntry } from '../../lib/server';
import { fixture } from '../helpers/fixtures';
import { rawRequest, startServer, until, type Running } from './server-helpers';

const KEY = 'metrics-key-0123456789';

/** The value of the sample `name{labels}` in a Prometheus text exposition (labels in any order); undefined when absent. */
function sample(text: string, name: string, labels: Record<string, string> = {}): number | undefined {
  for (const line of text.split('\n')) {
    if (line.startsWith('#') || line.trim() === '') continue;
    const match = /^([^{\s]+)(?:\{([^}]*)\})?\s+(\S+)$/.exec(line);
    if (!match || match[1] !== name) continue;
    const got = Object.fromEntries([...(match[2] ?? '').matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)].map((m) => [m[1], m[2]]));
    if (Object.keys(got).length === Object.keys(labels).length && Object.entries(labels).every(([k, v]) => got[k] === v)) return Number(match[3]);
  }
  return undefined;
}

async function scrape(running: Running, key: string | undefined = KEY): Promise<string> {
  const response = await rawRequest(running.origin, '/metrics', key ? { headers: { Authorization: `Bearer ${key}` } } : {});
  expect(response.status).toBe(200);
  expect(response.headers.get('content-type')).toMatch(/^text\/plain; version=0\.0\.4/);
  return response.body as string;
}

let model: Model;

beforeAll(async () => {
  model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin') });
});

afterAll(() => model.dispose());

describe('GET /metrics', () => {
  it('counts what the clients saw: requests, tokens from usage, one TTFT per generation, one gap per later token', async () => {
    const log: AccessLogEntry[] = [];
    const running = await startServer({ model, apiKey: KEY, modelId: 'stories', accessLog: (entry) => log.push(entry) });
    try {
      const client = running.client();
      const prompts = ['Once upon a time', 'The cat', 'Lily and Tom went'];
      const whole = await Promise.all(prompts.map((prompt, i) => client.completions.create({ model: 'stories', prompt, max_tokens: 8 + i * 5, temperature: 0 })));
      const stream = await client.completions.create({ model: 'stories', prompt: 'A little dog', max_tokens: 12, temperature: 0, stream: true, stream_options: { include_usage: true } });
      let streamedUsage: OpenAI.CompletionUsage | undefined;
      for await (const chunk of stream) if (chunk.usage) streamedUsage = chunk.usage;
      const usages = [...whole.map((c) => c.usage!), streamedUsage!];
      const promptSum = usages.reduce((n, u) => n + u.prompt_tokens, 0);
      const completionSum = usages.reduce((n, u) => n + u.completion_tokens, 0);

      const text = await scrape(running);
      const m = { model: 'stories' };
      expect(sample(text, 'weightmap_prompt_tokens_total', m)).toBe(promptSum);
      expect(sample(text, 'weightmap_generation_tokens_total', m)).toBe(completionSum);
      expect(sample(text, 'weightmap_generations_total', { ...m, finished: 'stop' })).toBe(4);
      expect(sample(text, 'weightmap_time_to_first_token_seconds_count', m)).toBe(4);
      expect(sample(text, 'weightmap_inter_token_latency_seconds_count', m)).toBe(completionSum - 4);
      expect(sample(text, 'weightmap_e2e_request_latency_seconds_count', m)).toBe(4);
      expect(sample(text, 'weightmap_requests_rejected_total', m)).toBe(0);
      expect(sample(text, 'weightmap_http_requests_total', { method: 'POST', route: '/v1/completions', status: '200' })).toBe(4);
      // The scrape itself is counted once it is answered: not in its own exposition.
      expect(sample(text, 'weightmap_http_requests_total', { method: 'GET', route: '/metrics', status: '200' })).toBeUndefined();
      expect(sample(text, 'weightmap_requests_running', m)).toBe(0);
      expect(sample(text, 'weightmap_requests_waiting', m)).toBe(0);
      expect(sample(text, 'vllm:num_requests_waiting', { model_name: 'stories' })).toBe(0);
      // Idle: nothing used, the caches kept for reuse, the budget the default 4 full-context sessions.
      const kv = model.kvCache;
      expect(kv.sessionBytes).toBeGreaterThan(0);
      expect(sample(text, 'weightmap_kv_cache_used_bytes', m)).toBe(0);
      expect(sample(text, 'weightmap_kv_cache_idle_bytes', m)).toBe(kv.idleBytes);
      expect(kv.idleBytes).toBeGreaterThan(0);
      expect(sample(text, 'weightmap_kv_cache_budget_bytes', m)).toBe(4 * kv.sessionBytes);
      expect(sample(text, 'vllm:kv_cache_usage_perc', { model_name: 'stories' })).toBe(0);
      // Every decode step after a prompt's prefill carries one row per generation in it.
      const rows = sample(text, 'weightmap_batch_size_sum', m)!;
      const steps = sample(text, 'weightmap_batch_size_count', m)!;
      expect(rows).toBe(completionSum - 4);
      expect(steps).toBeGreaterThan(0);
      expect(steps).toBeLessThanOrEqual(rows);

      // The access log: one entry per request, its model and tokens as the response's usage said.
      await until(() => log.length >= 5);
      const completionsLogged = log.filter((e) => e.path === '/v1/completions');
      expect(completionsLogged).toHaveLength(4);
      expect(completionsLogged.map((e) => [e.method, e.model, e.status])).toEqual(Array(4).fill(['POST', 'stories', 200]));
      expect(completionsLogged.reduce((n, e) => n + e.promptTokens!, 0)).toBe(promptSum);
      expect(completionsLogged.reduce((n, e) => n + e.completionTokens!, 0)).toBe(completionSum);
      expect(log.find((e) => e.path === '/metrics')).toMatchObject({ method: 'GET', status: 200 });
      for (const entry of log) expect(entry.ms).toBeGreaterThanOrEqual(0);
    } finally {
      await running.stop();
    }
  });

  it('the gauges while a generation holds the only slot, and a 429 counted', async () => {
    const running = await startServer({ model, apiKey: KEY, modelId: 'stories', maxActive: 1, maxQueued: 1 });
    try {
      const scheduler = running.server.handler.scheduler!;
      const held = scheduler.submit({ kind: 'text', prompt: [1], options: { maxTokens: 50 } }, new AbortController().signal)[Symbol.asyncIterator]();
      await held.next();
      const queued = running.client().completions.create({ model: 'stories', prompt: [1], max_tokens: 3, temperature: 0 });
      await until(() => scheduler.queued === 1);
      await expect(running.client().completions.create({ model: 'stories', prompt: 'x' })).rejects.toMatchObject({ status: 429 });
      const text = await scrape(running);
      const m = { model: 'stories' };
      expect(sample(text, 'weightmap_requests_running', m)).toBe(1);
      expect(sample(text, 'weightmap_requests_waiting', m)).toBe(1);
      expect(sample(text, 'vllm:num_requests_running', { model_name: 'stories' })).toBe(1);
      expect(sample(text, 'vllm:num_requests_waiting', { model_name: 'stories' })).toBe(1);
      expect(sample(text, 'weightmap_requests_rejected_total', m)).toBe(1);
      expect(sample(text, 'weightmap_http_requests_total', { method: 'POST', route: '/v1/completions', status: '429' })).toBe(1);
      const kv = model.kvCache;
      const used = sample(text, 'weightmap_kv_cache_used_bytes', m)!;
      expect(used).toBe(kv.busyBytes);
      expect(used).toBeGreaterThan(0);
      expect(sample(text, 'weightmap_kv_cache_budget_bytes', m)).toBe(kv.sessionBytes);
      expect(sample(text, 'weightmap_kv_cache_usage_ratio', m)).toBeCloseTo(used / kv.sessionBytes, 12);
      expect(sample(text, 'vllm:kv_cache_usage_perc', { model_name: 'stories' })).toBeCloseTo(used / kv.sessionBytes, 12);
      await held.return!(undefined);
      expect((await queued).usage?.completion_tokens).toBe(3);
    } finally {
      await running.stop();
    }
  });

  it('follows the API key unless metricsPublic; each server has its own registry', async () => {
    const locked = await startServer({ model, apiKey: KEY, modelId: 'a' });
    const open = await startServer({ model, apiKey: KEY, modelId: 'b', metricsPublic: true });
    try {
      expect((await rawRequest(locked.origin, '/metrics')).status).toBe(401);
      expect((await rawRequest(locked.origin, '/metrics', { headers: { Authorization: 'Bearer wrong' } })).status).toBe(401);
      expect((await rawRequest(locked.origin, '/metrics', { method: 'POST', headers: { Authorization: `Bearer ${KEY}` } })).status).toBe(405);
      await locked.client().completions.create({ model: 'a', prompt: [1], max_tokens: 2, temperature: 0 });
      const openText = await scrape(open, undefined);
      // The other server's request is not in this one's registry, nor its model.
      expect(sample(openText, 'weightmap_generation_tokens_total', { model: 'b' })).toBe(0);
      expect(sample(openText, 'weightmap_generation_tokens_total', { model: 'a' })).toBeUndefined();
      expect(sample(await scrape(locked), 'weightmap_generation_tokens_total', { model: 'a' })).toBe(2);
      // The rest of the open server still needs the key.
      expect((await rawRequest(open.origin, '/v1/models')).status).toBe(401);
    } finally {
      await Promise.all([locked.stop(), open.stop()]);
    }
  });

  it('metrics: false serves no /metrics', async () => {
    const running = await startServer({ model, modelId: 'stories', metrics: false });
    try {
      expect(running.server.handler.metrics).toBeUndefined();
      expect((await rawRequest(running.origin, '/metrics')).status).toBe(404);
    } finally {
      await running.stop();
    }
  });
});

describe('lifecycle', () => {
  it('/ready 200, then 503 while draining; /health stays 200; the generation in flight runs to its end', async () => {
    const running = await startServer({ model, apiKey: KEY, modelId: 'stories' });
    try {
      const stream = await running.client().completions.create({ model: 'stories', prompt: [1], max_tokens: 40, temperature: 0, stream: true });
      const iterator = stream[Symbol.asyncIterator]();
      let text = (await iterator.next()).value!.choices[0].text;
      expect(await rawRequest(running.origin, '/ready')).toMatchObject({ status: 200, body: { status: 'ready' } });
      // The handler's drain: the listening socket stays open, so the probes reach it.
      const draining = running.server.handler.drain();
      expect(await rawRequest(running.origin, '/ready')).toMatchObject({ status: 503, body: { status: 'draining' } });
      expect(await rawRequest(running.origin, '/health')).toMatchObject({ status: 200, body: { status: 'draining' } });
      expect((await rawRequest(running.origin, '/v1/models', { headers: { Authorization: `Bearer ${KEY}` } })).status).toBe(503);
      for (let next = await iterator.next(); !next.done; next = await iterator.next()) text += next.value.choices[0]?.text ?? '';
      await draining;
      expect(running.server.handler.inFlight).toBe(0);
      expect(text).toBe(await model.generate([1], { maxTokens: 40 }).text());
    } finally {
      await running.stop();
    }
  });

  it('a drain timeout aborts the request still in flight and frees its place', async () => {
    const running = await startServer({ model, modelId: 'stories', maxActive: 1 });
    const scheduler = running.server.handler.scheduler!;
    // The only slot held outside HTTP, so the request below waits until the drain gives up on it.
    const held = scheduler.submit({ kind: 'text', prompt: [1], options: { maxTokens: 50 } }, new AbortController().signal)[Symbol.asyncIterator]();
    await held.next();
    const waiting = running.client().completions.create({ model: 'stories', prompt: [1], max_tokens: 5 });
    await until(() => scheduler.queued === 1);
    expect(() => running.server.handler.drain({ timeoutMs: -1 })).toThrow(RangeError);
    await running.server.drain({ timeoutMs: 50 });
    await expect(waiting).rejects.toThrow();
    expect(running.server.handler.inFlight).toBe(0);
    expect(scheduler.queued).toBe(0);
    await held.return!(undefined);
    expect(scheduler.active).toBe(0);
  });
});
