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
import type { GenerateOptions, GeneratedPiece, Generation, StopReason } from '../generation/generate';
import type { ChatOptions, ChatPrompt, Model } from '../models/model';
import { MoondreamModel, type ImageInput } from '../models/moondream-model';
import { VisionModel, type VisionChatMessage } from '../models/vision-model';
import { AdmissionQueue } from './admission';
import { ApiError } from './api-error';
import type { ModelMetrics } from './metrics';

/** The request body's names for the prompt and the token limit, for the 400s that name a field. */
export interface RequestFields {
  /** Default: `messages` for a chat, `prompt` for a text completion. */
  prompt: string;
  /** Default: `max_tokens` (OpenAI's); Ollama's is `options.num_predict`. */
  maxTokens: string;
}

/**
 * What the server asks a model to generate: a chat, a chat with images (a model with an mmproj), a
 * text completion, or (a Moondream model) an answer about an image.
 */
export type GenerationRequest =
  | { kind: 'chat'; prompt: ChatPrompt; options: ChatOptions; fields?: RequestFields }
  | { kind: 'vision-chat'; messages: VisionChatMessage[]; promptTokens: number; options: ChatOptions; fields?: RequestFields }
  | { kind: 'text'; prompt: number[]; options: GenerateOptions; fields?: RequestFields }
  | { kind: 'answer'; image: ImageInput; question: string; promptTokens: number; options: GenerateOptions; fields?: RequestFields };

/** The positions a request's prompt takes. */
const promptLength = (request: GenerationRequest) => (request.kind === 'text' ? request.prompt.length : request.kind === 'chat' ? request.prompt.ids.length : request.promptTokens);

/** The generation `request` asks `model` for. */
function startOn(model: Model, request: GenerationRequest, options: GenerateOptions): Generation {
  if (request.kind === 'chat') return model.chat(request.prompt, options);
  if (request.kind === 'text') return model.generate(request.prompt, options);
  if (request.kind === 'vision-chat') {
    if (!(model instanceof VisionModel)) throw new TypeError('a chat with images needs a model loaded with its mmproj');
    return model.chat(request.messages, options);
  }
  if (!(model instanceof MoondreamModel)) throw new TypeError('an answer about an image needs a Moondream model');
  return model.answer(request.image, request.question, options);
}

/** A submitted generation: iterate it (once) to wait for its turn and receive its pieces. */
export interface ScheduledGeneration extends AsyncIterable<GeneratedPiece> {
  readonly stopReason: StopReason | undefined;
  /** Tokens generated so far (a stop token included). */
  readonly tokens: readonly number[];
}

/** How many generations a ModelScheduler runs and queues. */
export interface SchedulerLimits {
  /** Generations running at once (each holds a KV cache). */
  maxActive: number;
  /** Generations waiting for a slot; past it, submit() answers 429. */
  maxQueued: number;
  /**
   * KV cache bytes the running generations may take together, each counted at what it may hold:
   * prompt + max tokens positions, at most the context (a shifting one: the context). One that
   * could never fit is a 400; one that cannot fit now waits. Default: no bound but maxActive.
   */
  maxKvBytes?: number;
}

/** Admits a model's generations: at most `maxActive` run at once (decoding together), `maxQueued` wait, the rest are refused (429 in the server). */
export class ModelScheduler {
  private readonly queue: AdmissionQueue;
  private readonly metrics: ModelMetrics | undefined;
  private readonly unsubscribe: (() => void) | undefined;
  private readonly maxKvBytes: number | undefined;
  private probe: Promise<number> | undefined;

