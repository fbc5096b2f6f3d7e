/**
 * The coordinator's side of one stage address (a replica): a gRPC channel shared by every
 * session, Describe at connect, and one Forward stream per session with a deadline per step.
 */
import type * as grpc from '@grpc/grpc-js';
import { grpcModule } from './grpc-modules';
import { callMetadata, channelCredentials, type ClientSecurity } from './auth';
import { stageClientConstructor, type StageInfo, type TensorMessage } from './schema';

/** Why a step or a Describe failed: `rejected` means the stage refused the request itself. */
export class StageCallError extends Error {
  constructor(
    message: string,
    readonly rejected: boolean,
    options?: { cause?: unknown },
  ) {
    super(message, options);
    this.name = 'StageCallError';
  }
}

/** Statuses that say the request is at fault, not the stage: trying a replica would not help. */
function isRejection(code: grpc.status | undefined): boolean {
  const { status } = grpcModule();
  return code === status.INVALID_ARGUMENT || code === status.UNAUTHENTICATED || code === status.PERMISSION_DENIED;
}

function callError(error: grpc.ServiceError | Error): StageCallError {
  const code = (error as grpc.ServiceError).code;
  const details = (error as grpc.ServiceError).details ?? error.message;
  return new StageCallError(details, isRejection(code), { cause: error });
}

/** The largest HTTP/2 receive window asked for: a whole reply of any model in flight, within HTTP/2's 2^31 − 1. */
const RECEIVE_WINDOW_LIMIT = 64 << 20;

type StageClient = grpc.Client & {
  Describe(request: object, metadata: grpc.Metadata, options: grpc.CallOptions, callback: (e: grpc.ServiceError | null, r?: StageInfo) => void): grpc.ClientUnaryCall;
  Forward(metadata: grpc.Metadata): grpc.ClientDuplexStream<TensorMessage, TensorMessage>;
};

export class StageReplica {
  private readonly client: StageClient;
  private readonly metadata: grpc.Metadata;

  /** @param maxReplyBytes  the largest reply the coordinator accepts (hidden states of a whole context) */
  constructor(
    readonly address: string,
    security: ClientSecurity,
    maxReplyBytes: number,
  ) {
    const Client = stageClientConstructor();
    this.client = new Client(address, channelCredentials(security), {
      'grpc.max_receive_message_length': maxReplyBytes,
      // HTTP/2's default window (64 KiB) lets a stage send a 600 KB logits reply only after three
      // WINDOW_UPDATE round trips: 1.1 ms per token on loopback instead of 0.3 ms.
      'grpc-node.flow_control_window': Math.min(maxReplyBytes, RECEIVE_WINDOW_LIMIT),
      'grpc.keepalive_time_ms': 10_000,
      'grpc.keepalive_timeout_ms': 5_000,
      'grpc.keepalive_permit_without_calls': 1,
      // A restarted stage is found again within about a second.
      'grpc.initial_reconnect_backoff_ms': 100,
      'grpc.max_reconnect_backoff_ms': 1_000,
      // The session replays to a replica itself; grpc-js's retry layer would only buffer a copy of each message.
      'grpc.enable_retries': 0,
      ...(security.tls?.serverName ? { 'grpc.ssl_target_name_override': security.tls.serverName } : {}),
    }) as unknown as StageClient;
    this.metadata = callMetadata(security);
  }

  /** Waits up to `timeoutMs` for a connection (a restarted stage is reached as soon as it listens). */
  describe(timeoutMs: number): Promise<StageInfo> {
    return new Promise((resolve, reject) => {
      const metadata = this.metadata.clone();
      metadata.setOptions({ waitForReady: true });
      this.client.Describe({}, metadata, { deadline: Date.now() + timeoutMs }, (error, info) =>
        error || !info ? reject(callError(error ?? new Error('no reply'))) : resolve(info),
      );
    });
  }

  open(): StepStream {
    return new StepStream(this.client.Forward(this.metadata));
  }

  close(): void {
    this.client.close();
  }
}

/**
 * One session's Forward stream: one tensor in flight, each with its own deadline. The deadline is
 * one timer per stream, re-armed by each step rather than made and cleared per token; it holds the
 * process open only while a step is in flight.
 */
export class StepStream {
  private pending: { resolve(m: TensorMessage): void; reject(e: Error): void } | undefined;
  private deadline: NodeJS.Timeout | undefined;
  private deadlineMs = 0;
  private failure: StageCallError | undefined;

  constructor(private readonly call: grpc.ClientDuplexStream<TensorMessage, TensorMessage>) {
    call.on('data', (msg: TensorMessage) => {
      const p = this.pending;
      if (!p) return this.fail(new StageCallError('a reply nobody asked for', false));
      this.pending = undefined;
      this.deadline?.unref();
      p.resolve(msg);
    });
    call.on('error', (error: grpc.ServiceError) => this.fail(callError(error)));
    call.on('end', () => this.fail(new StageCallError('the stage ended the stream', false)));
  }

  /** True once the stream cannot carry another step. */
  get broken(): boolean {
    return this.failure !== undefined;
  }

  step(msg: TensorMessage, timeoutMs: number): Promise<TensorMessage> {
    if (this.failure) return Promise.reject(this.failure);
    if (this.pending) return Promise.reject(new StageCallError('a step is already in flight on this stream', false));
    return new Promise((resolve, reject) => {
      this.pending = { resolve, reject };
      this.armDeadline(timeoutMs);
      this.call.write(msg);
    });
  }

  /** Ends the stream (the stage frees the session); a step in flight rejects with `reason`. */
  cancel(reason = new StageCallError('cancelled', false)): void {
    this.fail(reason);
  }

  private fail(error: StageCallError): void {
    if (!this.failure) {
      this.failure = error;
      this.call.cancel();
    }
    clearTimeout(this.deadline);
    const p = this.pending;
    this.pending = undefined;
    p?.reject(error);
  }

  private armDeadline(timeoutMs: number): void {
    if (this.deadline && this.deadlineMs === timeoutMs) {
      this.deadline.refresh().ref();
      return;
    }
    clearTimeout(this.deadline);
    this.deadlineMs = timeoutMs;
    this.deadline = setTimeout(() => {
      // Also fires after a reply (then unref'd and idle): only a step in flight is late.
      if (this.pending) this.fail(new StageCallError(`no reply within the step deadline of ${timeoutMs} ms`, false));
    }, timeoutMs);
  }
}
