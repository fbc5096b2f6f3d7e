/**
 * The pure pieces of the pipeline: layer ranges and coverage, the model hash, tensor checks (every
 * bound, before any allocation in proportion to a received number), addresses and the listen
 * policy, the token comparison, and the replay buffer.
 */
import { PipelineError } from '../../lib/base/errors';
import { isLoopback, listenRefusal, parseAddress, tokensEqual } from '../../lib/pipeline/auth';
import { checkCoverage, modelHash, parseLayerRange, sepweightParts } from '../../lib/pipeline/layers';
import { RowBuffer } from '../../lib/pipeline/row-buffer';
import type { TensorMessage } from '../../lib/pipeline/schema';
import { readTensor, TensorError, tensorMessage, type TensorBounds } from '../../lib/pipeline/tensor';
import type { DecoderConfig } from '../../lib/architectures/decoder';

describe('layer ranges', () => {
  it('parses inclusive ranges and maps them to sepweight part specs', () => {
    expect(parseLayerRange('0-13')).toEqual({ first: 0, last: 13 });
    expect(parseLayerRange('7')).toEqual({ first: 7, last: 7 });
    for (const bad of ['', '3-1', '-1', 'a-b', '0 13', '1x-2', '01-2', '0-1-2']) expect(() => parseLayerRange(bad)).toThrow(RangeError);
    expect(sepweightParts({ first: 0, last: 13 }, 28)).toBe('b 0-14');
    expect(sepweightParts({ first: 14, last: 27 }, 28)).toBe('14-28 e');
    expect(sepweightParts({ first: 0, last: 27 }, 28)).toBe('b 0-28 e');
    expect(sepweightParts({ first: 5, last: 9 }, 28)).toBe('5-10');
    expect(() => sepweightParts({ first: 20, last: 28 }, 28)).toThrow(/past the model's last layer 27/);
  });

  it('accepts only ranges that cover the model once, in order', () => {
    const r = (s: string) => s.split(',').map(parseLayerRange);
    expect(() => checkCoverage(r('0-13,14-27'), 28)).not.toThrow();
    expect(() => checkCoverage(r('0-27'), 28)).not.toThrow();
    const cases: [string, RegExp][] = [
      ['0-12,14-27', /layers 13-13 are served by no stage/],
      ['0-13,13-27', /layer 13 is served twice/],
      ['1-27', /layers 0-0 are served by no stage/],
      ['0-13', /layers 14-27 are served by no stage/],
      ['0-28', /the model has only 28 layers/],
    ];
    for (const [ranges, message] of cases) {
      let thrown: unknown;
      try {
        checkCoverage(r(ranges), 28);
      } catch (e) {
        thrown = e;
      }
      expect(thrown).toBeInstanceOf(PipelineError);
      expect(thrown).toMatchObject({ code: 'ERR_WEIGHTMAP_PIPELINE_CONFIG', message: expect.stringMatching(message) });
    }
  });

  it('hashes the config whatever its key order, and tells configs apart', () => {
    const config = {
      architecture: 'llama', hiddenSize: 64, intermediateSize: 172, numLayers: 5, numHeads: 8, numKvHeads: 4, headDim: 8, vocabSize: 512,
      maxSeqLen: 512, rmsNormEps: 1e-5, ropeTheta: 10000, ropePairing: 'half', tieWordEmbeddings: true, qkNorm: false,
    } as DecoderConfig;
    const reversed = Object.fromEntries(Object.entries(config).reverse()) as unknown as DecoderConfig;
    expect(modelHash(reversed)).toBe(modelHash(config));
    expect(modelHash(config)).toMatch(/^[0-9a-f]{64}$/);
    expect(modelHash({ ...config, ropeTheta: 10001 })).not.toBe(modelHash(config));
    expect(modelHash({ ...config, numLayers: 6 })).not.toBe(modelHash(config));
  });
});

describe('tensor messages', () => {
  const bounds: TensorBounds = { sessionId: 's', dtypes: ['F32', 'F16'], width: 4, maxRows: 8, minPosition: 0, maxPosition: 3, endLimit: 8 };
  const good = tensorMessage('s', 2, Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]), 4);

  it('round-trips f32 rows and int32 ids, and widens f16', () => {
    expect(readTensor(good, bounds)).toEqual({ position: 2, rows: 2, values: Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]) });
    const ids = tensorMessage('s', 0, Int32Array.from([5, -1, 7]));
    expect(ids.shape).toEqual([3]);
    expect(readTensor(ids, { ...bounds, dtypes: ['I32'], width: undefined }).values).toEqual(Int32Array.from([5, -1, 7]));
    const half = Buffer.from(Uint16Array.from([0x3c00, 0xc000, 0x3800, 0x0000]).buffer); // 1, -2, 0.5, 0
    const read = readTensor({ ...good, shape: [1, 4], dtype: 'F16', data: half }, bounds);
    expect(read.values).toEqual(Float32Array.from([1, -2, 0.5, 0]));
  });

  it('reads an unaligned payload', () => {
    const bytes = Buffer.alloc(33);
    Buffer.from(Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]).buffer).copy(bytes, 1);
    expect(readTensor({ ...good, data: bytes.subarray(1) }, bounds).values).toEqual(Float32Array.from([1, 2, 3, 4, 5, 6, 7, 8]));
  });

  it('refuses every field out of bounds with a TensorError', () => {
    const broken: [Partial<TensorMessage>, RegExp][] = [
      [{ sessionId: 't' }, /not this stream's/],
      [{ dtype: 'I32' }, /dtype I32 is not one of F32, F16/],
      [{ dtype: 'DTYPE_UNSPECIFIED' }, /dtype DTYPE_UNSPECIFIED/],
      [{ shape: [2] }, /not of rank 2/],
      [{ shape: [2, 4, 1] }, /not of rank 2/],
      [{ shape: [2, -4] }, /not of rank 2/],
      [{ shape: [2.5, 4] }, /not of rank 2/],
      [{ shape: [0, 4] }, /0 rows outside \[1, 8\]/],
      [{ shape: [9, 4] }, /9 rows outside/],
      [{ shape: [2 ** 32 - 1, 4] }, /rows outside/],
      [{ shape: [2, 5] }, /rows of 5 elements, expected 4/],
      [{ position: 4 }, /position 4 outside \[0, 3\]/],
      [{ position: -1 }, /position -1 outside/],
      [{ position: 2, shape: [7, 4], data: Buffer.alloc(112) }, /pass the limit of 8/],
      [{ data: Buffer.alloc(31) }, /31 data bytes, expected 32/],
      [{ data: Buffer.alloc(33) }, /33 data bytes, expected 32/],
      [{ shape: [1, 4], dtype: 'F16', data: Buffer.alloc(16) }, /16 data bytes, expected 8/],
    ];
    for (const [patch, message] of broken) {
      const msg = { ...good, ...patch } as TensorMessage;
      expect(() => readTensor(msg, bounds)).toThrow(TensorError);
      expect(() => readTensor(msg, bounds)).toThrow(message);
    }
  });
});