  /**
   * `metrics`: where the generations report (time to first token, tokens, batch sizes, rejections,
   * speculative decoding's guesses); `defaults`: generation options every request gets unless it sets them.
   */
  constructor(
    readonly model: Model,
    limits: SchedulerLimits,
    metrics?: ModelMetrics,
    private readonly defaults: Pick<GenerateOptions, 'speculative'> = {},
  ) {
    this.metrics = metrics;
    this.maxKvBytes = limits.maxKvBytes;
    this.queue = new AdmissionQueue(limits.maxActive, limits.maxQueued, metrics ? () => metrics.rejected() : undefined, limits.maxKvBytes ?? Infinity);
    this.unsubscribe = metrics ? model.onBatchStep((rows) => metrics.batchStep(rows)) : undefined;
  }

  /** Stops reporting the model's batch steps to the metrics (the server is done with the model). */
  close(): void {
    this.unsubscribe?.();
  }

  get active(): number {
    return this.queue.active;
  }

  get queued(): number {
    return this.queue.queued;
  }

  /** KV cache bytes the running generations are counted at (SchedulerLimits.maxKvBytes; 0 without it). */
  get kvBytesAdmitted(): number {
    return this.queue.used;
  }

  /** KV bytes per position: known once a session was made; the first time, a one-token eval makes one. */
  private bytesPerPosition(): Promise<number> {
    const perPosition = () => this.model.kvCache.sessionBytes / this.model.contextLength;
    if (this.model.kvCache.sessionBytes > 0) return Promise.resolve(perPosition());
    return (this.probe ??= this.model.logits([0]).then(perPosition));
  }

  /** Takes a slot, and with maxKvBytes the bytes `request` may hold (400 when it can never fit). */
  private async enterWithin(request: GenerationRequest, signal: AbortSignal, budget: number): Promise<() => void> {
    const perPosition = await this.bytesPerPosition();
    const promptTokens = promptLength(request);
    const context = this.model.contextLength;
    const generated = request.options.contextShift ? context : (request.options.maxTokens ?? Infinity);
    const positions = Math.min(promptTokens + generated, context);
    const bytes = Math.ceil(positions * perPosition);
    if (bytes > budget) {
      const fields = request.fields ?? { prompt: request.kind === 'text' ? 'prompt' : 'messages', maxTokens: 'max_tokens' };
      const promptTooLong = Math.ceil(promptTokens * perPosition) > budget;
      const field = promptTooLong ? fields.prompt : fields.maxTokens;
      throw new ApiError(400, `this request may hold ${positions} positions of KV cache (the prompt's ${promptTokens} + the tokens it may generate, at most the context of ${context}): ${bytes} bytes, more than the server's KV budget of ${budget} bytes (--max-kv-bytes)${promptTooLong ? '' : `; lower ${fields.maxTokens}`}`, 'invalid_request_error', field, 'kv_budget_exceeded');
    }
    return this.queue.enter(signal, bytes);
  }

  /**
   * Admits `request` (ApiError 429 at once when the queue is full). The caller must iterate the
   * result to its end or break out of it: the slot is held from its turn until then.
   */
  submit(request: GenerationRequest, signal: AbortSignal): ScheduledGeneration {
    const entered = this.maxKvBytes === undefined ? this.queue.enter(signal) : this.enterWithin(request, signal, this.maxKvBytes);
    entered.catch(() => {}); // a waiter aborted before iteration began: nothing to report
    const { model, metrics, defaults } = this;
    const submitted = performance.now();
    let generation: Generation | undefined;
    async function* run(): AsyncGenerator<GeneratedPiece> {
      const release = await entered;
      let last: number | undefined;
      try {
        const options = { ...defaults, ...request.options, signal };
        generation = startOn(model, request, options);
        if (!metrics) return yield* generation;
        for await (const piece of generation) {
          const now = performance.now();
          if (last === undefined) metrics.firstToken(promptLength(request), (now - submitted) / 1000);
          else metrics.nextToken((now - last) / 1000);
          last = now;
          yield piece;
        }
      } finally {
        release();
        if (metrics && generation) {
          metrics.finished(generation.tokens.length, (performance.now() - submitted) / 1000, generation.stopReason !== undefined);
          if (generation.speculative) metrics.speculated(generation.speculative);
        }
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
