/**
 * Bounds on the connections of a node:http server, so that no flood of sockets can take the
 * process's descriptors or shut out /health:
 * - at most `maxConnections` in all and `maxConnectionsPerPeer` from one remote address;
 * - a new connection over a cap closes the oldest idle one within it (no request being answered:
 *   kept alive between requests, or not yet past its headers), so idle sockets can never hold the
 *   server; only when every connection within the cap is answering a request is it turned away;
 * - turned away means: one of HEALTH_RESERVE spare slots, where /health is answered and anything
 *   else gets 503, each closed after one request (or PROBE_TIMEOUT_MS of silence); past those
 *   the socket is destroyed at once.
 * The headers, request and keep-alive timeouts bound how long a connection may take.
 */
import type * as http from 'node:http';
import type { Socket } from 'node:net';
import { rangeError } from '../base/errors';

/** The caps on open connections of `createServer()` (past them the oldest idle one is closed). */
export interface ConnectionLimits {
  /** Connections open at once. Default 512. */
  maxConnections?: number;
  /** Connections open at once from one remote address. Default 128. */
  maxConnectionsPerPeer?: number;
}

export const CONNECTION_DEFAULTS = {
  maxConnections: 512,
  maxConnectionsPerPeer: 128,
  /** Spare connections past the caps that may ask for /health only. */
  healthReserve: 8,
  /** A spare connection that sends no request within this is closed. */
  probeTimeoutMs: 5_000,
  /** node:http: the request headers must arrive within this (the default is 60 s). */
  headersTimeoutMs: 10_000,
  /** node:http: the whole request (headers and body; not the response) must arrive within this. */
  requestTimeoutMs: 60_000,
  /** node:http: an idle kept-alive connection is closed after this. */
  keepAliveTimeoutMs: 5_000,
};

interface Tracked {
  socket: Socket;
  peer: string;
  /** Requests being answered on it. */
  active: number;
}

const peerOf = (socket: Socket) => (socket.remoteAddress ?? '').replace(/^::ffff:/, '');

export function checkConnectionLimits(limits: ConnectionLimits): Required<ConnectionLimits> {
  const out = { maxConnections: CONNECTION_DEFAULTS.maxConnections, maxConnectionsPerPeer: CONNECTION_DEFAULTS.maxConnectionsPerPeer };
  for (const key of ['maxConnections', 'maxConnectionsPerPeer'] as const) {
    const value = limits[key];
    if (value === undefined) continue;
    if (!Number.isSafeInteger(value) || value < 1) throw rangeError(`${key} must be an integer >= 1, got ${value}`);
    out[key] = value;
  }
  return out;
}

/**
 * Applies the bounds to `server` (before it listens); returns the request listener to use in place
 * of `handler`, which answers spare connections itself.
 */
export function limitConnections(server: http.Server, limits: Required<ConnectionLimits>, handler: http.RequestListener): http.RequestListener {
  server.headersTimeout = CONNECTION_DEFAULTS.headersTimeoutMs;
  server.requestTimeout = CONNECTION_DEFAULTS.requestTimeoutMs;
  server.keepAliveTimeout = CONNECTION_DEFAULTS.keepAliveTimeoutMs;
  const open = new Map<Socket, Tracked>(); // in the order they came: the first idle one is the oldest
  const perPeer = new Map<string, number>();
  const spare = new Set<Socket>();

  const evictIdle = (peer: string | undefined): boolean => {
    for (const t of open.values()) {
      if (t.active === 0 && (peer === undefined || t.peer === peer)) {
        t.socket.destroy();
        forget(t);
        return true;
      }
    }
    return false;
  };
  const forget = (t: Tracked) => {
    if (!open.delete(t.socket)) return;
    const n = (perPeer.get(t.peer) ?? 1) - 1;
    if (n === 0) perPeer.delete(t.peer);
    else perPeer.set(t.peer, n);
  };

  server.on('connection', (socket: Socket) => {
    const peer = peerOf(socket);
    const fits =
      ((perPeer.get(peer) ?? 0) < limits.maxConnectionsPerPeer || evictIdle(peer)) && (open.size < limits.maxConnections || evictIdle(undefined));
    if (!fits) {
      if (spare.size >= CONNECTION_DEFAULTS.healthReserve) {
        socket.destroy();
        return;
      }
      spare.add(socket);
      socket.setTimeout(CONNECTION_DEFAULTS.probeTimeoutMs, () => socket.destroy());
      socket.once('close', () => spare.delete(socket));
      return;
    }
    const tracked: Tracked = { socket, peer, active: 0 };
    open.set(socket, tracked);
    perPeer.set(peer, (perPeer.get(peer) ?? 0) + 1);
    socket.once('close', () => forget(tracked));
  });

  return (req, res) => {
    const tracked = open.get(req.socket);
    if (tracked) {
      tracked.active++;
      res.once('close', () => tracked.active--);
      handler(req, res);
      return;
    }
    // A spare connection: one request, then closed.
    res.shouldKeepAlive = false;
    const path = (req.url ?? '').split('?')[0].replace(/\/+$/, '');
    if (path === '/health' && spare.has(req.socket)) {
      handler(req, res);
      return;
    }
    const text = JSON.stringify({
      error: { message: 'the server holds its maximum of connections, all answering requests; retry shortly', type: 'server_error', param: null, code: 'too_many_connections' },
    });
    res.writeHead(503, { 'Content-Type': 'application/json; charset=utf-8', 'Content-Length': Buffer.byteLength(text), 'Retry-After': '1', Connection: 'close' });
    res.end(text);
  };
}
