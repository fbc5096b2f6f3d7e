/**
 * The replicas of one layer range: which to use, which are down, and the check that each serves
 * the expected model and layers before it gets a tensor. A replica found down is probed again
 * every `rejoinMs` until it answers (a restarted stage rejoins).
 */
import { PipelineError } from '../base/errors';
import { formatLayerRange, type LayerRange } from './layers';
import { SCHEMA_VERSION, type StageInfo } from './schema';
import { StageCallError, StageReplica } from './stage-client';

/** What every stage must report. */
export interface ExpectedStage {
  modelHash: string;
  numLayers: number;
  hiddenSize: number;
  vocabSize: number;
}

interface ReplicaState {
  replica: StageReplica;
  info: StageInfo | undefined;
  down: boolean;
  probe: NodeJS.Timeout | undefined;
}

export class StageGroup {
  private readonly states: ReplicaState[];
  private closed = false;

  constructor(
    readonly range: LayerRange,
    replicas: StageReplica[],
    private readonly expected: ExpectedStage,
    private readonly timeoutMs: number,
    private readonly rejoinMs: number,
  ) {
    this.states = replicas.map((replica) => ({ replica, info: undefined, down: false, probe: undefined }));
  }

  get layers(): string {
    return formatLayerRange(this.range);
  }

  /**
   * Describes every replica: throws for one serving something else, and when none answers.
   * Resolves to the fewest positions a session holds on the replicas that answered.
   */
  async connect(): Promise<number> {
    const results = await Promise.allSettled(this.states.map((s) => this.verify(s)));
    const refused = results.find((r) => r.status === 'rejected' && r.reason instanceof PipelineError);
    if (refused) throw (refused as PromiseRejectedResult).reason;
    const up = this.states.filter((s) => !s.down && s.info);
    if (up.length === 0) throw this.unavailable(results.map((r) => (r.status === 'rejected' ? (r.reason as Error).message : '')).filter(Boolean).join('; '));
    return Math.min(...up.map((s) => s.info!.maxPositions));
  }

  /** A verified replica not in `exclude`, those known up first. Throws PipelineError when none answers. */
  async pick(exclude: ReadonlySet<StageReplica>): Promise<StageReplica> {
    const candidates = this.states.filter((s) => !exclude.has(s.replica)).sort((a, b) => Number(a.down) - Number(b.down));
    const why: string[] = [];
    for (const s of candidates) {
      if (!s.down && s.info) return s.replica;
      try {
        await this.verify(s);
        return s.replica;
      } catch (error) {
        if (error instanceof PipelineError) throw error;
        why.push(`${s.replica.address}: ${(error as Error).message}`);
      }
    }
    throw this.unavailable(why.join('; '));
  }

  /** Takes `replica` out of use until a probe finds it answering again. */
  markDown(replica: StageReplica): void {
    const s = this.states.find((x) => x.replica === replica);
    if (!s || s.down) return;
    s.down = true;
    this.scheduleProbe(s);
  }

  close(): void {
    this.closed = true;
    for (const s of this.states) {
      clearTimeout(s.probe);
      s.replica.close();
    }
  }

  private scheduleProbe(s: ReplicaState): void {
    if (this.closed) return;
    clearTimeout(s.probe);
    s.probe = setTimeout(() => {
      this.verify(s).catch(() => undefined);
    }, this.rejoinMs);
    s.probe.unref();
  }

  /** Describe and compare; marks the replica up or down. */
  private async verify(s: ReplicaState): Promise<void> {
    let info: StageInfo;
    try {
      info = await s.replica.describe(this.timeoutMs);
    } catch (error) {
      s.down = true;
      this.scheduleProbe(s);
      if (error instanceof StageCallError && error.rejected) {
        throw new PipelineError('ERR_WEIGHTMAP_STAGE_REJECTED', `the stage refused the coordinator: ${error.message}`, {
          layers: this.layers,
          address: s.replica.address,
        });
      }
      throw error;
    }
    const e = this.expected;
    const mismatch =
      info.schemaVersion !== SCHEMA_VERSION
        ? `schema version ${info.schemaVersion}, expected ${SCHEMA_VERSION}`
        : info.modelHash !== e.modelHash
          ? `another model (hash ${info.modelHash.slice(0, 12)}…, expected ${e.modelHash.slice(0, 12)}…)`
          : info.firstLayer !== this.range.first || info.lastLayer !== this.range.last
            ? `layers ${info.firstLayer}-${info.lastLayer}, expected ${this.layers}`
            : info.numLayers !== e.numLayers || info.hiddenSize !== e.hiddenSize || info.vocabSize !== e.vocabSize || info.maxPositions < 1
              ? 'sizes that disagree with the model'
              : undefined;
    if (mismatch) {
      throw new PipelineError('ERR_WEIGHTMAP_STAGE_MISMATCH', `the stage serves ${mismatch}`, { layers: this.layers, address: s.replica.address });
    }
    clearTimeout(s.probe);
    s.info = info;
    s.down = false;
  }

  private unavailable(why: string): PipelineError {
    return new PipelineError('ERR_WEIGHTMAP_STAGE_UNAVAILABLE', `no replica of layers ${this.layers} answers${why ? `: ${why}` : ''}`, {
      layers: this.layers,
    });
  }
}
