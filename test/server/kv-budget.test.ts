/**
 * Admission by KV cache bytes (ServeOptions.maxKvBytes, `weightmap serve --max-kv-bytes`):
 * the AdmissionQueue's budget on its own (costs in arrival order, a large waiter not passed by a
 * small one, an aborted head letting the next in, a cost past the budget refused), then the server
 * on stories260K with a 64-token context and a budget of 40 positions' bytes (the bytes of one
 * position from the model's own full-context cache size): a request that could never fit is a 400
 * `kv_budget_exceeded` naming max_tokens (Ollama's options.num_predict; or the prompt), one that fits runs, and one that fits
 * the budget but not beside a running one waits in the queue (with slots free) until it ends.
 */
import { AdmissionQueue } from '../../lib/server/admission';
import { createHandler } from '../../lib/server';
import { loadModel, type Model } from '../../lib/models/model';
import { fixture } from '../helpers/fixtures';
import { rawRequest, startServer, until, type Running } from './server-helpers';

describe('AdmissionQueue with a budget', () => {
  const signal = () => new AbortController().signal;
  const state = (p: Promise<unknown>) => {
    const s = { settled: false };
    void p.then(() => (s.settled = true), () => (s.settled = true));
    return s;
  };

  it('admits in arrival order within the budget; a small request waits behind a large one', async () => {
    const queue = new AdmissionQueue(4, 8, undefined, 40);
    const releaseA = await queue.enter(signal(), 30);
    const b = queue.enter(signal(), 30);
    const c = queue.enter(signal(), 5); // fits beside A, but B came first
    const [sb, sc] = [state(b), state(c)];
    await new Promise((resolve) => setImmediate(resolve));
    expect([sb.settled, sc.settled, queue.active, queue.queued, queue.used]).toEqual([false, false, 1, 2, 30]);
    releaseA();
    await Promise.all([b, c]);
    expect([queue.active, queue.queued, queue.used]).toEqual([2, 0, 35]);
    expect(() => queue.enter(signal(), 41)).toThrow(RangeError);
  });

  it('an aborted head lets the next waiter in; a full queue is a 429', async () => {
    const queue = new AdmissionQueue(4, 2, undefined, 10);
    await queue.enter(signal(), 8);
    const leaving = new AbortController();
    const head = queue.enter(leaving.signal, 5);
    const next = queue.enter(signal(), 2);
    expect(() => queue.enter(signal(), 1)).toThrow(expect.objectContaining({ status: 429 }));
    leaving.abort();
    await expect(head).rejects.toThrow();
    await next;
    expect([queue.active, queue.used]).toEqual([2, 10]);
  });
});

describe('the server with --max-kv-bytes', () => {
  const CONTEXT = 64;
  const BUDGET_POSITIONS = 40;
  let model: Model;
  let running: Running;
  let perPosition: number;

  beforeAll(async () => {
    model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin'), contextLength: CONTEXT });
    await model.logits([1]); // a session made: its full-context size is known
    perPosition = model.kvCache.sessionBytes / CONTEXT;
    expect(Number.isInteger(perPosition) && perPosition > 0).toBe(true);
    running = await startServer({ model, modelId: 'stories', maxKvBytes: BUDGET_POSITIONS * perPosition });
  });

  afterAll(async () => {
    await running?.stop();
    model?.dispose();
  });

  const complete = (body: Record<string, unknown>) =>
    rawRequest(running.origin, '/v1/completions', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'stories', temperature: 0, logit_bias: { 1: -100, 2: -100 }, ...body }) });

  it('a request that could never fit is a 400 naming max_tokens, or the prompt when it alone is too large', async () => {
    const tooLong = await complete({ prompt: [1], max_tokens: BUDGET_POSITIONS });
    expect([tooLong.status, tooLong.body.error.code, tooLong.body.error.param]).toEqual([400, 'kv_budget_exceeded', 'max_tokens']);
    expect(tooLong.body.error.message).toContain(`${(BUDGET_POSITIONS + 1) * perPosition} bytes`);
    const bigPrompt = await complete({ prompt: Array(BUDGET_POSITIONS + 1).fill(1), max_tokens: 1 });
    expect([bigPrompt.status, bigPrompt.body.error.param]).toEqual([400, 'prompt']);
    const fits = await complete({ prompt: [1], max_tokens: BUDGET_POSITIONS - 1 });
    expect([fits.status, fits.body.usage.completion_tokens]).toEqual([200, BUDGET_POSITIONS - 1]);
  });

  it("Ollama's /api/generate names options.num_predict, its own name for the limit", async () => {
    const generate = (options: Record<string, unknown>) =>
      rawRequest(running.origin, '/api/generate', { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify({ model: 'stories', prompt: 'Once', raw: true, stream: false, options }) });
    const tooLong = await generate({ num_predict: BUDGET_POSITIONS });
    expect(tooLong.status).toBe(400);
    expect(tooLong.body.error).toContain('lower options.num_predict');
    expect(tooLong.body.error).not.toContain('max_tokens');
    const fits = await generate({ num_predict: 4, temperature: 0 });
    expect([fits.status, fits.body.done]).toEqual([200, true]);
  });

  it('one that cannot fit beside a running generation waits (slots free) until it ends', async () => {
    const scheduler = running.server.handler.scheduler!;
    const request = (maxTokens: number) => ({ kind: 'text' as const, prompt: [1], options: { temperature: 0, maxTokens, logitBias: { 1: -Infinity, 2: -Infinity } } });
    const first = scheduler.submit(request(24), new AbortController().signal)[Symbol.asyncIterator]();
    await first.next(); // running: 25 positions counted
    expect(scheduler.kvBytesAdmitted).toBe(25 * perPosition);
    const second = scheduler.submit(request(20), new AbortController().signal)[Symbol.asyncIterator]();
    const secondFirst = second.next();
    await until(() => scheduler.queued === 1);
    expect([scheduler.active, scheduler.queued]).toEqual([1, 1]); // 25 + 21 > 40, though 3 of the 4 slots are free
    while (!(await first.next()).done);
    await secondFirst;
    expect([scheduler.active, scheduler.queued, scheduler.kvBytesAdmitted]).toEqual([1, 0, 21 * perPosition]);
    while (!(await second.next()).done);
    expect(scheduler.kvBytesAdmitted).toBe(0);
  });

  it('maxKvBytes must be an integer >= 1', () => {
    expect(() => createHandler({ model, maxKvBytes: 0 })).toThrow(RangeError);
    expect(() => createHandler({ model, maxKvBytes: 1.5 })).toThrow(RangeError);
  });
});
