/**
 * native skipRecords (native/scan/records.cc), the walk the GGUF and ajc1 readers run over a
 * vocabulary before they trust it: where it stops, how many records it passed and the longest
 * payload, for records built here with known lengths, and each way a record can fail to fit.
 */
import { native } from '../../lib/addon/native';

/** GGUF strings: u64 length (little-endian), then the bytes. */
function u64Records(lengths: number[]): Buffer {
  return Buffer.concat(lengths.map((n) => {
    const head = Buffer.alloc(8);
    head.writeUInt32LE(n, 0);
    return Buffer.concat([head, Buffer.alloc(n, 0x61)]);
  }));
}

/** ajc1 entries: f32 score, u32 length, then the bytes. */
function scoredRecords(lengths: number[]): Buffer {
  return Buffer.concat(lengths.map((n, i) => {
    const head = Buffer.alloc(8);
    head.writeFloatLE(-i, 0);
    head.writeUInt32LE(n, 4);
    return Buffer.concat([head, Buffer.alloc(n, 0x62)]);
  }));
}

const LENGTHS = [3, 0, 17, 1, 255, 2];
const sum = (xs: number[]) => xs.reduce((a, b) => a + b, 0);
/** Where record k starts: k headers of 8 bytes and the payloads before it. */
const startOf = (k: number) => 8 * k + sum(LENGTHS.slice(0, k));

describe.each([
  ['u64-length', u64Records],
  ['scored', scoredRecords],
] as const)('%s records', (layout, make) => {
  const bytes = make(LENGTHS);

  test('walks all of them, from the start or from a record boundary, up to count', () => {
    expect(native().skipRecords(bytes, bytes.length, 0, 100, layout)).toEqual([bytes.length, 6, 255]);
    expect(native().skipRecords(bytes, bytes.length, startOf(2), 100, layout)).toEqual([bytes.length, 4, 255]);
    expect(native().skipRecords(bytes, bytes.length, 0, 3, layout)).toEqual([startOf(3), 3, 17]);
    expect(native().skipRecords(bytes, bytes.length, 0, 0, layout)).toEqual([0, 0, 0]);
  });

  test('stops before a record whose payload or header runs past end', () => {
    expect(native().skipRecords(bytes, bytes.length - 1, 0, 100, layout)).toEqual([startOf(5), 5, 255]);
    expect(native().skipRecords(bytes, startOf(5) + 7, 0, 100, layout)).toEqual([startOf(5), 5, 255]);
    expect(native().skipRecords(bytes, startOf(4) + 8 + 254, 0, 100, layout)).toEqual([startOf(4), 4, 17]);
  });

  test('a length field past 2^31 is a record that does not fit, not a negative step', () => {
    const big = Buffer.from(bytes);
    big.writeUInt32LE(0xfffffff0, startOf(1) + (layout === 'scored' ? 4 : 0));
    expect(native().skipRecords(big, big.length, 0, 100, layout)).toEqual([startOf(1), 1, 3]);
  });

  test('bad arguments are typed errors', () => {
    expect(() => native().skipRecords(bytes, bytes.length + 1, 0, 1, layout)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
    expect(() => native().skipRecords(new Uint16Array(4) as unknown as Uint8Array, 8, 0, 1, layout)).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
    expect(() => native().skipRecords(bytes, bytes.length, -1, 1, layout)).toThrow(expect.objectContaining({ code: 'ERR_OUT_OF_RANGE' }));
  });
});

test('a u64 length with a nonzero high half stops the walk; the scored layout reads no high half', () => {
  const bytes = u64Records(LENGTHS);
  bytes.writeUInt8(1, startOf(3) + 4);
  expect(native().skipRecords(bytes, bytes.length, 0, 100, 'u64-length')).toEqual([startOf(3), 3, 17]);
  expect(() => native().skipRecords(bytes, bytes.length, 0, 1, 'u32' as 'scored')).toThrow(expect.objectContaining({ code: 'ERR_INVALID_ARG_TYPE' }));
});
