/**
 * What keeps web pages from driving the server. A page can send a POST to any address without a
 * preflight, and with DNS rebinding read the answer under its own name; so:
 * - Host must be an IP address, a loopback name or one of `allowedHosts` (a rebinding page's
 *   requests carry its own name): 421 otherwise.
 * - Origin, when sent, must be the request's own (http(s)://Host) or one of `corsOrigins`: 403.
 * - POST bodies must be application/json (body.ts), which no page can send cross-origin without a
 *   preflight, and preflights are answered only for `corsOrigins`.
 */
import type { IncomingMessage, ServerResponse } from 'node:http';
import * as net from 'node:net';
import { isLoopback } from '../base/loopback';
import { ApiError } from './api-error';

/** What web pages may do: the Host names accepted besides IPs and loopback names, and the CORS origins. */
export interface BrowserPolicy {
  /** Host names (no port) the Host header may carry besides IP addresses and loopback names; '*': any. */
  allowedHosts?: readonly string[];
  /** Origins (scheme://host[:port]) whose pages may call: preflights answered, CORS headers sent; '*': any. */
  corsOrigins?: readonly string[];
}

const CORS_METHODS = 'GET, HEAD, POST, OPTIONS';
const CORS_HEADERS = 'Authorization, Content-Type';

/** The host name of a Host header (no port, no IPv6 brackets, lower case), or undefined when malformed. */
function hostName(header: string): string | undefined {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:[\]\s/@]+))(?::\d{1,5})?$/.exec(header);
  return m ? (m[1] ?? m[2]).toLowerCase().replace(/\.$/, '') : undefined;
}

export function browserGuard(policy: BrowserPolicy): {
  /** Throws the ApiError that refuses `req`, or sets its CORS headers on `res`. */
  check(req: IncomingMessage, res: ServerResponse): void;
  /** Answers an OPTIONS request: 204 with the CORS headers for an allowed origin, 403 otherwise. */
  preflight(req: IncomingMessage, res: ServerResponse): void;
} {
  const hosts = new Set((policy.allowedHosts ?? []).map((h) => h.toLowerCase()));
  const origins = new Set(policy.corsOrigins ?? []);
  const hostAllowed = (name: string) => hosts.has('*') || hosts.has(name) || net.isIP(name) !== 0 || isLoopback(name) || name.endsWith('.localhost');
  const corsAllowed = (origin: string) => origins.has('*') || origins.has(origin);

  function checkHost(req: IncomingMessage): string {
    const header = req.headers.host;
    const name = header === undefined ? undefined : hostName(header);
    if (name === undefined || !hostAllowed(name)) {
      throw new ApiError(421, `the Host header ${JSON.stringify(header ?? '')} is not a name this server answers to (start it with --allowed-host NAME)`, 'invalid_request_error', null, 'host_not_allowed');
    }
    return header!;
  }

  function checkOrigin(req: IncomingMessage, host: string): string | undefined {
    const origin = req.headers.origin;
    if (origin === undefined) return undefined;
    if (corsAllowed(origin)) return origin;
    if (origin === `http://${host}` || origin === `https://${host}`) return undefined; // same origin: no CORS headers needed
    throw new ApiError(403, `requests from the web origin ${JSON.stringify(origin)} are not allowed (start the server with --cors ORIGIN)`, 'invalid_request_error', null, 'origin_not_allowed');
  }

  const allowHeaders = (res: ServerResponse, origin: string) => {
    res.setHeader('Access-Control-Allow-Origin', origin);
    res.setHeader('Vary', 'Origin');
  };

  return {
    check(req, res) {
      const cors = checkOrigin(req, checkHost(req));
      if (cors !== undefined) allowHeaders(res, cors);
    },
    preflight(req, res) {
      const origin = checkOrigin(req, checkHost(req));
      if (origin === undefined) throw new ApiError(403, 'cross-origin requests are not allowed here (start the server with --cors ORIGIN)', 'invalid_request_error', null, 'origin_not_allowed');
      allowHeaders(res, origin);
      res.writeHead(204, { 'Access-Control-Allow-Methods': CORS_METHODS, 'Access-Control-Allow-Headers': CORS_HEADERS, 'Access-Control-Max-Age': '600' });
      res.end();
    },
  };
}
