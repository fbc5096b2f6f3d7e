/**
 * The generations of one model. The scheduler owns them from admission to the end: at most
 * maxActive run at once (each in a session, a KV cache, of the model's pool), the others wait in a
 * bounded FIFO, and a client that leaves stops its generation at once, queued or running.
 *
 * Continuous batching: the running generations of a decoder model (Llama / Qwen) decode in one
 * loop, the model's DecodeLoop (lib/engines/decode-loop.ts), which Model.generate / Model.chat
 * step through: each step runs every running sequence's next token as one batched step (one
 * product over their rows, the weights read once), sequences join when admitted and their prompt
 * is fed, and leave when they end or their client aborts, between steps, without stopping the
 * others. So maxActive is also the largest batch. Other engines (TLLM, Moondream) step each
 * generation on its own. The routes only iterate what `submit` returns.
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
