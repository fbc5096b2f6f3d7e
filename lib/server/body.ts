/** Reading a request's JSON body, with a size limit. */
import type { IncomingMessage } from 'node:http';
import { ApiError, invalidRequest } from './api-error';

/**
 * The parsed JSON body of `req`: 413 past `maxBytes` (the connection's remaining bytes are not
 * read), 415 for a missing content type or one other than JSON (a web page can send neither JSON
 * nor one without it to another origin without a preflight), 400 for text that is not JSON. A body a framework
 * already parsed (Express's express.json() sets req.body) is used as it is.
 */
export async function readJsonBody(req: IncomingMessage, maxBytes: number): Promise<unknown> {
  const parsed = (req as IncomingMessage & { body?: unknown }).body;
  if (parsed !== undefined && typeof parsed === 'object') return parsed;
  const type = req.headers['content-type'];
  if (type === undefined || !/^application\/(.+\+)?json\b/i.test(type)) {
    throw new ApiError(415, `Content-Type must be application/json, got ${type === undefined ? 'none' : type}`, 'invalid_request_error');
  }
  const declared = Number(req.headers['content-length']);
  if (Number.isFinite(declared) && declared > maxBytes) throw tooLarge(maxBytes);
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of req) {
    size += (chunk as Buffer).length;
    if (size > maxBytes) throw tooLarge(maxBytes);
    chunks.push(chunk as Buffer);
  }
  const text = Buffer.concat(chunks).toString('utf8');
  if (text.trim() === '') throw invalidRequest('the request body is empty; send a JSON object');
  try {
    return JSON.parse(text);
  } catch (error) {
    throw invalidRequest(`the request body is not valid JSON: ${(error as Error).message}`);
  }
}

function tooLarge(maxBytes: number): ApiError {
  return new ApiError(413, `the request body is larger than ${maxBytes} bytes`, 'invalid_request_error', null, 'request_too_large', { Connection: 'close' });
}
