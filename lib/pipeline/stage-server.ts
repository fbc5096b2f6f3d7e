/**
 * A pipeline stage: one contiguous layer range of a sepweight tree behind the gRPC Stage service
 * (stage.proto), the grpc.health.v1 health service beside it.
 *
 *   const stage = await StageServer.start('qwen3-tree', { layers: { first: 0, last: 13 } });
 *   console.log(stage.address);   // 127.0.0.1:<port>
 *   await stage.drain();          // on SIGTERM
 *
 * Each Forward stream is one session with its own KV cache (lib/pipeline/stage-stream.ts).
 */
import type * as grpc from '@grpc/grpc-js';
import type { HealthImplementation } from 'grpc-health-check';
import { grpcModule, healthCheckModule } from './grpc-modules';
import { DecoderEngine } from '../engines/decoder';
import { defaultContextLength } from '../engines/kv-session';
import type { ModelWeights } from '../addon/weights';
import type { DecoderConfig, DecoderQuant } from '../architectures/decoder';
import { closeWeights } from '../addon/weights';
import { listenRefusal, parseAddress, refuseCaller, serverCredentials, type StageSecurity } from './auth';
import { formatLayerRange, modelHash, type LayerRange } from './layers';
import { SCHEMA_VERSION, stageService, type StageInfo } from './schema';
import { readStageWeights } from './stage-files';
import { SessionStream, type ForwardCall } from './stage-stream';
import type * as http from 'node:http';
import { StageMetrics } from './stage-metrics';
import { rangeError } from '../base/errors';

/** Options of `StageServer.start()` (and of `weightmap stage`). */
export interface StageOptions extends StageSecurity {
  layers: LayerRange;
  /** host:port; default 127.0.0.1:0 (port 0: any free port). */
  listen?: string;
  /** Engine threads; default: physical cores. */
  threads?: number;
  /** As loadModel's quant: 'none' (weights as stored, default), 'q8_0' or 'f32'. */
  quant?: DecoderQuant;
  /** Positions each session holds; default min(the model's maximum, 4096). */
  contextLength?: number;
  /** A session with no step running or waiting that gets nothing for this long is ended and freed. Default 120 s. */
  idleTimeoutMs?: number;
  /** Sessions open at once; a stream past it ends with RESOURCE_EXHAUSTED. Default 64. */
  maxSessions?: number;
  /**
   * Bytes of KV cache all sessions together may hold (each grows as its positions fill); a step
   * that would grow past it ends its stream with RESOURCE_EXHAUSTED. Default 2 GiB.
   */
  maxKvBytes?: number;
  /**
   * host:port of a plain HTTP listener answering GET /metrics (Prometheus text format); default
   * none. Needs the token when the stage has one, unless metricsPublic; off loopback it needs one of them.
   */
  metricsListen?: string;
  /** GET /metrics needs no token. Default false. */
  metricsPublic?: boolean;
}

export const STAGE_SERVICE_NAME = 'weightmap.pipeline.v1.Stage';
/** The defaults of the options above (the CLI's flags and README's table name these). */
export const STAGE_DEFAULTS = { idleTimeoutMs: 120_000, maxSessions: 64, maxKvBytes: 2 * 1024 ** 3 };

/** A pipeline stage: one range of a sepweight tree's layers behind a gRPC service, each stream one session with its own KV cache. `StageServer.start(tree, { layers })`, then `drain()`. */
export class StageServer {
  /** The address bound (the real port when 0 was asked). */
  readonly address: string;
  private readonly streams = new Set<SessionStream>();
  private draining = false;
  private disposed = false;
  /** The metrics, with metricsListen. */
  readonly observer: StageMetrics | undefined;
  private metricsServer: http.Server | undefined;
  /** The address GET /metrics is served on, with metricsListen. */
  metricsAddress: string | undefined;

  private constructor(
    private readonly server: grpc.Server,
    private readonly health: HealthImplementation,
    readonly engine: DecoderEngine,
    private readonly weights: ModelWeights,
    readonly info: StageInfo,
    readonly options: Readonly<StageOptions>,
    address: string,
  ) {
    this.address = address;
    if (options.metricsListen !== undefined) {
      this.observer = new StageMetrics(formatLayerRange(options.layers), {
        sessions: () => this.streams.size,
        maxSessions: this.maxSessions,
        kvBytes: () => this.kvBytes,
        maxKvBytes: this.maxKvBytes,
      });
    }
  }

