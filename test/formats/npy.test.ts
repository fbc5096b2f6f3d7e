/**
 * .npy: every fixture file of the stories260K tree, files numpy itself wrote (v1.0/2.0/3.0,
 * Fortran order, 1-byte types, a scalar; embedded below as base64, produced with numpy 2.4),
 * the header bytes numpy.save writes, round trips and corrupted copies.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { encodeNpyHeader, npyFormat, parseNpyHeader } from '../../lib/formats/containers/npy';
import { readF32, transposedF32Chunks } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { tempDir } from '../helpers/fixtures';
import { bytesOf, expectFormatError, listFiles, STORIES_TREE, storiesBinTensor } from './userfmt-helpers';

/** Files written by numpy (np.save / numpy.lib.format.write_array). */
const NUMPY = {
  v1_f4_2x3: 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsIDMpLCB9ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAACAPwAAAEAAAEBAAACAQAAAoEA=',
  v2_f2_3: 'k05VTVBZAgB0AAAAeydkZXNjcic6ICc8ZjInLCAnZm9ydHJhbl9vcmRlcic6IEZhbHNlLCAnc2hhcGUnOiAoMywpLCB9ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAPgDAADQ=',
  v3_i8_2x2: 'k05VTVBZAwB0AAAAeydkZXNjcic6ICc8aTgnLCAnZm9ydHJhbl9vcmRlcic6IEZhbHNlLCAnc2hhcGUnOiAoMiwgMiksIH0gICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoBAAAAAAAAAP7/////////AwAAAAAAAAAAAAAAAAEAAA==',
  fortran_f4_2x3: 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBUcnVlLCAnc2hhcGUnOiAoMiwgMyksIH0gICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAABAQAAAgD8AAIBAAAAAQAAAoEA=',
  fortran_f4_2x3x2: 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBUcnVlLCAnc2hhcGUnOiAoMiwgMywgMiksIH0gICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAADAQAAAAEAAAABBAACAQAAAIEEAAIA/AADgQAAAQEAAABBBAACgQAAAMEE=',
  b1_4: 'k05VTVBZAQB2AHsnZGVzY3InOiAnfGIxJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDQsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoBAAEB',
  u1_3: 'k05VTVBZAQB2AHsnZGVzY3InOiAnfHUxJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDMsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoBAv8=',
  i4_scalar: 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGk0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKCksIH0gICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAr5////',
  be_f4_2: 'k05VTVBZAQB2AHsnZGVzY3InOiAnPmY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo/gAAAQAAAAA==',
  c8_2: 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGM4JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAIA/AAAAAAAAAEAAAAAA',
  struct: 'k05VTVBZAQB2AHsnZGVzY3InOiBbKCdhJywgJzxmNCcpXSwgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDIsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAAAAAA==',
};

