/**
 * A stage's GET /metrics (metricsListen): the steps, positions and tensor bytes a coordinator sent
 * counted exactly, the sessions and KV bytes against StageServer's own counts, refusals by reason,
 * the token rule (metricsPublic lifts it) and the refusal to listen off loopback unchecked.
 */
import * as grpc from '@grpc/grpc-js';
import { stageClientConstructor, type TensorMessage } from '../../lib/pipeline/schema';
import { StageServer } from '../../lib/pipeline/stage-server';
import { tensorMessage } from '../../lib/pipeline/tensor';
import { fixture } from '../helpers/fixtures';
import { mulberry32 } from '../helpers/rng';

jest.setTimeout(60_000);

const stories = fixture('llama-stories260k', 'sepweight');
const HIDDEN = 64;
const TOKEN = 'stage-token-0123456789';
const rand = mulberry32(26);
const hidden = (rows: number) => Float32Array.from({ length: rows * HIDDEN }, () => rand() - 0.5);
type Duplex = grpc.ClientDuplexStream<TensorMessage, TensorMessage>;

function value(text: string, name: string, labels: string): number | undefined {
  const line = text.split('\n').find((l) => l.startsWith(`${name}{${labels}} `));
  return line === undefined ? undefined : Number(line.split(' ').pop());
}

describe('stage metrics', () => {
  it('count the steps, positions and bytes sent; sessions and KV bytes as the stage counts them; refusals by reason', async () => {
    const stage = await StageServer.start(stories, { layers: { first: 2, last: 4 }, threads: 1, maxSessions: 1, token: TOKEN, metricsListen: '127.0.0.1:0' });
    const Client = stageClientConstructor();
    const client = new Client(stage.address, grpc.credentials.createInsecure()) as unknown as grpc.Client & { Forward(md: grpc.Metadata): Duplex };
    const metadata = () => {
      const md = new grpc.Metadata();
      md.set('authorization', `Bearer ${TOKEN}`);
      return md;
    };
    try {
      const call = client.Forward(metadata());
      call.on('error', () => {}); // the drain at the end ends it with UNAVAILABLE
      let position = 0;
      let bytesIn = 0;
      let bytesOut = 0;
      for (const rows of [3, 1, 1, 5]) {
        const msg = tensorMessage('s', position, hidden(rows), HIDDEN);
        position += rows;
        bytesIn += msg.data.length;
        const reply = await new Promise<TensorMessage>((resolve) => {
          call.once('data', resolve);
          call.write(msg);
        });
        bytesOut += reply.data.length;
      }
      // A second session past --max-sessions 1 is refused.
      const second = client.Forward(metadata());
      await new Promise((resolve) => second.once('error', resolve));
      const scrape = async (auth?: string) => fetch(`http://${stage.metricsAddress}/metrics`, auth ? { headers: { Authorization: `Bearer ${auth}` } } : {});
      expect((await scrape()).status).toBe(401);
      expect((await scrape('wrong')).status).toBe(401);
      const response = await scrape(TOKEN);
      expect(response.status).toBe(200);
      const text = await response.text();
      const l = 'layers="2-4"';
      expect(value(text, 'weightmap_stage_step_seconds_count', l)).toBe(4);
      expect(value(text, 'weightmap_stage_positions_total', l)).toBe(10);
      expect(value(text, 'weightmap_stage_received_bytes_total', l)).toBe(bytesIn);
      expect(bytesIn).toBe(10 * HIDDEN * 4);
      expect(value(text, 'weightmap_stage_sent_bytes_total', l)).toBe(bytesOut);
      expect(value(text, 'weightmap_stage_sessions', l)).toBe(1);
      expect(value(text, 'weightmap_stage_max_sessions', l)).toBe(1);
      expect(value(text, 'weightmap_stage_kv_cache_used_bytes', l)).toBe(stage.kvBytes);
      expect(stage.kvBytes).toBeGreaterThan(0);
      expect(value(text, 'weightmap_stage_kv_cache_budget_bytes', l)).toBe(stage.maxKvBytes);
      expect(value(text, 'weightmap_stage_kv_cache_usage_ratio', l)).toBeCloseTo(stage.kvBytes / stage.maxKvBytes, 12);
      expect(value(text, 'weightmap_stage_streams_refused_total', `${l},reason="max_sessions"`)).toBe(1);
      expect((await fetch(`http://${stage.metricsAddress}/other`)).status).toBe(404);
      call.end();
    } finally {
      client.close();
      await stage.drain(1000);
    }
    await expect(fetch(`http://${stage.metricsAddress}/metrics`)).rejects.toThrow();
  });

  it('metricsPublic needs no token; off loopback without a token or metricsPublic it refuses to start', async () => {
    const stage = await StageServer.start(stories, { layers: { first: 2, last: 4 }, threads: 1, token: TOKEN, metricsListen: '127.0.0.1:0', metricsPublic: true });
    try {
      expect((await fetch(`http://${stage.metricsAddress}/metrics`)).status).toBe(200);
    } finally {
      stage.close();
    }
    // The gRPC side is loopback here; the metrics listener alone asks for the wildcard address.
    await expect(StageServer.start(stories, { layers: { first: 2, last: 4 }, threads: 1, metricsListen: '0.0.0.0:0' })).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_INSECURE_LISTEN' });
  });
});
