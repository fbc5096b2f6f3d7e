/**
 * The native Q8_0 weight quantizer (native/convert/quantize_q8.cc) against the JavaScript
 * reference `quantizeQ8` and against closed forms: f32, f16 and bf16 sources, ties at .5 (round
 * half to even), zero groups, NaN and Inf, subnormal scales, group sizes that do and do not divide
 * the decode block, and q8Chunks over a file in several chunks.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { mapFile, type MappedSource } from '../../lib/addon/mapping';
import { native } from '../../lib/addon/native';
import { f32ToBf16, f32ToF16 } from '../../lib/formats/quantization/dtype-convert';
import { q8Chunks, quantizeQ8 } from '../../lib/formats/quantization/q8-quantize';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import type { TensorView } from '../../lib/addon/weights';
import { tempDir } from '../helpers/fixtures';

const tmp = tempDir('weightmap-q8-native-');
const sources: MappedSource[] = [];
afterAll(() => {
  for (const s of sources) s.close();
  tmp.cleanup();
});
let counter = 0;

/** xorshift32 in [0, 1). */
function rng(seed: number): () => number {
  let s = seed >>> 0 || 1;
  return () => {
    s ^= s << 13;
    s >>>= 0;
    s ^= s >>> 17;
    s ^= s << 5;
    s >>>= 0;
    return s / 4294967296;
  };
}

/**
 * Float32 test data in groups of `group`: random normals of mixed magnitudes, groups built to hit
 * exact ties (max = 127·2^e, the others (k + 0.5)·2^e), all-zero groups, NaN / Inf / -0 groups and
 * groups of subnormals.
 */
function testValues(group: number, groups: number, seed: number): Float32Array {
  const next = rng(seed);
  const out = new Float32Array(group * groups);
  for (let g = 0; g < groups; g++) {
    const base = g * group;
    const kind = g % 7;
    for (let i = 0; i < group; i++) {
      let v: number;
      if (kind === 0) v = 0;
      else if (kind === 1) {
        const e = 2 ** (Math.floor(next() * 20) - 14);
        v = i === 0 ? 127 * e : (Math.floor(next() * 253) - 126 + 0.5) * e;
        if (next() < 0.5) v = -v;
      } else if (kind === 2) v = [NaN, Infinity, -0, -Infinity, 1.5][i % 5] ?? 0;
      else if (kind === 3) v = (next() - 0.5) * 2 ** -140; // subnormal: the scale is a subnormal too
      else if (kind === 4) v = (next() - 0.5) * 2 ** (next() * 40 - 20);
      else v = (next() - 0.5) * 0.1;
      out[base + i] = v;
    }
    if (kind === 2 && group > 5) out[base + 5] = NaN; // a group whose max ignores NaN
  }
  return out;
}

/** The values stored as `dtype` in a file of their own, and a view over them. */
function storedView(values: Float32Array, dtype: 'f32' | 'f16' | 'bf16', shape: number[]): TensorView {
  let bytes: Uint8Array;
  if (dtype === 'f32') bytes = new Uint8Array(values.buffer.slice(0));
  else {
    const half = new Uint16Array(values.length);
    for (let i = 0; i < values.length; i++) half[i] = dtype === 'f16' ? f32ToF16(values[i]) : f32ToBf16(values[i]);
    bytes = new Uint8Array(half.buffer);
  }
  // An odd offset: the native side reads unaligned data.
  const file = path.join(tmp.dir, `values-${counter++}.bin`);
  fs.writeFileSync(file, Buffer.concat([Buffer.from([7, 7, 7]), Buffer.from(bytes)]));
  const source = mapFile(file);
  sources.push(source);
  return { name: `t${counter}`, dtype, shape, source, byteOffset: 3, byteLength: bytes.length };
}

async function nativeQ8(view: TensorView, group: number): Promise<{ q: Int8Array; s: Float32Array }> {
  const n = view.shape.reduce((a, b) => a * b, 1);
  const q = new Int8Array(n);
  const s = new Float32Array(n / group);
  await native().quantizeQ8Weights(view.source.file, view.byteOffset, view.dtype as 'f32', n, group, q, s);
  return { q, s };
}

function reference(view: TensorView, group: number): { q: Int8Array; s: Float32Array } {
  const n = view.shape.reduce((a, b) => a * b, 1);
  const q = new Int8Array(n);
  const s = new Float32Array(n / group);
  quantizeQ8(readF32(view, 0, n), group, q, s);
  return { q, s };
}

function firstMismatch(a: ArrayLike<number>, b: ArrayLike<number>): number {
  for (let i = 0; i < a.length; i++) if (!Object.is(a[i], b[i])) return i;
  return a.length === b.length ? -1 : a.length;
}