  /** Maps the layers, loads them, binds and serves. Refuses (Error, nothing bound) a non-loopback address without TLS. */
  static async start(dir: string, options: StageOptions): Promise<StageServer> {
    const listen = options.listen ?? '127.0.0.1:0';
    const { host } = parseAddress(listen);
    const refusal = listenRefusal(host, options);
    if (refusal) throw Object.assign(new Error(refusal), { code: 'ERR_WEIGHTMAP_INSECURE_LISTEN' });
    for (const key of ['idleTimeoutMs', 'maxSessions', 'maxKvBytes'] as const) {
      const value = options[key];
      if (value !== undefined && !(Number.isSafeInteger(value) && value >= 1)) throw rangeError(`${key} must be an integer >= 1, got ${value}`);
    }

    const weights = await readStageWeights(dir, options.layers);
    let engine: DecoderEngine | undefined;
    try {
      const { first, last } = options.layers;
      engine = await DecoderEngine.load(weights, { threads: options.threads, layers: [first, last + 1], ...(options.quant ? { quant: options.quant } : {}) });
      const config = weights.config as DecoderConfig;
      const contextLength = options.contextLength ?? defaultContextLength(config.maxSeqLen);
      if (!(Number.isInteger(contextLength) && contextLength >= 1 && contextLength <= config.maxSeqLen)) {
        throw rangeError(`contextLength must be an integer in [1, ${config.maxSeqLen}], got ${contextLength}`);
      }
      const info: StageInfo = {
        schemaVersion: SCHEMA_VERSION,
        modelHash: modelHash(config),
        firstLayer: first,
        lastLayer: last,
        numLayers: config.numLayers,
        hiddenSize: config.hiddenSize,
        vocabSize: config.vocabSize,
        maxPositions: contextLength,
      };
      const server = new (grpcModule().Server)({
        // The largest valid request: a whole context of hidden states.
        'grpc.max_receive_message_length': contextLength * config.hiddenSize * 4 + 4096,
        'grpc.keepalive_time_ms': 20_000,
        'grpc.keepalive_timeout_ms': 10_000,
        'grpc.http2.min_ping_interval_without_data_ms': 5_000,
      });
      const health = new (healthCheckModule().HealthImplementation)({ '': 'SERVING', [STAGE_SERVICE_NAME]: 'SERVING' });
      health.addToServer(server);
      const port = await new Promise<number>((resolve, reject) =>
        server.bindAsync(listen, serverCredentials(options), (error, bound) => (error ? reject(error) : resolve(bound))),
      );
      const stage = new StageServer(server, health, engine, weights, info, options, `${host.includes(':') ? `[${host}]` : host}:${port}`);
      if (stage.observer) {
        try {
          const served = await stage.observer.listen(options.metricsListen!, options.token, options.metricsPublic === true);
          stage.metricsServer = served.server;
          stage.metricsAddress = served.address;
        } catch (error) {
          server.forceShutdown();
          throw error;
        }
      }
      server.addService(stageService(), {
        Describe: (call: grpc.ServerUnaryCall<unknown, StageInfo>, callback: grpc.sendUnaryData<StageInfo>) => {
          const refused = refuseCaller(call, options);
          if (refused) callback(refused);
          else if (stage.draining) callback({ code: grpcModule().status.UNAVAILABLE, details: 'the stage is draining' });
          else callback(null, info);
        },
        Forward: (call: ForwardCall) => stage.accept(call),
      });
      return stage;
    } catch (error) {
      engine?.dispose();
      closeWeights(weights);
      throw error;
    }
  }

  get layers(): string {
    return formatLayerRange(this.options.layers);
  }

  /** Sessions open now. */
  get sessions(): number {
    return this.streams.size;
  }

  get idleTimeoutMs(): number {
    return this.options.idleTimeoutMs ?? STAGE_DEFAULTS.idleTimeoutMs;
  }

  get maxSessions(): number {
    return this.options.maxSessions ?? STAGE_DEFAULTS.maxSessions;
  }

  get maxKvBytes(): number {
    return this.options.maxKvBytes ?? STAGE_DEFAULTS.maxKvBytes;
  }

  /** Bytes of KV cache the sessions hold now (the engine's own count). */
  get kvBytes(): number {
    let total = 0;
    for (const s of this.streams) total += s.allocatedKvBytes;
    return total;
  }

  /** Bytes of KV cache the sessions hold or are growing to (what maxKvBytes bounds). */
  get kvBytesClaimed(): number {
    let total = 0;
    for (const s of this.streams) total += s.claimedKvBytes;
    return total;
  }

  private accept(call: ForwardCall): void {
    const refused = refuseCaller(call, this.options);
    if (refused || this.draining) {
      this.observer?.refused(refused ? 'unauthenticated' : 'draining');
      call.emit('error', refused ?? { code: grpcModule().status.UNAVAILABLE, details: 'the stage is draining' });
      return;
    }
    if (this.streams.size >= this.maxSessions) {
      this.observer?.refused('max_sessions');
      call.emit('error', { code: grpcModule().status.RESOURCE_EXHAUSTED, details: `the stage holds its maximum of ${this.maxSessions} sessions; retry later or use another replica` });
      return;
    }
    const stream = new SessionStream(call, this, () => this.streams.delete(stream));
    this.streams.add(stream);
  }

  /**
   * Graceful stop: reports NOT_SERVING, refuses new streams, lets each running step finish and
   * reply, then ends every stream with UNAVAILABLE (coordinators move those sessions to a
   * replica) and closes. Forces the close after `graceMs`.
   */
  async drain(graceMs = 10_000): Promise<void> {
    if (!this.draining) {
      this.draining = true;
      this.health.setStatus('', 'NOT_SERVING');
      this.health.setStatus(STAGE_SERVICE_NAME, 'NOT_SERVING');
      for (const s of [...this.streams]) s.drain();
    }
    await new Promise<void>((resolve) => {
      const force = setTimeout(() => {
        this.server.forceShutdown();
        resolve();
      }, graceMs);
      this.server.tryShutdown(() => {
        clearTimeout(force);
        resolve();
      });
    });
    this.dispose();
  }

  /** Immediate stop: every stream is cut. */
  close(): void {
    this.draining = true;
    this.server.forceShutdown();
    this.dispose();
  }

  private dispose(): void {
    if (this.disposed) return;
    this.disposed = true;
    this.metricsServer?.close();
    this.metricsServer?.closeAllConnections();
    for (const s of [...this.streams]) s.close();
    this.engine.dispose();
    closeWeights(this.weights);
  }

  /** True once drain() or close() began: streams end after their running step. */
  get isDraining(): boolean {
    return this.draining;
  }
}
