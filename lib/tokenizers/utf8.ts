/** UTF-8 helpers shared by the tokenizers. */

/** Rust's `String::from_utf8_lossy`: every maximal invalid subsequence becomes one U+FFFD; a BOM is kept. */
export function decodeUtf8Lossy(bytes: Uint8Array): string {
  return new TextDecoder('utf-8', { fatal: false, ignoreBOM: true }).decode(bytes);
}

/** Concatenates byte chunks. */
export function concatBytes(chunks: readonly Uint8Array[]): Uint8Array {
  let total = 0;
  for (const c of chunks) total += c.length;
  const out = new Uint8Array(total);
  let at = 0;
  for (const c of chunks) {
    out.set(c, at);
    at += c.length;
  }
  return out;
}

/**
 * Feeds bytes in pieces and yields only complete characters; the concatenation of everything it
 * yields equals `decodeUtf8Lossy` of all bytes at once.
 */
export class Utf8Stream {
  private decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });

  push(bytes: Uint8Array): string {
    return bytes.length === 0 ? '' : this.decoder.decode(bytes, { stream: true });
  }

  flush(): string {
    const rest = this.decoder.decode();
    this.decoder = new TextDecoder('utf-8', { fatal: false, ignoreBOM: true });
    return rest;
  }
}

/**
 * Writes the UTF-8 of `s` into `out` (grown when needed) and returns [buffer, length]. Lone
 * surrogates become U+FFFD, as in Buffer.from(s, 'utf8').
 */
export function encodeUtf8Into(s: string, out: Uint8Array): [Uint8Array, number] {
  if (out.length < s.length * 3) out = new Uint8Array(s.length * 3 + 16);
  let n = 0;
  for (let i = 0; i < s.length; i++) {
    let c = s.charCodeAt(i);
    if (c < 0x80) {
      out[n++] = c;
    } else if (c < 0x800) {
      out[n++] = 0xc0 | (c >> 6);
      out[n++] = 0x80 | (c & 63);
    } else {
      if (c >= 0xd800 && c <= 0xdfff) {
        const d = i + 1 < s.length ? s.charCodeAt(i + 1) : 0;
        if (c <= 0xdbff && d >= 0xdc00 && d <= 0xdfff) {
          const cp = 0x10000 + ((c - 0xd800) << 10) + (d - 0xdc00);
          i++;
          out[n++] = 0xf0 | (cp >> 18);
          out[n++] = 0x80 | ((cp >> 12) & 63);
          out[n++] = 0x80 | ((cp >> 6) & 63);
          out[n++] = 0x80 | (cp & 63);
          continue;
        }
        c = 0xfffd;
      }
      out[n++] = 0xe0 | (c >> 12);
      out[n++] = 0x80 | ((c >> 6) & 63);
      out[n++] = 0x80 | (c & 63);
    }
  }
  return [out, n];
}
