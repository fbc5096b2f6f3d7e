/** The API key check: `Authorization: Bearer KEY`, compared in constant time. */
import { createHash, timingSafeEqual } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import { ApiError } from './api-error';

const digest = (text: string) => createHash('sha256').update(text, 'utf8').digest();

/**
 * A checker for `apiKey` (undefined: every request passes). The digests have equal lengths, so
 * timingSafeEqual compares them in time independent of where the keys differ or how long they are.
 */
export function apiKeyChecker(apiKey: string | undefined): (req: IncomingMessage) => void {
  if (apiKey === undefined) return () => {};
  if (typeof apiKey !== 'string' || apiKey.length === 0) throw new TypeError('apiKey must be a non-empty string');
  const expected = digest(apiKey);
  return (req) => {
    const header = req.headers.authorization ?? '';
    const match = /^Bearer\s+(.+)$/i.exec(header);
    const given = digest(match ? match[1].trim() : '');
    if (!timingSafeEqual(given, expected) || !match) {
      throw new ApiError(401, 'missing or invalid API key (send Authorization: Bearer KEY)', 'invalid_request_error', null, 'invalid_api_key', {
        'WWW-Authenticate': 'Bearer',
      });
    }
  };
}
