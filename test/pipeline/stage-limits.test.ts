/**
 * A stage's bounds (issue #23): sessions past --max-sessions and steps past --max-kv-bytes end with
 * RESOURCE_EXHAUSTED while the others go on; the KV cache grows as positions fill (the engine's own
 * byte count, against the closed form of its doubling); and the idle timer stops while a step waits
 * in the engine's queue (busy sessions behind slow steps are not dropped, idle ones still are).
 */
import { EventEmitter } from 'node:events';
import * as grpc from '@grpc/grpc-js';
import { stageClientConstructor, type StageInfo, type TensorMessage } from '../../lib/pipeline/schema';
import { StageServer } from '../../lib/pipeline/stage-server';
import { SessionStream, type ForwardCall, type StageHost } from '../../lib/pipeline/stage-stream';
import { tensorMessage } from '../../lib/pipeline/tensor';
import { fixture } from '../helpers/fixtures';
import { mulberry32 } from '../helpers/rng';

jest.setTimeout(60_000);

const stories = fixture('llama-stories260k', 'sepweight');
// stories260K: 4 kv heads of head_dim 8, f32 cache; layers 2-4 are 3 layers: keys and values of one position.
const BYTES_PER_POSITION = 2 * 3 * 4 * 8 * 4;
const HIDDEN = 64;

type Duplex = grpc.ClientDuplexStream<TensorMessage, TensorMessage>;
const rand = mulberry32(23);
const hidden = (rows: number) => Float32Array.from({ length: rows * HIDDEN }, () => rand() - 0.5);

/** A Forward stream: send() resolves with the reply or rejects with the status that ended the stream. */
function open(client: grpc.Client & { Forward(md: grpc.Metadata): Duplex }, id: string) {
  const call = client.Forward(new grpc.Metadata());
  let position = 0;
  const failed = new Promise<grpc.ServiceError>((resolve) => call.once('error', resolve));
  return {
    call,
    failed,
    send(rows: number): Promise<TensorMessage> {
      const msg = tensorMessage(id, position, hidden(rows), HIDDEN);
      position += rows;
      return new Promise((resolve, reject) => {
        call.once('data', resolve);
        failed.then(reject);
        call.write(msg);
      });
    },
  };
}

describe('stage limits', () => {
  it('caps sessions and KV bytes with RESOURCE_EXHAUSTED, the cache growing as positions fill', async () => {
    const stage = await StageServer.start(stories, { layers: { first: 2, last: 4 }, threads: 1, maxSessions: 3, maxKvBytes: 40 * BYTES_PER_POSITION });
    const Client = stageClientConstructor();
    const client = new Client(stage.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & { Forward(md: grpc.Metadata): Duplex };
    try {
      // Growth: to the positions a step needs or twice those held, whichever is more.
      const a = open(client, 'a');
      for (const [rows, held] of [
        [2, 2],
        [1, 4],
        [1, 4],
        [1, 8],
        [12, 17],
      ]) {
        await a.send(rows);
        expect([rows, stage.kvBytes]).toEqual([rows, held * BYTES_PER_POSITION]);
        expect(stage.kvBytesClaimed).toBe(stage.kvBytes);
      }
      // The whole context (512 positions) would be 30 times that.
      expect(stage.kvBytes * 30).toBeLessThan(512 * BYTES_PER_POSITION);

      const b = open(client, 'b');
      await b.send(20); // 37 of 40 positions' bytes
      const c = open(client, 'c');
      await expect(c.send(4)).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, details: expect.stringMatching(/KV cache budget/) });
      expect(stage.sessions).toBe(2);
      expect(stage.kvBytes).toBe(37 * BYTES_PER_POSITION);
      // a's next position would double it to 34: past the budget too; a's stream ends, b's goes on.
      await expect(a.send(1)).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED });
      expect(stage.kvBytes).toBe(20 * BYTES_PER_POSITION);
      await b.send(1); // 21 held, grown to 40
      expect(stage.kvBytes).toBe(40 * BYTES_PER_POSITION);

      // Sessions: b, d and e fill the 3; f is refused at once.
      const d = open(client, 'd');
      const e = open(client, 'e');
      await expect(d.send(1)).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED }); // the bytes: 40 + 1 > 40
      b.call.end();
      await new Promise((resolve) => b.call.once('status', resolve));
      expect(stage.kvBytes).toBe(0);
      await e.send(3);
      const f = open(client, 'f');
      const g = open(client, 'g');
      await f.send(1);
      const h = open(client, 'h');
      await expect(h.send(1)).rejects.toMatchObject({ code: grpc.status.RESOURCE_EXHAUSTED, details: expect.stringMatching(/maximum of 3 sessions/) });
      void g;
      expect(stage.sessions).toBe(3);
    } finally {
      client.close();
      stage.close();
    }
  });
});

/** A stream's call as the stage sees it: what it writes and the status it ends with. */
class FakeCall extends EventEmitter {
  replies: TensorMessage[] = [];
  status: { code: number; details: string } | undefined;
  /** 'reply' and 'end' in the order they happened. */
  events: string[] = [];
  constructor() {
    super();
    this.on('error', (status) => {
      this.status ??= status;
      this.events.push('end');
    });
  }
  write(msg: TensorMessage) {
    this.replies.push(msg);
    this.events.push('reply');
    return true;
  }
  end() {
    this.status ??= { code: grpc.status.OK, details: '' };
    this.events.push('end');
  }
}

describe('the idle timer', () => {
  it('does not run while a step waits in the engine queue: sessions behind slow steps get their replies', async () => {
    const STEP_MS = 150; // each step, one after another: all but none of them wait past the idle timeout
    const IDLE_MS = 100;
    const info: StageInfo = { schemaVersion: 1, modelHash: 'x', firstLayer: 2, lastLayer: 3, numLayers: 5, hiddenSize: 4, vocabSize: 10, maxPositions: 16 };
    // One engine thread: the steps of every session run in turn, STEP_MS each.
    let queue = Promise.resolve();
    const engine = {
      createSession: () => ({
        position: 0,
        allocatedCacheBytes: 0,
        allocatedCacheBytesFor: () => 0,
        truncate() {},
        dispose() {},
        evalHidden(values: Float32Array) {
          const done = queue.then(() => new Promise<Float32Array>((resolve) => setTimeout(() => resolve(values.map((v) => v * 2)), STEP_MS)));
          queue = done.then(() => undefined);
          return done;
        },
      }),
    };
    const host = { info, engine, idleTimeoutMs: IDLE_MS, isDraining: false, maxKvBytes: 1 << 30, kvBytesClaimed: 0 } as unknown as StageHost;
    const calls = Array.from({ length: 10 }, () => new FakeCall());
    for (const call of calls) new SessionStream(call as unknown as ForwardCall, host, () => undefined);
    calls.forEach((call, i) => call.emit('data', tensorMessage(`s${i}`, 0, Float32Array.from([1, 2, 3, i]), 4)));
    // The last reply comes about 10 steps (1.5 s) after its tensor, 15 idle timeouts; idle after its
    // reply, each is then freed.
    while (calls.some((call) => call.status === undefined)) await new Promise((resolve) => setTimeout(resolve, 20));
    calls.forEach((call, i) => {
      expect([i, call.events]).toEqual([i, ['reply', 'end']]);
      expect(Array.from(new Float32Array(new Uint8Array(call.replies[0].data).buffer))).toEqual([2, 4, 6, 2 * i]);
      expect(call.status).toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED, details: expect.stringMatching(/freed/) });
    });
  });
});
