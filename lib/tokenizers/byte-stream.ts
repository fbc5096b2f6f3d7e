/** Stream decoding for tokenizers whose tokens are byte strings. */
import type { StreamDecoder } from './types';
import { Utf8Stream } from './utf8';

/** `bytesOf(id)` gives a token's bytes, or undefined when it decodes to nothing (skipped, unknown). */
export function byteStreamDecoder(bytesOf: (id: number) => Uint8Array | undefined): StreamDecoder {
  const stream = new Utf8Stream();
  return {
    push(id: number): string {
      const bytes = bytesOf(id);
      return bytes === undefined ? '' : stream.push(bytes);
    },
    flush(): string {
      return stream.flush();
    },
  };
}
