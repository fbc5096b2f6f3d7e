/** Whether a host name or address is this machine's loopback (what listens there by default). */
import * as net from 'node:net';

export function isLoopback(host: string): boolean {
  if (host === 'localhost') return true;
  if (net.isIPv4(host)) return host.startsWith('127.');
  return net.isIPv6(host) && (host === '::1' || host === '0:0:0:0:0:0:0:1');
}