describe('addresses and the listen policy', () => {
  it('parses host:port and [v6]:port', () => {
    expect(parseAddress('127.0.0.1:0')).toEqual({ host: '127.0.0.1', port: 0 });
    expect(parseAddress('[::1]:50051')).toEqual({ host: '::1', port: 50051 });
    expect(parseAddress('stage-1.local:443')).toEqual({ host: 'stage-1.local', port: 443 });
    for (const bad of ['127.0.0.1', ':80', '127.0.0.1:65536', '::1:80', 'a b:1', '127.0.0.1:-1']) expect(() => parseAddress(bad)).toThrow(RangeError);
  });

  it('allows plaintext on loopback only, and TLS elsewhere only with a caller check', () => {
    for (const host of ['127.0.0.1', '127.3.2.1', '::1', 'localhost']) expect(isLoopback(host)).toBe(true);
    for (const host of ['0.0.0.0', '10.0.0.1', '::', 'example.com', '128.0.0.1']) expect(isLoopback(host)).toBe(false);
    const cert = Buffer.from('c');
    const key = Buffer.from('k');
    expect(listenRefusal('127.0.0.1', {})).toBeUndefined();
    expect(listenRefusal('0.0.0.0', {})).toMatch(/without TLS/);
    expect(listenRefusal('0.0.0.0', { token: 't' })).toMatch(/without TLS/);
    expect(listenRefusal('0.0.0.0', { tls: { cert, key } })).toMatch(/no caller check/);
    expect(listenRefusal('0.0.0.0', { tls: { cert, key }, token: 't' })).toBeUndefined();
    expect(listenRefusal('0.0.0.0', { tls: { cert, key, ca: cert } })).toBeUndefined();
  });

  it('compares tokens of any length', () => {
    expect(tokensEqual('secret', 'secret')).toBe(true);
    expect(tokensEqual('secret', 'secreT')).toBe(false);
    expect(tokensEqual('', 'secret')).toBe(false);
    expect(tokensEqual('secret-but-longer', 'secret')).toBe(false);
  });
});

describe('the replay buffer', () => {
  it('grows past its first capacity, cuts back and refuses what does not fit', () => {
    const buffer = new RowBuffer<Float32Array>((n) => new Float32Array(n), 3, 100);
    const rows = (from: number, count: number) => Float32Array.from({ length: count * 3 }, (_, i) => from * 3 + i);
    buffer.append(rows(0, 50));
    buffer.append(rows(50, 40)); // past the first 64 rows
    expect(buffer.rows).toBe(90);
    expect(buffer.view(0, 90)).toEqual(rows(0, 90));
    buffer.truncate(10);
    buffer.append(rows(10, 5));
    expect(buffer.view(8, 15)).toEqual(rows(8, 7));
    expect(() => buffer.append(rows(0, 86))).toThrow(RangeError);
    expect(() => buffer.append(new Float32Array(4))).toThrow(RangeError);
    expect(buffer.rows).toBe(15);
  });
});
