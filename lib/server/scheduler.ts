/**
 * The generations of one model. The scheduler owns them from admission to the end: at most
 * maxActive run at once (each in a session, a KV cache, of the model's pool), the others wait in a
 * bounded FIFO, and a client that leaves stops its generation at once, queued or running.
 *
 * Today each running generation steps on its own through Model.generate / Model.chat. A batched
 * decode step (one GEMM over the rows of all running sequences) belongs here: `submit` would enrol
 * the sequence in one loop that steps every running sequence together and hands each its token;
 * the routes, which only iterate what `submit` returns, would not change.
 */
import type { ChatMessage } from '../chat';
import type { GenerateOptions, GeneratedPiece, Generation, StopReason } from '../generate';
import type { ChatOptions, Model } from '../model';
import { AdmissionQueue } from './admission';

export type GenerationRequest =
  | { kind: 'chat'; messages: ChatMessage[]; options: ChatOptions }
  | { kind: 'text'; prompt: number[]; options: GenerateOptions };

/** A submitted generation: iterate it (once) to wait for its turn and receive its pieces. */
export interface ScheduledGeneration extends AsyncIterable<GeneratedPiece> {
  readonly stopReason: StopReason | undefined;
  /** Tokens generated so far (a stop token included). */
  readonly tokens: readonly number[];
}

export interface SchedulerLimits {
  /** Generations running at once (each holds a KV cache). */
  maxActive: number;
  /** Generations waiting for a slot; past it, submit() answers 429. */
  maxQueued: number;
}

export class ModelScheduler {
  private readonly queue: AdmissionQueue;

  constructor(
    readonly model: Model,
    limits: SchedulerLimits,
  ) {
    this.queue = new AdmissionQueue(limits.maxActive, limits.maxQueued);
  }

  get active(): number {
    return this.queue.active;
  }

  get queued(): number {
    return this.queue.queued;
  }

  /**
   * Admits `request` (ApiError 429 at once when the queue is full). The caller must iterate the
   * result to its end or break out of it: the slot is held from its turn until then.
   */
  submit(request: GenerationRequest, signal: AbortSignal): ScheduledGeneration {
    const entered = this.queue.enter(signal);
    entered.catch(() => {}); // a waiter aborted before iteration began: nothing to report
    const model = this.model;
    let generation: Generation | undefined;
    async function* run(): AsyncGenerator<GeneratedPiece> {
      const release = await entered;
      try {
        const options = { ...request.options, signal };
        generation = request.kind === 'chat' ? model.chat(request.messages, options) : model.generate(request.prompt, options);
        yield* generation;
      } finally {
        release();
      }
    }
    const pieces = run();
    return {
      get stopReason() {
        return generation?.stopReason;
      },
      get tokens() {
        return generation?.tokens ?? [];
      },
      [Symbol.asyncIterator]: () => pieces,
    };
  }
}
