/**
 * The built-in chat page (docs/serving.md, "The chat page"): GET / and its script and style, the
 * static files of lib/server/chat-page/ (packed as they are: package.json "files"). They carry no
 * data, so they are served without the API key (a browser's navigation cannot send a bearer
 * token); every call the page makes goes to /v1 with the key the user types. The Content-Security-
 * Policy lets the page run only its own script and talk only to this origin.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { packageRoot } from '../addon/native';
import { ApiError } from './api-error';
import type { RouteContext } from './context';

/** Where the page's files are, in the repository and in the installed package alike. */
export const CHAT_PAGE_DIR = path.join(packageRoot, 'lib', 'server', 'chat-page');

/** Each URL path the page answers: its file and content type. */
export const CHAT_PAGE_FILES: Readonly<Record<string, { file: string; type: string }>> = {
  '/': { file: 'index.html', type: 'text/html; charset=utf-8' },
  '/ui/chat.js': { file: 'chat.js', type: 'text/javascript; charset=utf-8' },
  '/ui/chat.css': { file: 'chat.css', type: 'text/css; charset=utf-8' },
};

/** Scripts and styles from this origin only (no inline script, no other host), requests to this origin only, no framing. */
export const CHAT_PAGE_CSP = "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'";

const HEADERS = {
  'Content-Security-Policy': CHAT_PAGE_CSP,
  'X-Content-Type-Options': 'nosniff',
  'X-Frame-Options': 'DENY',
  'Referrer-Policy': 'no-referrer',
  'Cache-Control': 'no-cache',
};

const cache = new Map<string, Promise<Buffer>>();

function read(file: string): Promise<Buffer> {
  let bytes = cache.get(file);
  if (!bytes) {
    bytes = fs.promises.readFile(path.join(CHAT_PAGE_DIR, file));
    bytes.catch(() => cache.delete(file)); // a failed read is tried again by the next request
    cache.set(file, bytes);
  }
  return bytes;
}

/** Answers `path` (one of CHAT_PAGE_FILES) with its file. */
export async function sendChatPage(ctx: RouteContext, method: string, urlPath: string): Promise<void> {
  const entry = CHAT_PAGE_FILES[urlPath];
  if (method !== 'GET' && method !== 'HEAD') throw new ApiError(405, `use GET ${urlPath}`, 'invalid_request_error');
  let bytes: Buffer;
  try {
    bytes = await read(entry.file);
  } catch (error) {
    throw new ApiError(500, `the chat page's ${entry.file} cannot be read from ${CHAT_PAGE_DIR}: ${(error as Error).message}`, 'server_error');
  }
  ctx.res.writeHead(200, { 'Content-Type': entry.type, 'Content-Length': bytes.length, ...HEADERS });
  ctx.res.end(bytes);
}
