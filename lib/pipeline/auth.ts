/**
 * Who may reach and call a stage. A stage listens on loopback unless it has TLS; with TLS on
 * another address it also needs a caller check: mutual TLS (client certificates signed by --tls-ca,
 * optionally only the names in allowClients) and/or a bearer token compared in constant time.
 */
import { createHash, timingSafeEqual } from 'node:crypto';
import type * as grpc from '@grpc/grpc-js';
import { grpcModule } from './grpc-modules';
import { rangeError } from '../base/errors';
import { isLoopback } from '../base/loopback';

/** PEM files for TLS: a certificate and its key, and the CA that signs the other side. */
export interface TlsFiles {
  /** PEM certificate chain and private key of this side. */
  cert?: Buffer;
  key?: Buffer;
  /** PEM CA that signs the other side's certificate (on a stage: enables mutual TLS). */
  ca?: Buffer;
}

export interface StageSecurity {
  /** Callers must send `authorization: Bearer <token>`. */
  token?: string;
  tls?: TlsFiles;
  /** With mutual TLS: the client certificate's subject CN must be one of these. */
  allowClients?: readonly string[];
}

/** The environment variable a stage and a coordinator read the token from when none is given. */
export const TOKEN_ENV = 'WEIGHTMAP_STAGE_TOKEN';

/** "host:port", "[v6]:port"; RangeError otherwise. */
export function parseAddress(address: string): { host: string; port: number } {
  const m = /^(?:\[([0-9a-fA-F:.]+)\]|([^:\s[\]]+)):(\d{1,5})$/.exec(address);
  const port = m ? Number(m[3]) : NaN;
  if (!m || port > 65535) throw rangeError(`address ${JSON.stringify(address)} must be host:port (port 0-65535; [v6]:port for IPv6)`);
  return { host: m[1] ?? m[2], port };
}

export { isLoopback };

/** Why a stage may not listen on `host` with `security`, or undefined when it may. */
export function listenRefusal(host: string, security: StageSecurity): string | undefined {
  if (isLoopback(host)) return undefined;
  if (!security.tls?.cert || !security.tls.key) {
    return `refusing to listen on ${host} without TLS: pass --tls-cert and --tls-key (and --tls-ca for mutual TLS), or listen on 127.0.0.1`;
  }
  if (!security.tls.ca && !security.token) {
    return `refusing to listen on ${host} with no caller check: pass --tls-ca (mutual TLS) or --token`;
  }
  return undefined;
}

export function serverCredentials(security: StageSecurity): grpc.ServerCredentials {
  const tls = security.tls;
  if (!tls?.cert || !tls.key) return grpcModule().ServerCredentials.createInsecure();
  return grpcModule().ServerCredentials.createSsl(tls.ca ?? null, [{ cert_chain: tls.cert, private_key: tls.key }], tls.ca !== undefined);
}

const digest = (s: string) => createHash('sha256').update(s).digest();

/** Equal-length digests compared in constant time: the time taken says nothing about the token. */
export function tokensEqual(given: string, expected: string): boolean {
  return timingSafeEqual(digest(given), digest(expected));
}

type AuthorizedCall = { metadata: grpc.Metadata; getAuthContext(): { sslPeerCertificate?: { subject?: { CN?: string | string[] } } } | null };

/** undefined when the caller may call, else the status to end the call with. */
export function refuseCaller(call: AuthorizedCall, security: StageSecurity): grpc.StatusObject | undefined {
  const deny = (code: grpc.status, details: string): grpc.StatusObject => ({ code, details, metadata: new (grpcModule().Metadata)() });
  if (security.token !== undefined) {
    const header = call.metadata.get('authorization')[0];
    const given = typeof header === 'string' && header.startsWith('Bearer ') ? header.slice(7) : undefined;
    if (given === undefined || !tokensEqual(given, security.token)) return deny(grpcModule().status.UNAUTHENTICATED, 'a valid bearer token is required');
  }
  if (security.allowClients && security.allowClients.length > 0) {
    const cn = call.getAuthContext()?.sslPeerCertificate?.subject?.CN;
    const names = Array.isArray(cn) ? cn : cn === undefined ? [] : [cn];
    if (!names.some((n) => security.allowClients!.includes(n))) return deny(grpcModule().status.PERMISSION_DENIED, 'this client certificate may not call the stage');
  }
  return undefined;
}

/** What a coordinator presents to a stage. */
export interface ClientSecurity {
  token?: string;
  /** Trust `ca` for the stage's certificate; present `cert`/`key` for mutual TLS. */
  tls?: TlsFiles & { serverName?: string };
}

export function channelCredentials(security: ClientSecurity): grpc.ChannelCredentials {
  const tls = security.tls;
  if (!tls) return grpcModule().credentials.createInsecure();
  return grpcModule().credentials.createSsl(tls.ca ?? null, tls.key ?? null, tls.cert ?? null);
}

export function callMetadata(security: ClientSecurity): grpc.Metadata {
  const metadata = new (grpcModule().Metadata)();
  if (security.token !== undefined) metadata.set('authorization', `Bearer ${security.token}`);
  return metadata;
}