/** numpy.lib.format.write_array_header_1_0 output for (descr, shape). */
const NUMPY_HEADERS: [ 'f32' | 'f16', number[], string][] = [
  ['f32', [], 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKCksIH0gICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo='],
  ['f32', [5], 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDUsKSwgfSAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo='],
  ['f32', [512, 64], 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDUxMiwgNjQpLCB9ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo='],
  ['f16', [1, 2, 3], 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGYyJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDEsIDIsIDMpLCB9ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo='],
  ['f16', [12345678901], 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGYyJywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDEyMzQ1Njc4OTAxLCksIH0gICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo='],
  ['f32', [0, 7], 'k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBGYWxzZSwgJ3NoYXBlJzogKDAsIDcpLCB9ICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAo='],
];

const tmp = tempDir('weightmap-npy-');
afterAll(() => tmp.cleanup());
const opened: ModelWeights[] = [];
afterEach(() => opened.splice(0).forEach(closeWeights));

let counter = 0;
function file(bytes: Buffer | string, name = `case-${counter++}.npy`): string {
  const p = path.join(tmp.dir, name);
  fs.writeFileSync(p, typeof bytes === 'string' ? Buffer.from(bytes, 'base64') : bytes);
  return p;
}

async function read(p: string): Promise<ModelWeights> {
  const w = await npyFormat.read(p);
  opened.push(w);
  return w;
}

/** A v1.0 file with a hand-written header dict (padded like numpy) and `data`. */
function handMade(dict: string, data: Buffer, version = 1): Buffer {
  const lenBytes = version === 1 ? 2 : 4;
  const bare = dict.length + 1;
  const total = bare + ((64 - ((6 + 2 + lenBytes + bare) % 64)) % 64);
  const head = Buffer.alloc(8 + lenBytes + total, 0x20);
  Buffer.from([0x93, 0x4e, 0x55, 0x4d, 0x50, 0x59, version, 0]).copy(head);
  if (version === 1) head.writeUInt16LE(total, 8);
  else head.writeUInt32LE(total, 8);
  head.write(dict, 8 + lenBytes, 'latin1');
  head[head.length - 1] = 0x0a;
  return Buffer.concat([head, data]);
}

describe('npy reader', () => {
  test('every .npy of the stories260K sepweight tree reads as float32 v1.0 with a 128-byte preamble', async () => {
    const files = listFiles(STORIES_TREE).filter((f) => f.endsWith('.npy'));
    expect(files).toHaveLength(1 + 5 * 9 + 2);
    for (const f of files) {
      const w = await read(path.join(STORIES_TREE, f));
      const t = w.tensors[0];
      expect(w.architecture).toBe('unknown');
      expect(w.format).toBe('npy');
      expect(t.name).toBe(path.basename(f, '.npy'));
      expect(t.dtype).toBe('f32');
      expect(t.byteOffset).toBe(128);
      expect(t.byteLength).toBe(t.shape.reduce((a, b) => a * b, 4));
      expect(t.transposed).toBeUndefined();
      expect(w.metadata).toEqual({ npyVersion: '1.0', descr: '<f4', fortranOrder: false });
    }
    const embed = await read(path.join(STORIES_TREE, 'start', 'embed_tokens.weight.npy'));
    expect(embed.tensors[0].shape).toEqual([512, 64]);
    // Same bytes as the llama2.c checkpoint's embedding table.
    expect(bytesOf(embed.tensors[0]).equals(storiesBinTensor('model.embed_tokens.weight'))).toBe(true);
    const down = await read(path.join(STORIES_TREE, 'mid', '3', 'mlp.down_proj.weight.npy'));
    expect(down.tensors[0].shape).toEqual([64, 172]);
    expect(bytesOf(down.tensors[0]).equals(storiesBinTensor('model.layers.3.mlp.down_proj.weight'))).toBe(true);
  });

  test('numpy v1.0, v2.0 and v3.0 files', async () => {
    const v1 = (await read(file(NUMPY.v1_f4_2x3))).tensors[0];
    expect([v1.dtype, v1.shape]).toEqual(['f32', [2, 3]]);
    expect(Array.from(readF32(v1, 0, 6))).toEqual([0, 1, 2, 3, 4, 5]);

    const v2 = await read(file(NUMPY.v2_f2_3));
    expect(v2.metadata.npyVersion).toBe('2.0');
    expect([v2.tensors[0].dtype, v2.tensors[0].shape, v2.tensors[0].byteOffset]).toEqual(['f16', [3], 128]);
    expect(Array.from(readF32(v2.tensors[0], 0, 3))).toEqual([1.5, -2, 0.25]);

    const v3 = await read(file(NUMPY.v3_i8_2x2));
    expect(v3.metadata.npyVersion).toBe('3.0');
    const t = v3.tensors[0];
    expect([t.dtype, t.shape]).toEqual(['i64', [2, 2]]);
    const b = bytesOf(t);
    expect([0, 1, 2, 3].map((i) => b.readBigInt64LE(8 * i))).toEqual([1n, -2n, 3n, 2n ** 40n]);
  });

  test('1-byte types, booleans and a 0-d scalar', async () => {
    const bool = (await read(file(NUMPY.b1_4))).tensors[0];
    expect([bool.dtype, bool.shape, Array.from(bytesOf(bool))]).toEqual(['bool', [4], [1, 0, 1, 1]]);
    const u8 = (await read(file(NUMPY.u1_3))).tensors[0];
    expect([u8.dtype, Array.from(bytesOf(u8))]).toEqual(['u8', [1, 2, 255]]);
    const scalar = (await read(file(NUMPY.i4_scalar))).tensors[0];
    expect([scalar.dtype, scalar.shape, bytesOf(scalar).readInt32LE(0)]).toEqual(['i32', [], -7]);
  });

  test('a Fortran-order matrix is a transposed view of the reversed shape', async () => {
    const t = (await read(file(NUMPY.fortran_f4_2x3))).tensors[0];
    expect(t.shape).toEqual([3, 2]);
    expect(t.transposed).toBe(true);
    // Column-major storage of [[0,1,2],[3,4,5]].
    expect(Array.from(readF32(t, 0, 6))).toEqual([0, 3, 1, 4, 2, 5]);
    expect([...transposedF32Chunks(t)].flatMap((c) => Array.from(c))).toEqual([0, 1, 2, 3, 4, 5]);
  });

  test('Python 2 long-integer shapes are accepted', async () => {
    const data = Buffer.from(new Float32Array([1, 2, 3, 4, 5, 6]).buffer);
    const t = (await read(file(handMade("{'descr': '<f4', 'fortran_order': False, 'shape': (2L, 3L), }", data)))).tensors[0];
    expect(t.shape).toEqual([2, 3]);
  });

  test.each([
    ['Fortran order of rank 3', NUMPY.fortran_f4_2x3x2, 'UNSUPPORTED'],
    ['big-endian floats', NUMPY.be_f4_2, 'UNSUPPORTED'],
    ['complex numbers', NUMPY.c8_2, 'BAD_DTYPE'],
    ['a structured dtype', NUMPY.struct, 'UNSUPPORTED'],
  ] as const)('rejects %s', async (_what, b64, code) => {
    await expectFormatError(npyFormat.read(file(b64)), code);
  });

  const f4x2 = Buffer.from(new Float32Array([1, 2]).buffer);
  test.each([
    ['a missing key', "{'descr': '<f4', 'shape': (2,), }", 'BAD_HEADER'],
    ['an extra key', "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), 'x': 1, }", 'BAD_HEADER'],
    ['a repeated key', "{'descr': '<f4', 'descr': '<f4', 'fortran_order': False, 'shape': (2,), }", 'BAD_HEADER'],
    ['a list shape', "{'descr': '<f4', 'fortran_order': False, 'shape': [2], }", 'BAD_HEADER'],
    ['a non-bool fortran_order', "{'descr': '<f4', 'fortran_order': 0, 'shape': (2,), }", 'BAD_HEADER'],
    ['code instead of a literal', "{'descr': __import__('os'), 'fortran_order': False, 'shape': (2,), }", 'BAD_HEADER'],
    ['an unterminated string', "{'descr': '<f4, 'fortran_order': False, 'shape': (2,), }", 'BAD_HEADER'],
    ['a byte order on a multi-byte type that is not <', "{'descr': '|f4', 'fortran_order': False, 'shape': (2,), }", 'BAD_DTYPE'],
    ['an unknown type', "{'descr': '<q4', 'fortran_order': False, 'shape': (2,), }", 'BAD_DTYPE'],
    ['a shape that needs more data', "{'descr': '<f4', 'fortran_order': False, 'shape': (3,), }", 'TRUNCATED'],
    ['a shape that leaves data over', "{'descr': '<f4', 'fortran_order': False, 'shape': (1,), }", 'TRAILING_DATA'],
  ] as const)('rejects a header with %s', async (_what, dict, code) => {
    await expectFormatError(npyFormat.read(file(handMade(dict, f4x2))), code);
  });

  test('rejects corrupted preambles', async () => {
    const good = Buffer.from(NUMPY.v1_f4_2x3, 'base64');
    const copy = (edit: (b: Buffer) => Buffer | void) => {
      const b = Buffer.from(good);
      return file(edit(b) ?? b);
    };
    await expectFormatError(npyFormat.read(copy((b) => void (b[1] = 0x4d))), 'BAD_MAGIC');
    await expectFormatError(npyFormat.read(copy((b) => void (b[6] = 4))), 'BAD_VERSION');
    await expectFormatError(npyFormat.read(copy((b) => void (b[7] = 1))), 'BAD_VERSION');
    await expectFormatError(npyFormat.read(copy((b) => void b.writeUInt16LE(0xfff0, 8))), 'TRUNCATED');
    await expectFormatError(npyFormat.read(copy((b) => void (b[127] = 0x20))), 'BAD_HEADER'); // no final newline
    await expectFormatError(npyFormat.read(copy((b) => b.subarray(0, 5))), 'TRUNCATED');
    await expectFormatError(npyFormat.read(copy((b) => b.subarray(0, b.length - 1))), 'TRUNCATED');
    await expectFormatError(npyFormat.read(copy((b) => Buffer.concat([b, Buffer.alloc(1)]))), 'TRAILING_DATA');
    // v2.0's u32 header length: absurd values are refused before anything is decoded.
    const v2 = Buffer.from(NUMPY.v2_f2_3, 'base64');
    v2.writeUInt32LE(0xfffffff0, 8);
    await expectFormatError(npyFormat.read(file(v2)), 'BAD_HEADER');
  });

  test('detect() recognises the magic only', () => {
    const probe = (head: Buffer) => ({ path: 'x.npy', isDirectory: false, head, entries: [] });
    expect(npyFormat.detect(probe(Buffer.from(NUMPY.v1_f4_2x3, 'base64').subarray(0, 64)))).toBe(true);
    expect(npyFormat.detect(probe(Buffer.from('PK\x03\x04 not npy')))).toBe(false);
  });
});

describe('npy writer', () => {
  test.each(NUMPY_HEADERS)('the %s header for shape %j is byte-identical to numpy.save', (dtype, shape, b64) => {
    expect(encodeNpyHeader(dtype, shape).equals(Buffer.from(b64, 'base64'))).toBe(true);
  });

  test('rewriting a fixture .npy gives the identical file', async () => {
    for (const f of ['start/embed_tokens.weight.npy', 'mid/2/self_attn.k_proj.weight.npy', 'end/norm.weight.npy']) {
      const src = path.join(STORIES_TREE, f);
      const out = path.join(tmp.dir, `rewrite-${counter++}.npy`);
      await npyFormat.write!(await read(src), out);
      expect(fs.readFileSync(out).equals(fs.readFileSync(src))).toBe(true);
    }
  });

  test('a Fortran-order input is written in C order, exactly as numpy saves the same array', async () => {
    const out = path.join(tmp.dir, 'from-fortran.npy');
    await npyFormat.write!(await read(file(NUMPY.fortran_f4_2x3)), out);
    expect(fs.readFileSync(out).equals(Buffer.from(NUMPY.v1_f4_2x3, 'base64'))).toBe(true);
  });

  test('float16 output: a numpy-style <f2 header and values rounded to half precision', async () => {
    const src = path.join(STORIES_TREE, 'mid', '0', 'self_attn.q_proj.weight.npy');
    const out = path.join(tmp.dir, 'q16.npy');
    const w = await read(src);
    await npyFormat.write!(w, out, { dtype: 'f16' });
    const back = await read(out);
    const header = parseNpyHeader(back.sources[0].bytes, out);
    expect([header.descr, header.shape, header.dataOffset]).toEqual(['<f2', [64, 64], 128]);
    expect(fs.statSync(out).size).toBe(128 + 64 * 64 * 2);
    const a = readF32(w.tensors[0], 0, 4096);
    const b = readF32(back.tensors[0], 0, 4096);
    for (let i = 0; i < a.length; i++) {
      // binary16 keeps 11 significant bits: relative error <= 2^-11 (these weights are normal halves).
      expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(Math.abs(a[i]) * 2 ** -11 + 2 ** -24);
    }
    // Writing the f16 file again (f16 source, default dtype) is byte-identical.
    const again = path.join(tmp.dir, 'q16-again.npy');
    await npyFormat.write!(back, again);
    expect(fs.readFileSync(again).equals(fs.readFileSync(out))).toBe(true);
  });

  test('more than one tensor cannot go into one .npy', async () => {
    const w = await read(path.join(STORIES_TREE, 'end', 'norm.weight.npy'));
    await expect(npyFormat.write!({ ...w, tensors: [w.tensors[0], w.tensors[0]] }, path.join(tmp.dir, 'two.npy'))).rejects.toThrow(/one tensor/);
  });
});
