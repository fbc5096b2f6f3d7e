/**
 * Renders chat templates off the JS thread: one worker per process (render-worker.ts), started on
 * the first render and ended after a few idle seconds, never keeping the process alive. Renders
 * run one at a time; one that runs budget.graceMs past its budget.ms (a single step that does not
 * return) ends the worker, and one that fills the worker's heap (budget.heapMb) ends it too: each
 * is that render's ChatTemplateError, and the next render starts a fresh worker.
 */
import * as nodePath from 'node:path';
import type { Worker } from 'node:worker_threads';
import { startModuleWorker } from '../base/worker-boot';
import { ChatTemplateError, TEMPLATE_BUDGET, type TemplateBudget } from './budget';
import type { RenderReply, RenderRequest } from './protocol';

const IDLE_MS = 5000;

interface Job {
  request: Omit<RenderRequest, 'id'>;
  resolve: (text: string) => void;
  reject: (error: Error) => void;
}

class RenderWorker {
  private worker: Worker | undefined;
  /** The heap limit the running worker was started with. */
  private heapMb = 0;
  private readonly queue: Job[] = [];
  private current: { job: Job; id: number; watchdog: NodeJS.Timeout | undefined } | undefined;
  /** Whether the running worker has loaded (its start is not counted against a render's time). */
  private ready = false;
  private nextId = 1;
  private idle: NodeJS.Timeout | undefined;

  render(request: Omit<RenderRequest, 'id'>): Promise<string> {
    return new Promise<string>((resolve, reject) => {
      this.queue.push({ request, resolve, reject });
      this.pump();
    });
  }

  private pump(): void {
    if (this.current || this.queue.length === 0) return;
    const job = this.queue.shift()!;
    const worker = this.running(job.request.budget);
    const id = this.nextId++;
    clearTimeout(this.idle);
    worker.ref();
    this.current = { job, id, watchdog: undefined };
    if (this.ready) this.arm(worker);
    worker.postMessage({ ...job.request, id });
  }

  /** Ends `worker` when the current render runs budget.graceMs past its budget.ms. */
  private arm(worker: Worker): void {
    const current = this.current!;
    const { ms, graceMs } = current.job.request.budget;
    current.watchdog = setTimeout(() => this.end(worker, new ChatTemplateError('time', `the chat template ran past ${ms} ms`)), ms + graceMs);
  }

  private running(budget: TemplateBudget): Worker {
    if (this.worker && this.heapMb === budget.heapMb) return this.worker;
    if (this.worker) void this.worker.terminate(); // idle (renders run one at a time), with another heap limit
    this.heapMb = budget.heapMb;
    const worker = startModuleWorker(__dirname, 'render-worker', nodePath.extname(__filename), {
      resourceLimits: { maxOldGenerationSizeMb: budget.heapMb },
      stdout: false,
      stderr: false,
    });
    this.ready = false;
    worker.on('message', (reply: RenderReply | 'ready') => {
      if (reply === 'ready') {
        if (this.worker !== worker) return;
        this.ready = true;
        if (this.current && !this.current.watchdog) this.arm(worker);
        return;
      }
      const current = this.current;
      if (!current || current.id !== reply.id) return;
      this.finish();
      if ('error' in reply) current.job.reject(new ChatTemplateError(reply.error.reason, reply.error.message));
      else current.job.resolve(reply.text);
    });
    worker.on('error', (error: Error & { code?: string }) => {
      const memory = error.code === 'ERR_WORKER_OUT_OF_MEMORY';
      this.end(worker, memory ? new ChatTemplateError('memory', `the chat template ran out of its ${budget.heapMb} MB heap`)
        : new ChatTemplateError('render', `the chat template worker failed: ${error.message}`));
    });
    worker.on('exit', (code) => this.end(worker, new ChatTemplateError('render', `the chat template worker exited with code ${code}`)));
    this.worker = worker;
    return worker;
  }

  /** The current render is over: the next one starts, or the worker rests. */
  private finish(): void {
    clearTimeout(this.current?.watchdog);
    this.current = undefined;
    if (this.queue.length > 0) this.pump();
    else if (this.worker) this.rest(this.worker);
  }

  /** Ends `worker` (if it is still the one running), failing its current render with `error`. */
  private end(worker: Worker, error: Error): void {
    if (this.worker !== worker) return;
    this.worker = undefined;
    void worker.terminate();
    const current = this.current;
    this.finish();
    current?.job.reject(error);
  }

  private rest(worker: Worker): void {
    worker.unref();
    this.idle = setTimeout(() => {
      if (this.worker !== worker || this.current) return;
      this.worker = undefined;
      void worker.terminate();
    }, IDLE_MS).unref();
  }
}

let shared: RenderWorker | undefined;

/** The template `source` rendered with the variables of `context` in the render worker, within `budget`. */
export function renderInWorker(source: string, context: Record<string, unknown>, budget: TemplateBudget = TEMPLATE_BUDGET): Promise<string> {
  return (shared ??= new RenderWorker()).render({ source, context, budget });
}
