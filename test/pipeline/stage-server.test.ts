/**
 * A stage in this process: the refusal to listen off loopback without TLS (the CLI's one line),
 * mutual TLS end to end (openssl-made CA and certificates) with a stage holding every layer, the
 * client-name check, the health service, graceful drain, and idle sessions being freed.
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { service as healthService } from 'grpc-health-check';
import { loadModel } from '../../lib/models/model';
import { stageClientConstructor, type TensorMessage } from '../../lib/pipeline/schema';
import { StageServer } from '../../lib/pipeline/stage-server';
import { tensorMessage } from '../../lib/pipeline/tensor';
import { runCli } from '../helpers/cli';
import { fixture, readJson, tempDir } from '../helpers/fixtures';

jest.setTimeout(60_000);

const stories = fixture('llama-stories260k', 'sepweight');
const greedy: number[] = readJson('llama-stories260k', 'expected.json').greedy.tokens;
const tmp = tempDir('weightmap-stage-');
afterAll(() => tmp.cleanup());

type Duplex = grpc.ClientDuplexStream<TensorMessage, TensorMessage>;
function rawClient(address: string) {
  const Client = stageClientConstructor();
  return new Client(address, grpc.credentials.createInsecure()) as unknown as grpc.Client & { Forward(md: grpc.Metadata): Duplex };
}
const send = (call: Duplex, msg: TensorMessage) =>
  new Promise<TensorMessage>((resolve, reject) => {
    call.once('data', resolve);
    call.once('error', reject);
    call.write(msg);
  });
const ended = (call: Duplex) => new Promise<grpc.ServiceError>((resolve) => call.once('error', resolve));

/** A CA, a server certificate for 127.0.0.1 / localhost and client certificates, made by openssl. */
function makeCerts(dir: string) {
  const ssl = (...args: string[]) => execFileSync('openssl', args, { cwd: dir, stdio: 'pipe' });
  const key = (name: string) => ssl('genpkey', '-algorithm', 'EC', '-pkeyopt', 'ec_paramgen_curve:P-256', '-out', `${name}.key`);
  key('ca');
  ssl('req', '-x509', '-new', '-key', 'ca.key', '-subj', '/CN=test-ca', '-days', '2', '-out', 'ca.pem');
  const sign = (name: string, cn: string, ext: string) => {
    key(name);
    ssl('req', '-new', '-key', `${name}.key`, '-subj', `/CN=${cn}`, '-out', `${name}.csr`);
    fs.writeFileSync(path.join(dir, `${name}.ext`), ext);
    ssl('x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.pem', '-CAkey', 'ca.key', '-CAcreateserial', '-days', '2', '-extfile', `${name}.ext`, '-out', `${name}.pem`);
  };
  sign('server', 'localhost', 'subjectAltName=DNS:localhost,IP:127.0.0.1\nextendedKeyUsage=serverAuth\n');
  sign('client', 'coordinator', 'extendedKeyUsage=clientAuth\n');
  sign('intruder', 'intruder', 'extendedKeyUsage=clientAuth\n');
  const read = (f: string) => fs.readFileSync(path.join(dir, f));
  return {
    ca: read('ca.pem'),
    server: { cert: read('server.pem'), key: read('server.key') },
    client: { cert: read('client.pem'), key: read('client.key') },
    intruder: { cert: read('intruder.pem'), key: read('intruder.key') },
  };
}

