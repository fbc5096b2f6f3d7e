/**
 * The server against what browsers and socket floods can do (issue #23): web pages (a POST without
 * Content-Type, a foreign Origin, a rebound Host), preflights with and without --cors, HEAD on GET
 * routes, and floods of idle and of busy connections past a small cap, /health answering through
 * them. Loopback only; every flood is a few dozen sockets.
 */
import * as http from 'node:http';
import * as net from 'node:net';
import { loadModel, type Model } from '../../lib/models/model';
import { CONNECTION_DEFAULTS } from '../../lib/server/connections';
import { fixture } from '../helpers/fixtures';
import { startServer, until, type Running } from './server-helpers';

let model: Model;
beforeAll(async () => {
  model = await loadModel(fixture('llama-stories260k', 'stories260K.bin'), { tokenizer: fixture('llama-stories260k', 'tok512.bin') });
});
afterAll(() => model.dispose());

interface Reply {
  status: number;
  headers: http.IncomingHttpHeaders;
  body: string;
}

/** One request on its own connection, with exactly these headers (Host included). */
function request(port: number, method: string, path: string, headers: Record<string, string>, body?: string, localAddress?: string): Promise<Reply> {
  return new Promise((resolve, reject) => {
    const req = http.request({ host: '127.0.0.1', port, method, path, headers, agent: false, setHost: false, localAddress }, (res) => {
      let text = '';
      res.setEncoding('utf8');
      res.on('data', (d) => (text += d));
      res.on('end', () => resolve({ status: res.statusCode!, headers: res.headers, body: text }));
    });
    req.on('error', reject);
    req.end(body);
  });
}

const portOf = (running: Running) => Number(new URL(running.origin).port);
const completion = JSON.stringify({ model: 'stories', prompt: [1], max_tokens: 2, temperature: 0 });
const corsHeaders = (headers: http.IncomingHttpHeaders) => Object.keys(headers).filter((h) => h.startsWith('access-control-'));

describe('web pages', () => {
  let running: Running;
  let port: number;
  beforeAll(async () => {
    running = await startServer({ model, modelId: 'stories', allowedHosts: ['weightmap.lan'] });
    port = portOf(running);
  });
  afterAll(() => running.stop());

  it("refuses the reproduction: no Content-Type, Origin http://evil.example, Host evil.example:PORT", async () => {
    const evil = await request(port, 'POST', '/v1/completions', { Host: `evil.example:${port}`, Origin: 'http://evil.example' }, completion);
    expect(evil.status).toBe(421);
    expect(JSON.parse(evil.body).error.code).toBe('host_not_allowed');
    // Each check on its own: the foreign Origin with a good Host, and no Content-Type at all.
    const origin = await request(port, 'POST', '/v1/completions', { Host: `127.0.0.1:${port}`, Origin: 'http://evil.example', 'Content-Type': 'application/json' }, completion);
    expect(origin.status).toBe(403);
    expect(JSON.parse(origin.body).error.code).toBe('origin_not_allowed');
    const untyped = await request(port, 'POST', '/v1/completions', { Host: `127.0.0.1:${port}` }, completion);
    expect(untyped.status).toBe(415);
    expect(JSON.parse(untyped.body).error.message).toMatch(/application\/json, got none/);
    const plain = await request(port, 'POST', '/v1/completions', { Host: `127.0.0.1:${port}`, 'Content-Type': 'text/plain' }, completion);
    expect(plain.status).toBe(415);
    for (const reply of [evil, origin, untyped, plain]) expect(JSON.parse(reply.body).choices).toBeUndefined();
  });

  it('answers loopback names, IP addresses, --allowed-host names and its own origin', async () => {
    const json = { 'Content-Type': 'application/json' };
    for (const host of [`127.0.0.1:${port}`, `localhost:${port}`, `[::1]:${port}`, `weightmap.lan:${port}`, 'WEIGHTMAP.LAN']) {
      const reply = await request(port, 'POST', '/v1/completions', { Host: host, ...json }, completion);
      expect([host, reply.status]).toEqual([host, 200]);
    }
    const same = await request(port, 'POST', '/v1/completions', { Host: `localhost:${port}`, Origin: `http://localhost:${port}`, ...json }, completion);
    expect(same.status).toBe(200);
    expect(corsHeaders(same.headers)).toEqual([]);
    expect((await request(port, 'GET', '/v1/models', { Host: `other.lan:${port}` })).status).toBe(421);
    const noHost = await request(port, 'GET', '/v1/models', {}); // node:http itself answers 400 (requireHostHeader)
    expect(noHost.status).toBeGreaterThanOrEqual(400);
    expect(noHost.status).toBeLessThan(500);
  });

  it('answers a preflight with no CORS headers without --cors', async () => {
    const preflight = await request(port, 'OPTIONS', '/v1/chat/completions', {
      Host: `127.0.0.1:${port}`,
      Origin: 'http://evil.example',
      'Access-Control-Request-Method': 'POST',
      'Access-Control-Request-Headers': 'content-type',
    });
    expect(preflight.status).toBe(403);
    expect(corsHeaders(preflight.headers)).toEqual([]);
  });

  it('with --cors ORIGIN: preflights and responses for that origin carry the CORS headers, others are refused', async () => {
    const cors = await startServer({ model, modelId: 'stories', corsOrigins: ['http://app.example'] });
    const p = portOf(cors);
    try {
      const host = `127.0.0.1:${p}`;
      const preflight = await request(p, 'OPTIONS', '/v1/completions', { Host: host, Origin: 'http://app.example', 'Access-Control-Request-Method': 'POST' });
      expect(preflight.status).toBe(204);
      expect(preflight.headers['access-control-allow-origin']).toBe('http://app.example');
      expect(preflight.headers['access-control-allow-headers']).toMatch(/Content-Type/);
      const post = await request(p, 'POST', '/v1/completions', { Host: host, Origin: 'http://app.example', 'Content-Type': 'application/json' }, completion);
      expect(post.status).toBe(200);
      expect(post.headers['access-control-allow-origin']).toBe('http://app.example');
      const other = await request(p, 'OPTIONS', '/v1/completions', { Host: host, Origin: 'http://evil.example', 'Access-Control-Request-Method': 'POST' });
      expect(other.status).toBe(403);
      expect(corsHeaders(other.headers)).toEqual([]);
    } finally {
      await cors.stop();
    }
  });

  it('answers HEAD on GET routes with the headers alone', async () => {
    const host = { Host: `127.0.0.1:${port}` };
    const get = await request(port, 'GET', '/health', host);
    const head = await request(port, 'HEAD', '/health', host);
    expect([get.status, head.status]).toEqual([200, 200]);
    expect(head.body).toBe('');
    expect(head.headers['content-length']).toBe(String(Buffer.byteLength(get.body)));
    const models = await request(port, 'HEAD', '/v1/models', host);
    expect(models.status).toBe(200);
    expect(models.body).toBe('');
    expect((await request(port, 'HEAD', '/v1/completions', host)).status).toBe(405);
  });
});

