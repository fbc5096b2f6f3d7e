/**
 * One sequence run through the stages of a pipeline (a LanguageSession, lib/generation/generate.ts): the
 * coordinator sends the ids to the first stage, relays each stage's hidden states to the next,
 * and returns the last stage's logits. It keeps what it sent each stage (ids for the first,
 * hidden states for the others) so that when a stage dies or misses its deadline it can move the
 * session to a replica of the same layers and replay the prefix there to rebuild its KV cache.
 */
import { randomUUID } from 'node:crypto';
import { AbortError, DisposedError, PipelineError, rangeError } from '../base/errors';
import type { NativeSamplingParams, Sampler } from '../addon/binding';
import type { LanguageSession, StepOptions } from '../generation/generate';
import { RowBuffer } from './row-buffer';
import { StageCallError, type StageReplica, type StepStream } from './stage-client';
import type { StageGroup } from './stage-group';
import { readTensor, TensorError, tensorMessage } from './tensor';

export interface PipelineTimeouts {
  /** Most time one stage may take for one step before the session moves to a replica. */
  stepTimeoutMs: number;
}

/** A session's stream on one replica, and the positions that replica holds for it. */
interface Link {
  replica: StageReplica;
  stream: StepStream;
  held: number;
}

export class PipelineSession implements LanguageSession {
  private readonly id = randomUUID();
  private pos = 0;
  private readonly inputs: RowBuffer<Int32Array | Float32Array>[];
  private readonly links: (Link | undefined)[];
  private running = false;
  private aborted = false;
  /** The link whose step is in flight. */
  private inflight: Link | undefined;
  private disposed = false;

  constructor(
    private readonly groups: readonly StageGroup[],
    private readonly hiddenSize: number,
    private readonly vocabSize: number,
    readonly contextLength: number,
    private readonly timeouts: PipelineTimeouts,
    private readonly onDispose: () => void = () => undefined,
  ) {
    this.inputs = groups.map((_, k) =>
      k === 0 ? new RowBuffer<Int32Array>((n) => new Int32Array(n), 1, contextLength) : new RowBuffer<Float32Array>((n) => new Float32Array(n), hiddenSize, contextLength),
    );
    this.links = groups.map(() => undefined);
  }

  get position(): number {
    return this.pos;
  }

  /** The ids at positions [0, position): the first stage's input rows, copied. */
  get tokens(): Int32Array {
    return Int32Array.from(this.inputs[0].view(0, this.pos) as Int32Array);
  }

  /** eval() of `ids`, then the next token drawn by `sampler` with the session's ids as the penalty history. */
  async step(ids: ArrayLike<number>, sampler: Sampler, params: NativeSamplingParams, options: StepOptions = {}): Promise<number> {
    const logits = await this.eval(ids, options);
    return sampler.sample(logits, params, this.inputs[0].view(0, this.pos) as Int32Array, options.allowedTokens);
  }

  /** Feeds ids after `position` through every stage; resolves to the logits [vocab] of the last one. */
  async eval(ids: ArrayLike<number>, options: { signal?: AbortSignal } = {}): Promise<Float32Array> {
    if (this.disposed) throw new DisposedError('PipelineSession');
    if (this.running) throw Object.assign(new Error('this session is already running a call; await it first'), { code: 'ERR_WEIGHTMAP_BUSY' });
    const n = ids.length;
    if (n === 0) throw rangeError('eval: no token ids');
    if (this.pos + n > this.contextLength) {
      throw rangeError(`the sequence would hold ${this.pos + n} positions, past the context length ${this.contextLength}`);
    }
    const { signal } = options;
    if (signal?.aborted) throw new AbortError(undefined, { cause: signal.reason });
    const onAbort = () => this.abort();
    signal?.addEventListener('abort', onAbort, { once: true });
    this.running = true;
    this.aborted = false;
    try {
      const p = this.pos;
      let rows: Int32Array | Float32Array = Int32Array.from(ids);
      for (let k = 0; k < this.groups.length; k++) {
        this.inputs[k].truncate(p);
        this.inputs[k].append(rows);
        rows = await this.forward(k, p, n);
      }
      this.pos = p + n;
      return rows as Float32Array;
    } finally {
      this.running = false;
      signal?.removeEventListener('abort', onAbort);
    }
  }

  /** Forgets every position from `n` on (the stages forget them with the next tensor, which starts at n). */
  truncate(n: number): void {
    if (this.disposed) throw new DisposedError('PipelineSession');
    if (!Number.isInteger(n) || n < 0 || n > this.pos) throw rangeError(`truncate(${n}) outside [0, ${this.pos}]`);
    this.pos = n;
  }

  /** Stops the running eval: its stream is cut (that stage frees the session; the next eval replays to it). */
  abort(): void {
    if (!this.running) return;
    this.aborted = true;
    this.inflight?.stream.cancel();
  }

  /** Ends every stream: the stages free the session. */
  dispose(): void {
    if (this.disposed) return;
    this.abort();
    this.disposed = true;
    for (const link of this.links) link?.stream.cancel();
    this.links.fill(undefined);
    this.onDispose();
  }

  /**
   * Runs the rows [p, p + n) of stage k's inputs through stage k, on its current replica or, when
   * that fails, the next one (replaying the positions the replica lacks). Resolves to the
   * hidden states [n, hidden] or, from the last stage, the logits [vocab].
   */
  private async forward(k: number, p: number, n: number): Promise<Float32Array> {
    const group = this.groups[k];
    const last = k === this.groups.length - 1;
    const tried = new Set<StageReplica>();
    for (;;) {
      let link = this.links[k];
      if (!link || link.stream.broken) {
        // New, or ended by the stage between steps (idle timeout, drain): a fresh stream, prefix replayed.
        const replica = await group.pick(tried);
        link = this.links[k] = { replica, stream: replica.open(), held: 0 };
      }
      const from = Math.min(link.held, p);
      const msg = tensorMessage(this.id, from, this.inputs[k].view(from, p + n), k === 0 ? undefined : this.hiddenSize);
      this.inflight = link;
      try {
        if (this.aborted) throw new AbortError();
        const reply = await link.stream.step(msg, this.timeouts.stepTimeoutMs);
        const rows = last ? 1 : p + n - from;
        const out = readTensor(reply, {
          sessionId: this.id,
          dtypes: ['F32', 'F16'],
          width: last ? this.vocabSize : this.hiddenSize,
          maxRows: rows,
          minPosition: from,
          maxPosition: from,
          endLimit: this.contextLength,
        });
        if (out.rows !== rows) throw new TensorError(`${out.rows} rows in the reply, expected ${rows}`);
        link.held = p + n;
        this.inflight = undefined;
        return (last ? out.values : out.values.subarray((p - from) * this.hiddenSize)) as Float32Array;
      } catch (error) {
        this.inflight = undefined;
        link.stream.cancel();
        this.links[k] = undefined;
        if (this.aborted) throw new AbortError(undefined, { cause: error });
        if (error instanceof StageCallError && error.rejected) {
          throw new PipelineError('ERR_WEIGHTMAP_STAGE_REJECTED', `the stage refused a tensor: ${error.message}`, { layers: group.layers, address: link.replica.address, cause: error });
        }
        if (!(error instanceof StageCallError || error instanceof TensorError)) throw error;
        // The replica died, missed its deadline or answered nonsense: the next one replays the prefix.
        group.markDown(link.replica);
        tried.add(link.replica);
      }
    }
  }
}
