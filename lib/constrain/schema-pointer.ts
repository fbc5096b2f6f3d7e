/**
 * `$ref` inside one schema document: `#` (the root), `#/$defs/Name`, `#/definitions/Name` and any
 * other JSON pointer into the document (RFC 6901, `~0` `~1` and percent escapes decoded). References
 * to other documents (a URL, `other.json#...`) or by `$id`/anchor are an UnsupportedError.
 */
import { UnsupportedError } from '../base/errors';

export function resolvePointer(root: unknown, ref: unknown, where: string): unknown {
  if (typeof ref !== 'string') throw new UnsupportedError(`${where}: $ref must be a string`);
  if (!ref.startsWith('#')) throw new UnsupportedError(`${where}: $ref ${JSON.stringify(ref)} points outside the schema; only local references (#/$defs/..., #/definitions/..., #) are supported`);
  let pointer: string;
  try {
    pointer = decodeURIComponent(ref.slice(1));
  } catch {
    throw new UnsupportedError(`${where}: $ref ${JSON.stringify(ref)} is not a valid URI fragment`);
  }
  if (pointer !== '' && !pointer.startsWith('/')) throw new UnsupportedError(`${where}: $ref ${JSON.stringify(ref)} names an anchor; only JSON pointers (#/...) are supported`);
  let at: unknown = root;
  for (const raw of pointer === '' ? [] : pointer.slice(1).split('/')) {
    const token = raw.replace(/~1/g, '/').replace(/~0/g, '~');
    if (typeof at !== 'object' || at === null || !Object.prototype.hasOwnProperty.call(at, token)) {
      throw new UnsupportedError(`${where}: $ref ${JSON.stringify(ref)} points to nothing in the schema`);
    }
    at = (at as Record<string, unknown>)[token];
  }
  return at;
}
