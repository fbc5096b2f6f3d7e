/** ByteStringIds: substring -> token id lookups by rolling hash, against a Map of strings. */
import { ByteStringIds } from '../../lib/tokenizers/byte-string-ids';
import { mulberry32 } from '../helpers/rng';

test('every substring of every token resolves like a Map keyed by the bytes (first id of equal tokens)', () => {
  const rand = mulberry32(5);
  // a small alphabet makes many substrings tokens, and some tokens equal
  const tokens = Array.from({ length: 3000 }, () => Uint8Array.from({ length: 1 + Math.floor(rand() * 9) }, () => 97 + Math.floor(rand() * 3)));
  tokens.push(new Uint8Array(0), Uint8Array.from([0, 255, 128]));
  const excluded = new Set([5, 17, 2999]);
  const include = (id: number) => !excluded.has(id) && tokens[id].length > 0;
  const byString = new Map<string, number>();
  tokens.forEach((t, id) => {
    const key = Buffer.from(t).toString('latin1');
    if (include(id) && !byString.has(key)) byString.set(key, id);
  });
  const ids = ByteStringIds.of(tokens, include);
  let hits = 0;
  for (const t of tokens) {
    const prefix = new Uint32Array(t.length + 1);
    const whole = ids.prefixHashes(t, prefix);
    expect(whole).toBe(prefix[t.length]);
    for (let i = 0; i < t.length; i++) {
      for (const [start, end] of [[0, i + 1], [i, t.length]]) {
        const h = start === 0 ? prefix[end] : ids.suffixHash(prefix, start, end);
        const want = byString.get(Buffer.from(t.subarray(start, end)).toString('latin1')) ?? -1;
        expect(ids.find(t, start, end, h)).toBe(want);
        if (want >= 0) hits++;
      }
    }
  }
  expect(hits).toBeGreaterThan(1000); // the lookups really find tokens
});
