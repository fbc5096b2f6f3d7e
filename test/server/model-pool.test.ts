/**
 * Many models per server. The pool's rules on fake models (load counts, which one an eviction
 * picks, keep-alive on jest's fake clock): one load for concurrent first requests, held models
 * never unloaded, LRU past maxLoaded and maxLoadedBytes, 503 when every loaded model is held, 400
 * for a model past the byte budget, keep-alive 0 / N / -1. Then a server over a models folder
 * (two llama.cpp-quantized GGUFs and an EMBD embedder, beside files that are no models) through
 * the openai and ollama clients: the listings, each GGUF's greedy continuation as llama.cpp wrote
 * it in the fixtures, the least recently used model evicted for the third, keep_alive 0, metrics.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { Ollama } from 'ollama';
import OpenAI from 'openai';
import type { Embedder } from '../../lib/models/embedder';
import type { Model } from '../../lib/models/model';
import type { Reranker } from '../../lib/models/reranker';
import { ApiError } from '../../lib/server/api-error';
import { ModelPool, type PoolHooks, type ServedModelSpec } from '../../lib/server/model-pool';
import { listModelsFolder } from '../../lib/server/models-folder';
import { keepAliveMs } from '../../lib/server/ollama/keep-alive';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { rawRequest, startServer, type Running } from './server-helpers';

const tmp = tempDir('weightmap-pool-');
afterAll(() => tmp.cleanup());

/** A weights file of `bytes` bytes (the pool sizes models by their files). */
function weightsFile(name: string, bytes: number): string {
  const file = path.join(tmp.dir, name);
  fs.writeFileSync(file, Buffer.alloc(bytes));
  return file;
}

/** Hooks over fake models that count loads and disposals. */
function fakeHooks() {
  const loads: string[] = [];
  const disposed: string[] = [];
  const unloaded: string[] = [];
  const fake = (p: string) => ({ info: { path: p }, dispose: () => disposed.push(path.basename(p)) });
  const hooks: PoolHooks = {
    text: (id, model) => ({ id, model, scheduler: { close() {} } as never }),
    embedding: (id, embedder) => ({ id, embedder, queue: {} as never }),
    rerank: (id, reranker) => ({ id, reranker, queue: {} as never }),
    unloaded: (id, reason) => unloaded.push(`${id}:${reason}`),
    loadModel: async (p) => {
      loads.push(path.basename(p));
      await new Promise((r) => setImmediate(r));
      return fake(p) as unknown as Model;
    },
    loadEmbedder: async (p) => {
      loads.push(path.basename(p));
      return fake(p) as unknown as Embedder;
    },
    loadReranker: async (p) => {
      loads.push(path.basename(p));
      return fake(p) as unknown as Reranker;
    },
  };
  return { hooks, loads, disposed, unloaded };
}

const spec = (id: string, bytes = 10, kind: 'text' | 'embedding' = 'text'): ServedModelSpec => ({ id, kind, path: weightsFile(id, bytes) });

async function status(promise: Promise<unknown>): Promise<number | string> {
  try {
    await promise;
    return 'ok';
  } catch (error) {
    return error instanceof ApiError ? `${error.status} ${error.code}` : String(error);
  }
}

