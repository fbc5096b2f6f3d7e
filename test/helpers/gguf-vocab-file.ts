/**
 * A GGUF v3 file holding only key/values (no tensors), as llama.cpp's models/ggml-vocab-*.gguf
 * are: written here, byte by byte from the GGUF specification, so that a test's vocabulary file
 * does not come from the writer under test.
 */
import * as fs from 'node:fs';

export type VocabKv =
  | [key: string, type: 'string', value: string]
  | [key: string, type: 'u32', value: number]
  | [key: string, type: 'bool', value: boolean]
  | [key: string, type: 'array<string>', value: readonly string[]]
  | [key: string, type: 'array<f32>', value: Float32Array]
  | [key: string, type: 'array<i32>', value: Int32Array]
  | [key: string, type: 'array<u8>', value: Uint8Array];

const u32 = (n: number) => {
  const b = Buffer.alloc(4);
  b.writeUInt32LE(n);
  return b;
};
const u64 = (n: number) => {
  const b = Buffer.alloc(8);
  b.writeBigUInt64LE(BigInt(n));
  return b;
};
const str = (s: string) => {
  const bytes = Buffer.from(s, 'utf8');
  return Buffer.concat([u64(bytes.length), bytes]);
};
const typed = (a: Float32Array | Int32Array | Uint8Array) => Buffer.from(a.buffer, a.byteOffset, a.byteLength);

function value([, type, v]: VocabKv): Buffer {
  switch (type) {
    case 'string': return Buffer.concat([u32(8), str(v)]);
    case 'u32': return Buffer.concat([u32(4), u32(v)]);
    case 'bool': return Buffer.concat([u32(7), Buffer.of(v ? 1 : 0)]);
    case 'array<string>': return Buffer.concat([u32(9), u32(8), u64(v.length), ...v.map(str)]);
    case 'array<f32>': return Buffer.concat([u32(9), u32(6), u64(v.length), typed(v)]);
    case 'array<i32>': return Buffer.concat([u32(9), u32(5), u64(v.length), typed(v)]);
    case 'array<u8>': return Buffer.concat([u32(9), u32(0), u64(v.length), typed(v)]);
  }
}

export function writeVocabGguf(path: string, kvs: VocabKv[]): void {
  const parts: Buffer[] = [Buffer.from('GGUF'), u32(3), u64(0), u64(kvs.length)];
  for (const kv of kvs) parts.push(str(kv[0]), value(kv));
  const body = Buffer.concat(parts);
  fs.writeFileSync(path, Buffer.concat([body, Buffer.alloc((32 - (body.length % 32)) % 32)]));
}