/** A raw socket from `localAddress`, resolved once connected; `closed` once the server has closed it. */
function openSocket(port: number, localAddress = '127.0.0.1'): Promise<{ socket: net.Socket; closed: () => boolean; received: () => string }> {
  return new Promise((resolve, reject) => {
    let isClosed = false;
    let data = '';
    const socket = net.connect({ port, host: '127.0.0.1', localAddress }, () => resolve({ socket, closed: () => isClosed, received: () => data }));
    socket.setEncoding('utf8');
    socket.on('data', (d) => (data += d));
    socket.on('close', () => (isClosed = true));
    socket.on('error', (error) => (isClosed ? undefined : reject(error)));
  });
}

/** The headers of a POST whose body never comes: a request the server is answering (reading) until its timeout. */
const stalledPost = (port: number) => `POST /v1/completions HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n`;

describe('connection floods', () => {
  it('idle sockets past --max-connections 32: the oldest idle ones are closed, /health answers, the count stays at the cap', async () => {
    const running = await startServer({ model, modelId: 'stories', maxConnections: 32 });
    const port = portOf(running);
    const sockets: Awaited<ReturnType<typeof openSocket>>[] = [];
    try {
      for (let i = 0; i < 48; i++) sockets.push(await openSocket(port));
      await until(() => sockets.filter((s) => s.closed()).length >= 16);
      const connections = () => new Promise<number>((resolve, reject) => running.server.getConnections((e, n) => (e ? reject(e) : resolve(n))));
      expect(await connections()).toBeLessThanOrEqual(32);
      // The first 16 were the oldest idle ones.
      expect(sockets.slice(0, 16).every((s) => s.closed())).toBe(true);
      expect(sockets.slice(16).some((s) => s.closed())).toBe(false);
      const health = await request(port, 'GET', '/health', { Host: `127.0.0.1:${port}` });
      expect(health.status).toBe(200);
      expect(JSON.parse(health.body).status).toBe('ok');
      expect(await connections()).toBeLessThanOrEqual(32);
    } finally {
      for (const s of sockets) s.socket.destroy();
      await running.stop();
    }
  });

  it('busy connections at the caps: /health through the reserve, 503 for the rest, per peer as well as in all', async () => {
    const running = await startServer({ model, modelId: 'stories', maxConnections: 8, maxConnectionsPerPeer: 4 });
    const port = portOf(running);
    const host = { Host: `127.0.0.1:${port}` };
    const held: net.Socket[] = [];
    try {
      // 127.0.0.2 holds its 4 with requests in flight: its 5th gets the reserve; 127.0.0.1 still gets in.
      for (let i = 0; i < 4; i++) {
        const s = await openSocket(port, '127.0.0.2');
        s.socket.write(stalledPost(port));
        held.push(s.socket);
      }
      await until(() => running.server.handler.inFlight === 4);
      const health2 = await request(port, 'GET', '/health', host, undefined, '127.0.0.2');
      expect(health2.status).toBe(200);
      expect(health2.headers.connection).toBe('close');
      const refused = await request(port, 'GET', '/v1/models', host, undefined, '127.0.0.2');
      expect(refused.status).toBe(503);
      expect(JSON.parse(refused.body).error.code).toBe('too_many_connections');
      expect((await request(port, 'GET', '/v1/models', host)).status).toBe(200);

      // 127.0.0.1 fills the other 4 of the 8 in all: now every peer gets the reserve.
      for (let i = 0; i < 4; i++) {
        const s = await openSocket(port);
        s.socket.write(stalledPost(port));
        held.push(s.socket);
      }
      await until(() => running.server.handler.inFlight === 8);
      expect((await request(port, 'GET', '/health', host)).status).toBe(200);
      expect((await request(port, 'GET', '/v1/models', host)).status).toBe(503);

      // The reserve is bounded too: with its slots taken by silent sockets, the next is closed at once, unanswered.
      const silent = [];
      for (let i = 0; i < CONNECTION_DEFAULTS.healthReserve; i++) silent.push(await openSocket(port));
      held.push(...silent.map((s) => s.socket));
      const past = await openSocket(port);
      held.push(past.socket);
      past.socket.write(`GET /health HTTP/1.1\r\nHost: 127.0.0.1:${port}\r\n\r\n`);
      await until(() => past.closed());
      expect(past.received()).toBe('');
      expect(silent.some((s) => s.closed())).toBe(false);
    } finally {
      for (const s of held) s.destroy();
      await running.stop();
    }
  });
});