describe('ModelPool', () => {
  test('concurrent first requests share one load; a later one reuses it', async () => {
    const { hooks, loads } = fakeHooks();
    const pool = new ModelPool({}, [spec('a')], { keepAliveMs: -1 }, hooks);
    const leases = await Promise.all([pool.acquire('text', 'a'), pool.acquire('text', 'a'), pool.acquire('text', 'a')]);
    expect(loads).toEqual(['a']);
    expect(new Set(leases.map((l) => l.served)).size).toBe(1);
    leases.forEach((l) => l.release());
    (await pool.acquire('text', 'a')).release();
    expect(loads).toEqual(['a']);
    expect(pool.list().map((e) => [e.id, e.loaded])).toEqual([['a', true]]);
  });

  test('past maxLoaded the least recently used idle model goes; a held one never does', async () => {
    const { hooks, loads, disposed, unloaded } = fakeHooks();
    const pool = new ModelPool({}, [spec('a'), spec('b'), spec('c')], { maxLoaded: 2, keepAliveMs: -1 }, hooks);
    const a = await pool.acquire('text', 'a');
    (await pool.acquire('text', 'b')).release(); // b used after a, but a is still held
    (await pool.acquire('text', 'c')).release(); // room for c: b goes (a is held)
    expect({ loads, disposed, unloaded }).toEqual({ loads: ['a', 'b', 'c'], disposed: ['b'], unloaded: ['b:evicted'] });
    a.release();
    (await pool.acquire('text', 'c')).release(); // c is now the most recent
    (await pool.acquire('text', 'b')).release(); // a is the least recently used
    expect(disposed).toEqual(['b', 'a']);
    expect(pool.list().filter((e) => e.loaded).map((e) => e.id)).toEqual(['b', 'c']);
  });

  test('every loaded model held: 503 models_busy; the pinned ones count and stay', async () => {
    const { hooks } = fakeHooks();
    const pinned = { info: { path: weightsFile('pinned', 10) }, dispose() {} } as unknown as Model;
    const pool = new ModelPool({ text: { id: 'pinned', model: pinned } }, [spec('a'), spec('b')], { maxLoaded: 2, keepAliveMs: -1 }, hooks);
    const a = await pool.acquire('text', 'a');
    expect(await status(pool.acquire('text', 'b'))).toBe('503 models_busy');
    a.release();
    (await pool.acquire('text', 'b')).release();
    expect(pool.list().filter((e) => e.loaded).map((e) => e.id)).toEqual(['pinned', 'b']);
    expect(await status(pool.acquire('text', 'nope'))).toBe('404 model_not_found');
    expect(await status(pool.acquire('embedding', 'a'))).toBe('404 model_not_found'); // a is a text model
  });

  test('maxLoadedBytes: the files\' bytes; a model past the whole budget is a 400', async () => {
    const { hooks, disposed } = fakeHooks();
    const pool = new ModelPool({}, [spec('a', 600), spec('b', 300), spec('c', 500), spec('huge', 1001)], { maxLoadedBytes: 1000, maxLoaded: 8, keepAliveMs: -1 }, hooks);
    (await pool.acquire('text', 'a')).release();
    (await pool.acquire('text', 'b')).release(); // 900 bytes
    (await pool.acquire('text', 'c')).release(); // 1400 > 1000: a goes (LRU), then 800 fits
    expect(disposed).toEqual(['a']);
    expect(await status(pool.acquire('text', 'huge'))).toBe('400 model_too_large');
    expect(disposed).toEqual(['a']); // nothing unloaded for a model that can never fit
  });

  test('keep-alive: N ms after the last request, 0 at once, -1 never; a request\'s own replaces the default', async () => {
    jest.useFakeTimers({ doNotFake: ['setImmediate', 'nextTick', 'queueMicrotask'] });
    try {
      const { hooks, unloaded } = fakeHooks();
      const pool = new ModelPool({}, [spec('a'), spec('b'), spec('c')], { keepAliveMs: 1000, maxLoaded: 8 }, hooks);
      const a = await pool.acquire('text', 'a');
      jest.advanceTimersByTime(5000);
      expect(unloaded).toEqual([]); // held: no timer runs
      a.release();
      jest.advanceTimersByTime(999);
      expect(unloaded).toEqual([]);
      jest.advanceTimersByTime(1);
      expect(unloaded).toEqual(['a:keep_alive']);
      (await pool.acquire('text', 'b', 0)).release();
      expect(unloaded).toEqual(['a:keep_alive', 'b:keep_alive']);
      (await pool.acquire('text', 'c', -1)).release();
      jest.advanceTimersByTime(10 ** 9);
      expect(unloaded).toEqual(['a:keep_alive', 'b:keep_alive']);
      const again = await pool.acquire('text', 'a'); // a request during the wait cancels it
      again.release();
      jest.advanceTimersByTime(500);
      (await pool.acquire('text', 'a')).release();
      jest.advanceTimersByTime(999);
      expect(unloaded.filter((u) => u.startsWith('a:'))).toHaveLength(1);
      jest.advanceTimersByTime(1);
      expect(unloaded.filter((u) => u.startsWith('a:'))).toHaveLength(2);
      expect(pool.list().find((e) => e.id === 'c')!.expiresAt).toBeUndefined();
    } finally {
      jest.useRealTimers();
    }
  });

  test('close unloads the on-demand models; later requests are 503', async () => {
    const { hooks, disposed } = fakeHooks();
    const pool = new ModelPool({}, [spec('a'), spec('e', 10, 'embedding')], { keepAliveMs: -1 }, hooks);
    (await pool.acquire('text', 'a')).release();
    (await pool.acquire('embedding', 'e')).release();
    pool.close();
    expect(disposed.sort()).toEqual(['a', 'e']);
    expect(await status(pool.acquire('text', 'a'))).toBe('503 server_shutting_down');
  });

  test('bad specs and ids are refused when the pool is made', () => {
    const { hooks } = fakeHooks();
    expect(() => new ModelPool({}, [spec('x'), { ...spec('y'), id: 'x' }], {}, hooks)).toThrow("two models have the id 'x'");
    expect(() => new ModelPool({}, [{ id: 'z', path: weightsFile('z', 1), kind: 'image' as never }], {}, hooks)).toThrow(/kind/);
    expect(() => new ModelPool({}, [], { maxLoaded: 0 }, hooks)).toThrow(RangeError);
  });
});

