/**
 * One Forward stream of a stage: one session with its own KV cache. Its first tensor names the
 * session; every tensor is checked (lib/pipeline/tensor.ts) before it reaches the engine; one
 * tensor is in flight at a time; a stream that breaks a rule is ended with INVALID_ARGUMENT while
 * the others go on. A stream that ends, breaks, or stays idle (no step running or waiting) for
 * idleTimeoutMs frees its session. Its KV cache grows as positions fill, within the stage's
 * maxKvBytes: a step that would grow it past that ends the stream with RESOURCE_EXHAUSTED.
 */
import type * as grpc from '@grpc/grpc-js';
import { grpcModule } from './grpc-modules';
import type { DecoderEngine, DecoderEngineSession } from '../engines/decoder';
import type { StageInfo, TensorMessage } from './schema';
import type { StageObserver } from './stage-metrics';
import { MAX_SESSION_ID, readTensor, TensorError, tensorMessage } from './tensor';

export type ForwardCall = grpc.ServerDuplexStream<TensorMessage, TensorMessage>;

/** What a stream needs from its stage (lib/pipeline/stage-server.ts). */
export interface StageHost {
  readonly info: StageInfo;
  readonly engine: DecoderEngine;
  readonly idleTimeoutMs: number;
  readonly isDraining: boolean;
  readonly maxKvBytes: number;
  /** Bytes of KV cache every session holds or is growing to. */
  readonly kvBytesClaimed: number;
  /** Where steps and early ends are reported (the stage's metrics), when it has them. */
  readonly observer?: StageObserver;
}

/** One Forward stream: one session of the stage. */
export class SessionStream {
  private session: DecoderEngineSession | undefined;
  private sessionId: string | undefined;
  private busy = false;
  private closed = false;
  private idle: NodeJS.Timeout | undefined;
  /** Bytes of KV cache the session holds, or will once its running step has grown it. */
  private claimed = 0;

  constructor(
    private readonly call: ForwardCall,
    private readonly stage: StageHost,
    private readonly onClose: () => void,
  ) {
    call.on('data', (msg: TensorMessage) => this.receive(msg));
    call.on('end', () => this.end(grpcModule().status.OK, 'the coordinator ended the session'));
    call.on('cancelled', () => this.close());
    call.on('error', () => this.close());
    this.armIdle();
  }

  /** Bytes of KV cache the session holds now (the engine's count). */
  get allocatedKvBytes(): number {
    return this.session?.allocatedCacheBytes ?? 0;
  }

  get claimedKvBytes(): number {
    return this.closed ? 0 : this.claimed;
  }

  /** Ends the stream with UNAVAILABLE once the running step (if any) has replied. */
  drain(): void {
    if (!this.busy) this.end(grpcModule().status.UNAVAILABLE, 'the stage is draining');
  }

  /** Frees the session; a running step stops at its next layer. */
  close(): void {
    if (this.closed) return;
    this.closed = true;
    clearTimeout(this.idle);
    this.session?.dispose();
    this.session = undefined;
    this.onClose();
  }

  private end(code: grpc.status, details: string): void {
    if (this.closed) return;
    if (code === grpcModule().status.OK) this.call.end();
    else this.call.emit('error', { code, details });
    this.close();
  }

  /**
   * Starts the idle countdown (at the stream's start and after each reply); a tensor stops it
   * until its reply, so a step waiting in the engine's queue is never idle.
   */
  private armIdle(): void {
    if (this.idle) {
      this.idle.refresh();
      return;
    }
    const ms = this.stage.idleTimeoutMs;
    this.idle = setTimeout(() => {
      this.stage.observer?.refused('idle_timeout');
      this.end(grpcModule().status.DEADLINE_EXCEEDED, `no tensor for ${ms} ms: the session was freed`);
    }, ms);
    this.idle.unref();
  }

  private receive(msg: TensorMessage): void {
    if (this.closed) return;
    clearTimeout(this.idle);
    this.idle = undefined;
    const arrived = performance.now();
    if (this.busy) return this.end(grpcModule().status.RESOURCE_EXHAUSTED, 'one tensor at a time: wait for the reply');
    const { info } = this.stage;
    const embeds = info.firstLayer === 0;
    let input;
    try {
      if (this.sessionId === undefined) {
        const id = msg.sessionId;
        if (typeof id !== 'string' || id.length === 0 || id.length > MAX_SESSION_ID) {
          throw new TensorError(`the session id must be 1 to ${MAX_SESSION_ID} characters`);
        }
        this.sessionId = id;
      }
      input = readTensor(msg, {
        sessionId: this.sessionId,
        dtypes: embeds ? ['I32'] : ['F32', 'F16'],
        width: embeds ? undefined : info.hiddenSize,
        maxRows: info.maxPositions,
        minPosition: 0,
        maxPosition: this.session?.position ?? 0,
        endLimit: info.maxPositions,
      });
      if (input.values instanceof Int32Array) {
        for (const id of input.values) if (id < 0 || id >= info.vocabSize) throw new TensorError(`token id ${id} is outside the vocabulary [0, ${info.vocabSize})`);
      }
    } catch (error) {
      if (!(error instanceof TensorError)) throw error;
      this.stage.observer?.refused('invalid_argument');
      return this.end(grpcModule().status.INVALID_ARGUMENT, error.message);
    }
    // The KV budget is claimed here, synchronously, so that steps starting together cannot overrun it.
    let session: DecoderEngineSession;
    let grown: number;
    try {
      session = this.session ??= this.stage.engine.createSession({ contextLength: info.maxPositions });
      grown = session.allocatedCacheBytesFor(input.position + input.rows);
    } catch (error) {
      this.stage.observer?.refused('internal');
      return this.end(grpcModule().status.INTERNAL, `the step failed: ${(error as Error).message}`);
    }
    const others = this.stage.kvBytesClaimed - this.claimed;
    if (others + grown > this.stage.maxKvBytes) {
      this.stage.observer?.refused('kv_budget');
      return this.end(
        grpcModule().status.RESOURCE_EXHAUSTED,
        `the stage's KV cache budget of ${this.stage.maxKvBytes} bytes is spent (${others} held by other sessions; this step needs ${grown}); retry later or use another replica`,
      );
    }
    this.claimed = grown;
    this.busy = true;
    this.step(session, input.position, input.values).then(
      (reply) => {
        this.busy = false;
        if (this.closed) return;
        this.claimed = session.allocatedCacheBytes;
        this.call.write(reply);
        this.stage.observer?.step((performance.now() - arrived) / 1000, input.rows, msg.data?.length ?? 0, reply.data.length);
        if (this.stage.isDraining) this.drain();
        else this.armIdle();
      },
      (error: Error) => {
        this.busy = false;
        if (!this.closed) this.stage.observer?.refused('internal');
        this.end(grpcModule().status.INTERNAL, `the step failed: ${error.message}`);
      },
    );
  }

  private async step(session: DecoderEngineSession, position: number, values: Int32Array | Float32Array): Promise<TensorMessage> {
    const { info } = this.stage;
    if (position < session.position) session.truncate(position);
    const out = values instanceof Int32Array ? await session.eval(values) : await session.evalHidden(values);
    const width = info.lastLayer === info.numLayers - 1 ? info.vocabSize : info.hiddenSize;
    return tensorMessage(this.sessionId!, position, out, width);
  }
}