describe('weightmap stage', () => {
  it('refuses, in one line and exit code 2 (usage), to listen off loopback without TLS or without a caller check', async () => {
    const plain = await runCli(['stage', stories, '--layers', '0-4', '--listen', '0.0.0.0:0']);
    expect(plain.exitCode).toBe(2);
    expect(plain.stdout).toBe('');
    expect(plain.stderr).toMatch(/^weightmap: ERR_WEIGHTMAP_INSECURE_LISTEN: refusing to listen on 0\.0\.0\.0 without TLS: [^\n]*\n$/);
    const certs = path.join(tmp.dir, 'c');
    fs.mkdirSync(certs);
    makeCerts(certs);
    const noCheck = await runCli(['stage', stories, '--layers', '0-4', '--listen', '0.0.0.0:0', '--tls-cert', path.join(certs, 'server.pem'), '--tls-key', path.join(certs, 'server.key')]);
    expect(noCheck.exitCode).toBe(2);
    expect(noCheck.stderr).toMatch(/^weightmap: [^\n]*with no caller check: pass --tls-ca \(mutual TLS\) or --token\n$/);
  });

  it('serves a whole model over mutual TLS to allowed client certificates only', async () => {
    const dir = path.join(tmp.dir, 'm');
    fs.mkdirSync(dir);
    const certs = makeCerts(dir);
    const stage = await StageServer.start(stories, {
      layers: { first: 0, last: 4 },
      listen: '0.0.0.0:0',
      threads: 1,
      tls: { ...certs.server, ca: certs.ca },
      allowClients: ['coordinator'],
    });
    const address = `127.0.0.1:${stage.address.split(':').pop()}`;
    const stages = [{ layers: '0-4', address }];
    try {
      const model = await loadModel(stories, { threads: 1, pipeline: { stages, tls: { ca: certs.ca, ...certs.client, serverName: 'localhost' } } });
      const gen = model.generate('', { maxTokens: 40, temperature: 0 });
      await gen.text();
      expect(gen.tokens).toEqual(greedy.slice(0, 40));
      model.dispose();
      await expect(loadModel(stories, { pipeline: { stages, tls: { ca: certs.ca, ...certs.intruder, serverName: 'localhost' } } })).rejects.toMatchObject({
        code: 'ERR_WEIGHTMAP_STAGE_REJECTED',
        message: expect.stringMatching(/may not call/),
      });
      // No client certificate: the handshake fails, so the stage never answers.
      await expect(loadModel(stories, { pipeline: { stages, tls: { ca: certs.ca, serverName: 'localhost' }, connectTimeoutMs: 1000 } })).rejects.toMatchObject({
        code: 'ERR_WEIGHTMAP_STAGE_UNAVAILABLE',
      });
      // Plaintext to a TLS stage does not connect either, and a remote address needs TLS before any connection.
      await expect(loadModel(stories, { pipeline: { stages, connectTimeoutMs: 1000 } })).rejects.toMatchObject({ code: 'ERR_WEIGHTMAP_STAGE_UNAVAILABLE' });
      await expect(loadModel(stories, { pipeline: [{ layers: '0-4', address: '10.0.0.1:50051' }] })).rejects.toMatchObject({
        code: 'ERR_WEIGHTMAP_PIPELINE_CONFIG',
        message: expect.stringMatching(/needs TLS/),
      });
    } finally {
      stage.close();
    }
  });

  it('reports health, frees a silent session after the idle timeout, and drains on request', async () => {
    const stage = await StageServer.start(stories, { layers: { first: 2, last: 4 }, threads: 1, idleTimeoutMs: 300 });
    const client = rawClient(stage.address);
    const Health = grpc.makeGenericClientConstructor(healthService, 'Health');
    const health = new Health(stage.address, grpc.credentials.createInsecure()) as unknown as {
      Check(req: { service: string }, cb: (e: Error | null, r?: { status: string }) => void): void;
      close(): void;
    };
    const hidden = new Float32Array(2 * 64).fill(0.25);
    try {
      const status = await new Promise<{ status: string }>((resolve, reject) => health.Check({ service: 'weightmap.pipeline.v1.Stage' }, (e, r) => (e ? reject(e) : resolve(r!))));
      expect(status.status).toBe('SERVING');

      // Hidden states may come as f16: the same values (exact in f16) give the same reply as f32.
      const asF32 = client.Forward(new grpc.Metadata());
      const asF16 = client.Forward(new grpc.Metadata());
      const f32Reply = await send(asF32, tensorMessage('a', 0, hidden, 64));
      const half = Buffer.alloc(hidden.length * 2);
      for (let i = 0; i < hidden.length; i++) half.writeUInt16LE(0x3400, i * 2); // 0.25
      const f16Reply = await send(asF16, { sessionId: 'b', position: 0, shape: [2, 64], dtype: 'F16', data: half });
      expect(f16Reply.data.equals(f32Reply.data)).toBe(true);
      // Ending a stream frees its session before the stage sends the final status.
      const finished = (call: Duplex) => new Promise((resolve) => call.once('status', resolve));
      const both = Promise.all([finished(asF32), finished(asF16)]);
      asF32.end();
      asF16.end();
      await both;
      expect(stage.sessions).toBe(0);

      const silent = client.Forward(new grpc.Metadata());
      await send(silent, tensorMessage('silent', 0, hidden, 64));
      expect(stage.sessions).toBe(1);
      expect(await ended(silent)).toMatchObject({ code: grpc.status.DEADLINE_EXCEEDED, details: expect.stringMatching(/freed/) });
      expect(stage.sessions).toBe(0);

      const open = client.Forward(new grpc.Metadata());
      await send(open, tensorMessage('open', 0, hidden, 64));
      const end = ended(open);
      await stage.drain(5000);
      expect(await end).toMatchObject({ code: grpc.status.UNAVAILABLE, details: expect.stringMatching(/draining/) });
      expect(stage.sessions).toBe(0);
    } finally {
      client.close();
      health.close();
      stage.close();
    }
  });
});