test('keep_alive durations as Ollama takes them', () => {
  expect([keepAliveMs(undefined), keepAliveMs(0), keepAliveMs(30), keepAliveMs(-1), keepAliveMs('5m'), keepAliveMs('1h30m'), keepAliveMs('250ms'), keepAliveMs('-1m'), keepAliveMs('300'), keepAliveMs('1.5s')])
    .toEqual([undefined, 0, 30_000, -1, 300_000, 5_400_000, 250, -1, 300_000, 1500]);
  for (const bad of ['5 minutes', 'm', '', '1d']) expect(() => keepAliveMs(bad)).toThrow(/keep_alive/);
});

describe('a server over a models folder', () => {
  const KEY = 'pool-key';
  const LLAMA = 'llama-ropefreqs.Q8_0.gguf';
  const QWEN = 'qwen3-qknorm.Q5_0.gguf';
  let server: Running;
  let openai: OpenAI;
  let ollama: Ollama;
  const dir = path.join(tmp.dir, 'models');

  /** The fixture's llama.cpp greedy case for a GGUF variant. */
  function greedyCase(folder: string, file: string) {
    const variant = readJson('gguf-quants', folder, 'expected.json').variants.find((v: { file: string }) => v.file === file);
    return variant.cases[0] as { prompt: { ids: number[] }; greedy: { tokens: number[] } };
  }

  async function metricValue(line: RegExp): Promise<number> {
    const text = (await rawRequest(server.origin, '/metrics', { headers: { Authorization: `Bearer ${KEY}` } })).body as string;
    const found = text.split('\n').find((l) => line.test(l));
    return found === undefined ? 0 : Number(found.split(' ').pop());
  }

  beforeAll(async () => {
    fs.mkdirSync(dir);
    fs.symlinkSync(fixture('gguf-quants', 'llama-ropefreqs', LLAMA), path.join(dir, LLAMA));
    fs.symlinkSync(fixture('gguf-quants', 'qwen3-qknorm', QWEN), path.join(dir, QWEN));
    fs.symlinkSync(fixture('embd-minilm-tiny', 'model.weights'), path.join(dir, 'minilm.embd'));
    fs.writeFileSync(path.join(dir, 'README.txt'), 'not a model');
    fs.writeFileSync(path.join(dir, 'broken.gguf'), Buffer.concat([Buffer.from('GGUF'), Buffer.alloc(12, 0xff)]));
    const folder = await listModelsFolder(dir, { text: { threads: 1 }, embedding: { threads: 1 } });
    expect(folder.models.map((m) => [m.id, m.kind, m.info?.architecture])).toEqual([
      [LLAMA, 'text', 'llama'],
      ['minilm.embd', 'embedding', 'bert'],
      [QWEN, 'text', 'qwen3'],
    ]);
    expect(folder.skipped.map((s) => path.basename(s.path))).toEqual(['broken.gguf']); // README.txt is no model: passed over in silence
    server = await startServer({ models: folder.models, maxLoaded: 2, keepAliveMs: -1, apiKey: KEY });
    openai = new OpenAI({ baseURL: `${server.origin}/v1`, apiKey: KEY });
    ollama = new Ollama({ host: server.origin, headers: { Authorization: `Bearer ${KEY}` } });
  }, 60_000);

  afterAll(async () => server?.stop());

  test('listed before any is loaded; each GGUF continues as llama.cpp did; the third evicts the least recently used', async () => {
    expect((await openai.models.list()).data.map((m) => m.id)).toEqual([LLAMA, 'minilm.embd', QWEN]);
    expect((await ollama.ps()).models).toEqual([]);

    for (const [folder, file] of [['llama-ropefreqs', LLAMA], ['qwen3-qknorm', QWEN]] as const) {
      const { prompt, greedy } = greedyCase(folder, file);
      // Two first requests at once: one load.
      const [first, second] = await Promise.all([0, 1].map(() => openai.completions.create({ model: file, prompt: prompt.ids, max_tokens: greedy.tokens.length, temperature: 0 })));
      const expected = (await rawRequest(server.origin, '/detokenize', { method: 'POST', headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ model: file, tokens: greedy.tokens }) })).body.content;
      expect([first.choices[0].text, second.choices[0].text]).toEqual([expected, expected]);
      expect(await metricValue(new RegExp(`^weightmap_model_loads_total\\{model="${file.replace(/\./g, '\\.')}"\\}`))).toBe(1);
    }
    expect((await ollama.ps()).models.map((m) => m.name).sort()).toEqual([`${LLAMA}:latest`, `${QWEN}:latest`]);

    // The embedder is the third: llama (used before qwen) goes.
    const embedding = await openai.embeddings.create({ model: 'minilm.embd', input: ['Hello, world!'] });
    expect(embedding.data[0].embedding.length).toBe(readJson('embd-minilm-tiny', 'expected.json').config.hidden_size);
    expect((await ollama.ps()).models.map((m) => m.name).sort()).toEqual(['minilm.embd:latest', `${QWEN}:latest`]);
    expect(await metricValue(/^weightmap_model_unloads_total\{model="llama-ropefreqs\.Q8_0\.gguf",reason="evicted"\}/)).toBe(1);
    expect(await metricValue(/^weightmap_models_loaded /)).toBe(2);

    // Ollama's keep_alive 0 on a load request: loaded for it, unloaded once it ends.
    const loaded = await ollama.generate({ model: LLAMA, prompt: '', keep_alive: 0 });
    expect(loaded.done_reason).toBe('unload');
    expect((await ollama.ps()).models.map((m) => m.name)).not.toContain(`${LLAMA}:latest`);
    expect((await ollama.list()).models.map((m) => m.name)).toEqual([`${LLAMA}:latest`, 'minilm.embd:latest', `${QWEN}:latest`]);

    const missing = await rawRequest(server.origin, '/v1/completions', { method: 'POST', headers: { Authorization: `Bearer ${KEY}`, 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'nope', prompt: 'x' }) });
    expect(missing.status).toBe(404);
    expect(missing.body.error.message).toContain(`this server's text generation models are '${LLAMA}', '${QWEN}'`);
  }, 120_000);
});
