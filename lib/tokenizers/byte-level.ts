/**
 * GPT-2's `bytes_to_unicode`: every byte gets a printable stand-in character so that byte strings
 * can live in a JSON vocabulary. Printable Latin-1 bytes map to themselves; the other 68 bytes
 * (0-32, 127-160, 173) map to U+0100.. in byte order.
 */

/** byte -> stand-in character code. */
export const BYTE_TO_CHAR: Uint16Array = (() => {
  const table = new Uint16Array(256);
  let next = 256;
  for (let b = 0; b < 256; b++) {
    const printable = (b >= 33 && b <= 126) || (b >= 161 && b <= 172) || (b >= 174 && b <= 255);
    table[b] = printable ? b : next++;
  }
  return table;
})();

/** stand-in character code -> byte, -1 for characters outside the table (index = char code < 324). */
export const CHAR_TO_BYTE: Int16Array = (() => {
  const table = new Int16Array(324).fill(-1);
  for (let b = 0; b < 256; b++) table[BYTE_TO_CHAR[b]] = b;
  return table;
})();

const charScratch = new Uint16Array(1024);

/** Raw bytes -> the byte-level string used as a vocabulary key (`20 74 68 65` -> `Ġthe`). */
export function bytesToByteLevel(bytes: Uint8Array): string {
  if (bytes.length > charScratch.length) {
    let s = '';
    for (let i = 0; i < bytes.length; i++) s += String.fromCharCode(BYTE_TO_CHAR[bytes[i]]);
    return s;
  }
  // One string built from a char-code array, not one concatenation per byte (vocabularies call
  // this for every one of their 150k tokens at load).
  for (let i = 0; i < bytes.length; i++) charScratch[i] = BYTE_TO_CHAR[bytes[i]];
  return String.fromCharCode.apply(null, charScratch.subarray(0, bytes.length) as unknown as number[]);
}

/**
 * A vocabulary string -> the bytes it stands for, as HF's ByteLevel decoder does it: when every
 * character is a stand-in, their bytes; otherwise (an added token such as `<|im_end|>` with a
 * character outside the table) the string's own UTF-8.
 */
export function byteLevelToBytes(token: string): Uint8Array {
  const out = new Uint8Array(token.length);
  for (let i = 0; i < token.length; i++) {
    const c = token.charCodeAt(i);
    const b = c < CHAR_TO_BYTE.length ? CHAR_TO_BYTE[c] : -1;
    if (b < 0) return Buffer.from(token, 'utf8');
    out[i] = b;
  }
  return out;
}