describe('native Q8_0 = the JavaScript reference, bit for bit', () => {
  test.each([
    ['f32', 32],
    ['f32', 64],
    ['f32', 7],
    ['f32', 12288],
    ['f16', 32],
    ['f16', 128],
    ['bf16', 64],
    ['bf16', 3],
  ] as const)('%s, group %d', async (dtype, group) => {
    const groups = Math.max(7, Math.ceil(40000 / group));
    const view = storedView(testValues(group, groups, group * 31 + dtype.length), dtype, [groups, group]);
    const mine = await nativeQ8(view, group);
    const ref = reference(view, group);
    expect(firstMismatch(mine.s, ref.s)).toBe(-1);
    expect(firstMismatch(mine.q, ref.q)).toBe(-1);
  });

  test('closed forms: ties round to even, zero and NaN groups, Inf', async () => {
    // Group 0: scale 2 (max 254); w = k·2 + 1 sits exactly halfway between k and k+1.
    // Group 1: zeros. Group 2: NaN, Inf, 1: scale Inf, NaN -> 0, Inf / Inf -> 0, 1 / Inf -> 0.
    const values = Float32Array.from([254, 1, 3, 5, -1, -3, 0.5 * 2, 251, 0, 0, 0, 0, 0, 0, 0, 0, NaN, Infinity, 1, 0, 0, 0, 0, 0]);
    const view = storedView(values, 'f32', [3, 8]);
    const { q, s } = await nativeQ8(view, 8);
    expect(Array.from(s)).toEqual([2, 0, Infinity]);
    // 1/2 = 0.5 -> 0, 3/2 = 1.5 -> 2, 5/2 = 2.5 -> 2, -0.5 -> -0 -> 0, -1.5 -> -2, 1/2 -> 0, 125.5 -> 126.
    expect(Array.from(q)).toEqual([127, 0, 2, 2, 0, -2, 0, 126, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0]);
  });

  test('q8Chunks: several chunks in order, the same as one call; a transposed view takes the reference path', async () => {
    const group = 32;
    const values = testValues(group, 3000, 99);
    const view = storedView(values, 'bf16', [3000, group]);
    const whole = reference(view, group);
    const q = new Int8Array(values.length);
    const s = new Float32Array(values.length / group);
    let at = 0;
    let chunks = 0;
    for await (const c of q8Chunks(view, group, 10000)) {
      q.set(c.q, at);
      s.set(c.scales, at / group);
      at += c.q.length;
      chunks++;
    }
    expect([at, chunks]).toEqual([values.length, Math.ceil(values.length / 9984)]);
    expect(firstMismatch(q, whole.q)).toBe(-1);
    expect(firstMismatch(s, whole.s)).toBe(-1);

    // Stored [in,out] = [32, 3000]: quantized in canonical [3000, 32] order.
    const stored = new Float32Array(values.length);
    for (let r = 0; r < 3000; r++) for (let c = 0; c < group; c++) stored[c * 3000 + r] = values[r * group + c];
    const transposed = { ...storedView(stored, 'f32', [group, 3000]), transposed: true };
    const parts: Int8Array[] = [];
    for await (const c of q8Chunks(transposed, group)) parts.push(c.q);
    const ref32 = reference(storedView(values, 'f32', [3000, group]), group);
    expect(firstMismatch(Int8Array.from(parts.flatMap((p) => Array.from(p))), ref32.q)).toBe(-1);
  });

  test('bad arguments are TypeError / RangeError before any work', async () => {
    const view = storedView(new Float32Array(64), 'f32', [64]);
    const q = native().quantizeQ8Weights;
    const file = view.source.file;
    // Native errors come from the addon's realm: compare names and codes, not constructors.
    const thrown = (fn: () => unknown) => {
      try {
        fn();
      } catch (e) {
        return { name: (e as Error).name, code: (e as { code?: string }).code, message: (e as Error).message };
      }
      return undefined;
    };
    expect(thrown(() => q(file, 3, 'f32', 60, 32, new Int8Array(60), new Float32Array(1)))).toMatchObject({ name: 'RangeError', code: 'ERR_OUT_OF_RANGE', message: expect.stringMatching(/multiple of group/) });
    expect(thrown(() => q(file, 3, 'f32', 64, 32, new Int8Array(63), new Float32Array(2)))).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/63 elements/) });
    expect(thrown(() => q(file, 8, 'f32', 64, 32, new Int8Array(64), new Float32Array(2)))).toMatchObject({ name: 'RangeError', message: expect.stringMatching(/outside the mapping/) });
    expect(thrown(() => q(file, 3, 'f8' as 'f32', 64, 32, new Int8Array(64), new Float32Array(2)))).toMatchObject({ name: 'TypeError', code: 'ERR_INVALID_ARG_TYPE' });
    expect(thrown(() => q({} as typeof file, 3, 'f32', 64, 32, new Int8Array(64), new Float32Array(2)))).toMatchObject({ name: 'TypeError' });
    expect(thrown(() => q(file, 3, 'f32', 64, 32, new Float32Array(64) as unknown as Int8Array, new Float32Array(2)))).toMatchObject({ name: 'TypeError' });
    await expect(q(file, 3, 'f32', 64, 32, new Int8Array(64), new Float32Array(2))).resolves.toBeUndefined();
  });
});
