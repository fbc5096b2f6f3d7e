/**
 * loadModel(dir, { pipeline }) without local layers: connects to the stages, checks that their
 * ranges cover the model exactly once and that each serves this model (the hash of its config
 * and tensor shapes), and makes PipelineSessions, which Model runs like any engine's sessions.
 */
import { PipelineError, UnsupportedError } from '../base/errors';
import type { ModelWeights } from '../addon/weights';
import { isDecoderConfig, unheldFields, variantNames, type DecoderConfig } from '../architectures/decoder';
import { SEPWEIGHT_HOLDS } from '../formats/containers/sepweight';
import { isLoopback, parseAddress, TOKEN_ENV, type ClientSecurity } from './auth';
import { checkCoverage, modelHash, parseLayerRange } from './layers';
import { PipelineSession } from './session';
import { StageReplica } from './stage-client';
import { StageGroup } from './stage-group';

/** One range of layers and the stage addresses that serve it (replicas tried in order). */
export interface PipelineStageSpec {
  /** "first-last", inclusive: "0-13". */
  layers: string;
  /** host:port of the stage, or of each replica of it (tried in order). */
  address: string | readonly string[];
}

/** How the coordinator reaches its stages: deadlines and transport security. */
export interface PipelineOptions extends ClientSecurity {
  stages: readonly PipelineStageSpec[];
  /** Most time a stage may take for one step before the session moves to a replica. Default 30 s. */
  stepTimeoutMs?: number;
  /** Most time a stage may take to answer at connect. Default 5 s. */
  connectTimeoutMs?: number;
  /** How often a stage found down is probed until it answers again. Default 1 s. */
  rejoinMs?: number;
}

/** The stages alone (token from WEIGHTMAP_STAGE_TOKEN, plaintext loopback), or with connection settings. */
export type PipelineSpec = readonly PipelineStageSpec[] | PipelineOptions;

function configError(message: string): PipelineError {
  return new PipelineError('ERR_WEIGHTMAP_PIPELINE_CONFIG', message);
}

function normalize(spec: PipelineSpec): PipelineOptions {
  const options: PipelineOptions = Array.isArray(spec) ? { stages: spec as readonly PipelineStageSpec[] } : (spec as PipelineOptions);
  if (typeof options !== 'object' || options === null || !Array.isArray(options.stages) || options.stages.length === 0) {
    throw configError('pipeline must be a non-empty array of { layers, address } (or { stages, ... })');
  }
  for (const key of ['stepTimeoutMs', 'connectTimeoutMs', 'rejoinMs'] as const) {
    const v = options[key];
    if (v !== undefined && !(Number.isInteger(v) && v > 0)) throw configError(`${key} must be a positive integer, got ${String(v)}`);
  }
  const token = options.token ?? process.env[TOKEN_ENV];
  return { ...options, ...(token ? { token } : {}) };
}

/** A LanguageEngine (lib/models/model.ts) over remote stages. */
export class PipelineEngine {
  readonly threads = 0;
  private readonly sessions = new Set<PipelineSession>();

  private constructor(
    private readonly groups: StageGroup[],
    private readonly config: DecoderConfig,
    readonly maxSeqLen: number,
    private readonly stepTimeoutMs: number,
  ) {}

  static async connect(weights: ModelWeights, spec: PipelineSpec): Promise<PipelineEngine> {
    const config = weights.config;
    // Stages read sepweight trees, which hold the fields of SEPWEIGHT_HOLDS alone beyond Llama's.
    const holds = SEPWEIGHT_HOLDS;
    if (!isDecoderConfig(config) || unheldFields(config, holds).length > 0) throw new UnsupportedError(`pipelines run ${variantNames(holds)} models, not '${config.architecture}'`);
    const options = normalize(spec);
    const stages = options.stages.map((s) => {
      if (typeof s !== 'object' || s === null || typeof s.layers !== 'string') throw configError('each stage needs layers: "first-last"');
      const addresses = typeof s.address === 'string' ? [s.address] : Array.isArray(s.address) ? [...s.address] : [];
      if (addresses.length === 0 || !addresses.every((a) => typeof a === 'string')) throw configError(`stage ${s.layers} needs an address or a list of replica addresses`);
      for (const a of addresses) {
        if (!isLoopback(parseAddress(a).host) && !options.tls) {
          throw configError(`stage ${a} is not on loopback: connecting to it needs TLS (pipeline.tls)`);
        }
      }
      return { range: parseLayerRange(s.layers), addresses };
    });
    stages.sort((a, b) => a.range.first - b.range.first);
    checkCoverage(stages.map((s) => s.range), config.numLayers);

    const connectTimeoutMs = options.connectTimeoutMs ?? 5_000;
    // The largest reply: hidden states of a whole context, or the logits.
    const maxReplyBytes = Math.max(config.maxSeqLen * config.hiddenSize, config.vocabSize) * 4 + 4096;
    const expected = { modelHash: modelHash(config), numLayers: config.numLayers, hiddenSize: config.hiddenSize, vocabSize: config.vocabSize };
    const groups = stages.map(
      (s) => new StageGroup(s.range, s.addresses.map((a) => new StageReplica(a, options, maxReplyBytes)), expected, connectTimeoutMs, options.rejoinMs ?? 1_000),
    );
    try {
      const positions = await Promise.all(groups.map((g) => g.connect()));
      return new PipelineEngine(groups, config, Math.min(config.maxSeqLen, ...positions), options.stepTimeoutMs ?? 30_000);
    } catch (error) {
      for (const g of groups) g.close();
      throw error;
    }
  }

  get vocabSize(): number {
    return this.config.vocabSize;
  }

  createSession(contextLength: number): PipelineSession {
    const session: PipelineSession = new PipelineSession(this.groups, this.config.hiddenSize, this.config.vocabSize, contextLength, { stepTimeoutMs: this.stepTimeoutMs }, () =>
      this.sessions.delete(session),
    );
    this.sessions.add(session);
    return session;
  }

  dispose(): void {
    for (const s of [...this.sessions]) s.dispose();
    for (const g of this.groups) g.close();
  }
}
