/** Starting a weightmap server on an ephemeral loopback port, and pointing the official openai client at it. */
import type { AddressInfo } from 'node:net';
import OpenAI from 'openai';
import { createServer, type ServerOptions, type WeightmapServer } from '../../lib/server';

export interface Running {
  server: WeightmapServer;
  /** http://127.0.0.1:PORT */
  origin: string;
  client(apiKey?: string): OpenAI;
  stop(): Promise<void>;
}

export async function startServer(options: ServerOptions): Promise<Running> {
  const server = createServer(options);
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  const origin = `http://127.0.0.1:${port}`;
  return {
    server,
    origin,
    // No retries: a 429 must reach the test as it is.
    client: (apiKey = options.apiKey ?? 'none') => new OpenAI({ apiKey, baseURL: `${origin}/v1`, maxRetries: 0 }),
    stop: () => server.drain(),
  };
}

/** A raw request (for what the openai client would never send). */
export async function rawRequest(origin: string, path: string, init: RequestInit = {}): Promise<{ status: number; headers: Headers; body: any }> {
  const response = await fetch(`${origin}${path}`, init);
  const text = await response.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: keep the text
  }
  return { status: response.status, headers: response.headers, body };
}

/** Waits (without timing assumptions: the test's timeout bounds it) until `condition` holds. */
export async function until(condition: () => boolean): Promise<void> {
  while (!condition()) await new Promise((resolve) => setTimeout(resolve, 5));
}
