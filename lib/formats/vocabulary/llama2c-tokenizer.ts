/** llama2.c's tokenizer.bin, read and written (the checkpoint reader and writer are in llama2c.ts). */
import * as fs from 'node:fs';
import type { TokenizerData } from '../../addon/weights';
import { ByteCursor, fail } from '../containers/bytes';

/** llama2.c's fixed special ids. */
export const LLAMA2C_BOS = 1;
export const LLAMA2C_EOS = 2;

/**
 * Reads a llama2.c tokenizer.bin: i32 max_token_length, then per token f32 score, i32 length,
 * bytes. Reads exactly `vocabSize` entries when given (like run.c; later bytes are ignored),
 * else to the end of the file.
 */
export function readLlama2cTokenizer(path: string, vocabSize?: number): TokenizerData {
  const bytes = fs.readFileSync(path);
  const cur = new ByteCursor(bytes, path);
  const maxTokenLength = cur.i32('max_token_length');
  if (maxTokenLength <= 0 || maxTokenLength > 1 << 16) {
    fail('BAD_HEADER', 'max_token_length is out of range', { path, offset: 0, expected: '1..65536', found: maxTokenLength });
  }
  const tokens: Uint8Array[] = [];
  const scores: number[] = [];
  while (vocabSize === undefined ? cur.remaining > 0 : tokens.length < vocabSize) {
    scores.push(cur.f32(`the score of token ${tokens.length}`));
    const at = cur.offset;
    const len = cur.i32(`the length of token ${tokens.length}`);
    if (len < 0 || len > maxTokenLength) {
      fail('BAD_HEADER', `token ${tokens.length} is longer than max_token_length`, { path, offset: at, expected: `0..${maxTokenLength}`, found: len });
    }
    tokens.push(cur.bytesView(len, `the bytes of token ${tokens.length}`));
  }
  return { kind: 'scored', style: 'llama2c', tokens, scores: Float32Array.from(scores), maxTokenLength, bosId: LLAMA2C_BOS, eosId: LLAMA2C_EOS };
}

/** The bytes of a llama2.c tokenizer.bin for scored token data. */
export function encodeLlama2cTokenizer(t: Extract<TokenizerData, { kind: 'scored' }>): Buffer {
  let size = 4;
  for (const tok of t.tokens) size += 8 + tok.length;
  const out = Buffer.alloc(size);
  out.writeInt32LE(t.maxTokenLength, 0);
  let at = 4;
  t.tokens.forEach((tok, i) => {
    out.writeFloatLE(t.scores[i], at);
    out.writeInt32LE(tok.length, at + 4);
    out.set(tok, at + 8);
    at += 8 + tok.length;
  });
  return out;
}
