import * as crypto from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WeightFormatError } from '../../lib/base/errors';
import { crc32, crc32Combine, crc32Native, fnv1a32 } from '../../lib/addon/checksums';
import { embdFormat } from '../../lib/formats/containers/embd';
import { f16ToF32, f32ToF16 } from '../../lib/formats/quantization/dtype-convert';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, numel, type ModelWeights } from '../../lib/addon/weights';
import type { BertConfig } from '../../lib/architectures/bert';
import { watchEventLoop } from '../helpers/event-loop';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { blobWeights, corruptCopy, f32Bytes } from './synthetic';

const MODEL = fixture('embd-minilm-tiny', 'model.weights');
const expected = readJson('embd-minilm-tiny', 'expected.json');
const layout = expected.file_layout;
const C = expected.config;

/** Tensor names in the seed order (5 embedding tensors, 16 per layer), with HF [out,in] shapes. */
function seedTensors(): { name: string; shape: number[] }[] {
  const h = C.hidden_size, i = C.intermediate_size;
  const out = [
    { name: 'embeddings.word_embeddings.weight', shape: [C.vocab_size, h] },
    { name: 'embeddings.position_embeddings.weight', shape: [C.max_position_embeddings, h] },
    { name: 'embeddings.token_type_embeddings.weight', shape: [C.type_vocab_size, h] },
    { name: 'embeddings.LayerNorm.weight', shape: [h] },
    { name: 'embeddings.LayerNorm.bias', shape: [h] },
  ];
  for (let l = 0; l < C.num_hidden_layers; l++) {
    const p = `encoder.layer.${l}.`;
    for (const m of ['query', 'key', 'value']) out.push({ name: `${p}attention.self.${m}.weight`, shape: [h, h] }, { name: `${p}attention.self.${m}.bias`, shape: [h] });
    out.push(
      { name: `${p}attention.output.dense.weight`, shape: [h, h] }, { name: `${p}attention.output.dense.bias`, shape: [h] },
      { name: `${p}attention.output.LayerNorm.weight`, shape: [h] }, { name: `${p}attention.output.LayerNorm.bias`, shape: [h] },
      { name: `${p}intermediate.dense.weight`, shape: [i, h] }, { name: `${p}intermediate.dense.bias`, shape: [i] },
      { name: `${p}output.dense.weight`, shape: [h, i] }, { name: `${p}output.dense.bias`, shape: [h] },
      { name: `${p}output.LayerNorm.weight`, shape: [h] }, { name: `${p}output.LayerNorm.bias`, shape: [h] },
    );
  }
  return out;
}

/** Recomputes the three CRCs of an EMBD image in place (after an edit that must not fail on them). */
function resign(b: Buffer): Buffer {
  b.writeUInt32LE(crc32(b.subarray(0, 56)), 56);
  const tdo = b.readUInt32LE(36);
  const tds = Number(b.readBigUInt64LE(40));
  const total = b.length;
  b.writeUInt32LE(crc32(b.subarray(tdo, tdo + tds)), total - 16);
  b.writeUInt32LE(crc32(b.subarray(0, total - 16)), total - 12);
  return b;
}

function bytesOf(w: ModelWeights, name: string): Buffer {
  const t = w.tensors.find((x) => x.name === name)!;
  return t.source.bytes.subarray(t.byteOffset, t.byteOffset + t.byteLength);
}

describe('checksums', () => {
  test('CRC-32 check value and FNV-1a test vectors (FORMATS.md §3.5/§3.6)', async () => {
    expect(crc32(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(await crc32Native(Buffer.from('123456789'))).toBe(0xcbf43926);
    expect(crc32(Buffer.from('56789'), crc32(Buffer.from('1234')))).toBe(0xcbf43926);
    expect(fnv1a32('')).toBe(0x811c9dc5);
    expect(fnv1a32('a')).toBe(0xe40c292c);
    expect(fnv1a32('embeddings.word_embeddings.weight')).toBe(0xdb668d90);
  });

  test('crc32Combine joins the CRCs of two ranges into the CRC of both (random splits, empty sides)', () => {
    const bytes = crypto.randomBytes(70001);
    for (const [a, b] of [[0, 0], [0, 9], [9, 0], [1, 1], [3, 70001 - 3], [65536, 70001 - 65536], [12345, 54321]]) {
      const left = bytes.subarray(0, a);
      const right = bytes.subarray(a, a + b);
      expect(crc32Combine(crc32(left), crc32(right), b)).toBe(crc32(bytes.subarray(0, a + b)));
    }
  });
});

describe('EMBD reader', () => {
  let w: ModelWeights;
  const raw = fs.readFileSync(MODEL);
  beforeAll(async () => {
    w = await embdFormat.read(MODEL);
  });
  afterAll(() => closeWeights(w));

  test('fixture file is the documented one, with the documented header and CRCs', () => {
    expect(raw.length).toBe(expected.files.model.bytes);
    expect(crypto.createHash('sha256').update(raw).digest('hex')).toBe(expected.files.model.sha256);
    expect(raw.subarray(0, 4).toString('latin1')).toBe('EMBD');
    expect([raw.readUInt16LE(4), raw.readUInt16LE(6)]).toEqual(layout.version);
    expect(raw.readUInt32LE(8)).toBe(layout.flags);
    const fields = [12, 16, 20, 24, 28, 32, 36].map((o) => raw.readUInt32LE(o));
    expect(fields).toEqual([layout.metadata_offset, layout.metadata_size, layout.vocab_offset, layout.vocab_size, layout.tensor_index_offset, layout.tensor_index_count, layout.tensor_data_offset]);
    expect(Number(raw.readBigUInt64LE(40))).toBe(layout.tensor_data_size);
    expect(Number(raw.readBigUInt64LE(48))).toBe(layout.total_file_size);
    expect(raw.readUInt32LE(56)).toBe(layout.header_checksum);
    expect(crc32(raw.subarray(0, 56))).toBe(layout.header_checksum);
    const tdo = layout.tensor_data_offset;
    expect(crc32(raw.subarray(tdo, tdo + layout.tensor_data_size))).toBe(layout.data_checksum);
    expect(crc32(raw.subarray(0, raw.length - 16))).toBe(layout.file_checksum);
    expect(raw.readUInt32LE(raw.length - 16)).toBe(layout.data_checksum);
    expect(raw.readUInt32LE(raw.length - 12)).toBe(layout.file_checksum);
    expect(raw.subarray(raw.length - 8, raw.length - 4).toString('latin1')).toBe('DBME');
  });

  test('config from the metadata', () => {
    expect(w.architecture).toBe('bert');
    expect(w.config).toEqual({
      architecture: 'bert',
      hiddenSize: C.hidden_size,
      numLayers: C.num_hidden_layers,
      numHeads: C.num_attention_heads,
      intermediateSize: C.intermediate_size,
      vocabSize: C.vocab_size,
      maxPositionEmbeddings: C.max_position_embeddings,
      typeVocabSize: C.type_vocab_size,
      layerNormEps: C.layer_norm_eps,
      hiddenAct: 'gelu',
      maxSeqLength: C.max_seq_length,
      pooling: 'mean',
      normalize: true,
    });
  });

  test('metadata entries, in file order', () => {
    expect(Object.entries(w.metadata)).toEqual(Object.entries(layout.metadata));
  });

  test('vocabulary: MiniLM vocab.txt in id order, special ids, sentence tokens', () => {
    const tok = w.tokenizer!;
    if (tok.kind !== 'wordpiece') throw new Error('expected a wordpiece vocabulary');
    const vocabTxt = fs.readFileSync(fixture('tokenizers', 'minilm', 'vocab.txt'), 'utf8').split('\n');
    if (vocabTxt[vocabTxt.length - 1] === '') vocabTxt.pop();
    expect(tok.tokens).toEqual(vocabTxt);
    expect(tok.specialIds).toEqual(layout.special_ids);
    for (const s of expected.sentences) s.ids.forEach((id: number, i: number) => expect(tok.tokens[id]).toBe(s.tokens[i]));
  });

  test('tensors: seed order, HF shapes, f32, 64-aligned offsets in the data section', () => {
    let rel = 0;
    const want = seedTensors().map((t) => {
      rel = Math.ceil(rel / 64) * 64;
      const v = { name: t.name, dtype: 'f32', shape: t.shape, byteOffset: layout.tensor_data_offset + rel, byteLength: 4 * numel(t.shape) };
      rel += v.byteLength;
      return v;
    });
    expect(rel).toBe(layout.tensor_data_size);
    expect(want.length).toBe(layout.tensor_index_count);
    expect(w.tensors.map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, byteOffset: t.byteOffset, byteLength: t.byteLength }))).toEqual(want);
  });
});

describe('EMBD checksum verification', () => {
  test('yields to the event loop while it runs the CRCs', async () => {
    const watch = watchEventLoop();
    const w = await embdFormat.read(MODEL);
    expect(watch.stop().ticks).toBeGreaterThan(0);
    closeWeights(w);
  });
});

describe('EMBD writer', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeEach(() => {
    tmp = tempDir('weightmap-embd-');
  });
  afterEach(() => tmp.cleanup());

  test('read(write(read(x))) is byte-identical', async () => {
    const w = await embdFormat.read(MODEL);
    const out = path.join(tmp.dir, 'copy.weights');
    let last = 0;
    await embdFormat.write!(w, out, { onProgress: (p) => (last = p.bytesWritten) });
    expect(fs.readFileSync(out).equals(fs.readFileSync(MODEL))).toBe(true);
    expect(last).toBe(layout.total_file_size);
    const back = await embdFormat.read(out);
    expect(back.config).toEqual(w.config);
    expect(back.metadata).toEqual(w.metadata);
    for (const t of w.tensors) expect(bytesOf(back, t.name).equals(bytesOf(w, t.name))).toBe(true);
    closeWeights(back);
    closeWeights(w);
  });

  test('a BERT from another format (any tensor order, pooler included) converts; f16 on request', async () => {
    const w = await embdFormat.read(MODEL);
    const h = C.hidden_size;
    const pooler = new Float32Array(h * h).map((_, i) => (i % 7) / 8 - 0.25);
    const src = blobWeights(
      tmp.dir,
      'model.safetensors',
      'safetensors',
      w.config,
      [
        { name: 'pooler.dense.weight', dtype: 'f32', shape: [h, h], bytes: f32Bytes(pooler) },
        { name: 'pooler.dense.bias', dtype: 'f32', shape: [h], bytes: f32Bytes(new Float32Array(h)) },
        ...[...w.tensors].reverse().map((t) => ({ name: t.name, dtype: t.dtype, shape: t.shape, bytes: bytesOf(w, t.name) })),
      ],
      { tokenizer: w.tokenizer, misalign: true, metadata: { format: 'pt' } },
    );
    const out = path.join(tmp.dir, 'converted.weights');
    process.env.SOURCE_DATE_EPOCH = '1700000000';
    try {
      await embdFormat.write!(src, out);
    } finally {
      delete process.env.SOURCE_DATE_EPOCH;
    }
    const back = await embdFormat.read(out);
    expect(back.config).toEqual(w.config);
    expect(back.tokenizer).toEqual(w.tokenizer);
    expect(back.tensors.map((t) => t.name)).toEqual([...seedTensors().map((t) => t.name), 'pooler.dense.weight', 'pooler.dense.bias']);
    for (const t of w.tensors) expect(bytesOf(back, t.name).equals(bytesOf(w, t.name))).toBe(true);
    expect(Object.keys(back.metadata).slice(0, 10)).toEqual([
      'model_name', 'model_version', 'embedding_dim', 'vocab_size', 'num_layers', 'num_attention_heads', 'hidden_size', 'intermediate_size', 'max_position_emb', 'created_at',
    ]);
    expect(back.metadata.created_at).toBe('2023-11-14T22:13:20Z');
    expect(back.metadata.format).toBeUndefined();

    const out16 = path.join(tmp.dir, 'half.weights');
    await embdFormat.write!(w, out16, { dtype: 'f16' });
    const half = await embdFormat.read(out16);
    for (const t of half.tensors) {
      expect(t.dtype).toBe('f16');
      expect(t.byteOffset % 64).toBe(0);
      const orig = readF32(w.tensors.find((x) => x.name === t.name)!, 0, numel(t.shape));
      const rounded = orig.map((x) => f16ToF32(f32ToF16(x)));
      expect(Buffer.from(f32Bytes(readF32(t, 0, numel(t.shape)))).equals(Buffer.from(f32Bytes(rounded)))).toBe(true);
    }
    const hb = fs.readFileSync(out16);
    expect(hb.readUInt8(hb.readUInt32LE(28) + 4)).toBe(1); // dtype code f16
    [w, src, back, half].forEach(closeWeights);
  });

  test('a vocabulary that disagrees with the configuration is refused', async () => {
    const w = await embdFormat.read(MODEL);
    const bad = { ...w, config: { ...(w.config as BertConfig), vocabSize: 100 } };
    await expect(embdFormat.write!(bad, path.join(tmp.dir, 'x.weights'))).rejects.toMatchObject({ code: 'CONFIG_MISMATCH' });
    closeWeights(w);
  });
});

describe('EMBD validation', () => {
  let tmp: ReturnType<typeof tempDir>;
  beforeAll(() => {
    tmp = tempDir('weightmap-embd-bad-');
  });
  afterAll(() => tmp.cleanup());

  const TIO = layout.tensor_index_offset;
  const desc = (i: number) => TIO + 32 * i;

  async function codeOf(edit: (b: Buffer) => Buffer | void, verifyChecksums = true): Promise<string> {
    const file = corruptCopy(MODEL, tmp.dir, `c${Math.random().toString(36).slice(2)}.weights`, edit);
    try {
      closeWeights(await embdFormat.read(file, { verifyChecksums }));
      return 'no error';
    } catch (e) {
      expect(e).toBeInstanceOf(WeightFormatError);
      return (e as WeightFormatError).code;
    }
  }
  const signed = (edit: (b: Buffer) => void) => (b: Buffer) => {
    edit(b);
    return resign(b);
  };

  test('wrong magic, version, footer magic; unsupported flags', async () => {
    expect(await codeOf((b) => void b.write('EMBX', 0, 'latin1'))).toBe('BAD_MAGIC');
    expect(await codeOf(signed((b) => void b.writeUInt16LE(2, 4)))).toBe('BAD_VERSION');
    expect(await codeOf(signed((b) => void b.writeUInt16LE(7, 6)))).toBe('no error'); // any minor
    expect(await codeOf(signed((b) => void b.writeUInt32LE(0xf, 8)))).toBe('UNSUPPORTED'); // compressed
    expect(await codeOf(signed((b) => void b.writeUInt32LE(0x17, 8)))).toBe('UNSUPPORTED'); // bit 4
    expect(await codeOf(signed((b) => void b.write('DBMX', b.length - 8, 'latin1')))).toBe('BAD_MAGIC');
  });

  test('truncation at several points and a trailing byte', async () => {
    for (const at of [0, 30, 63, 64, 600, TIO + 10, layout.tensor_data_offset + 1000, layout.total_file_size - 1]) {
      expect([at, await codeOf((b) => b.subarray(0, at))]).toEqual([at, 'TRUNCATED']);
    }
    expect(await codeOf((b) => Buffer.concat([b, Buffer.of(0)]))).toBe('TRAILING_DATA');
  });

  test('flipped bytes under each checksum, and the opt-out', async () => {
    expect(await codeOf((b) => void (b[56] ^= 1))).toBe('CHECKSUM_MISMATCH'); // the header CRC itself
    const inData = layout.tensor_data_offset + 5000;
    expect(await codeOf((b) => void (b[inData] ^= 0x40))).toBe('CHECKSUM_MISMATCH');
    expect(await codeOf((b) => void (b[layout.vocab_offset + 100] ^= 0x01))).toBe('CHECKSUM_MISMATCH'); // file CRC only
    expect(await codeOf((b) => void (b[b.length - 12] ^= 0x01))).toBe('CHECKSUM_MISMATCH');
    expect(await codeOf((b) => void (b[inData] ^= 0x40), false)).toBe('no error');
    // With bit2 clear nothing is verified.
    expect(await codeOf(signed((b) => void b.writeUInt32LE(3, 8)))).toBe('no error');
  });

  test('a header field changed without fixing the header CRC', async () => {
    expect(await codeOf((b) => void b.writeUInt32LE(layout.tensor_index_count + 1, 32))).toBe('CHECKSUM_MISMATCH');
  });

  test('descriptors: oversized dim, out-of-bounds offset, overlap, misalignment, dtype, ndim, hash, name', async () => {
    expect(await codeOf(signed((b) => void b.writeUInt32LE(30523, desc(0) + 8)))).toBe('SHAPE_MISMATCH');
    expect(await codeOf(signed((b) => void b.writeUInt32LE(0xffffffff, desc(1) + 12)))).toBe('SHAPE_MISMATCH');
    expect(await codeOf(signed((b) => void b.writeBigUInt64LE(BigInt(layout.tensor_data_size), desc(36) + 24)))).toBe('OUT_OF_BOUNDS');
    expect(await codeOf(signed((b) => void b.writeBigUInt64LE(1n << 40n, desc(3) + 24)))).toBe('OUT_OF_BOUNDS');
    expect(await codeOf(signed((b) => void b.writeBigUInt64LE(b.readBigUInt64LE(desc(3) + 24), desc(4) + 24)))).toBe('OVERLAP');
    expect(await codeOf(signed((b) => void b.writeBigUInt64LE(b.readBigUInt64LE(desc(4) + 24) + 4n, desc(4) + 24)))).toBe('BAD_HEADER'); // not 64-aligned
    expect(await codeOf(signed((b) => void b.writeUInt8(9, desc(2) + 4)))).toBe('BAD_DTYPE');
    expect(await codeOf(signed((b) => void b.writeUInt8(3, desc(2) + 4)))).toBe('BAD_DTYPE'); // i32 weights
    expect(await codeOf(signed((b) => void b.writeUInt8(5, desc(2) + 5)))).toBe('BAD_HEADER'); // ndim 5
    expect(await codeOf(signed((b) => void (b[desc(0)] ^= 1)))).toBe('CHECKSUM_MISMATCH'); // FNV hash
    const strings = TIO + 32 * layout.tensor_index_count;
    const rename = (b: Buffer) => {
      b.write('E', strings, 'latin1'); // "Embeddings.word_embeddings.weight"
      b.writeUInt32LE(fnv1a32(b.subarray(strings, strings + 33).toString('latin1')), desc(0));
    };
    expect(await codeOf(signed(rename))).toBe('BAD_NAME');
    expect(await codeOf(signed((b) => void (b[strings] = 0xff)))).toBe('BAD_NAME'); // not UTF-8
  });

  test('a duplicate tensor name', async () => {
    // encoder.layer.1.attention.self.query.weight renamed to its layer-0 twin (same length), hash fixed.
    const strings = TIO + 32 * layout.tensor_index_count;
    const duplicate = (b: Buffer) => {
      const i = b.indexOf(Buffer.from('encoder.layer.1.attention.self.query.weight'), strings);
      b.write('0', i + 'encoder.layer.'.length, 'latin1');
      b.writeUInt32LE(fnv1a32('encoder.layer.0.attention.self.query.weight'), desc(21));
    };
    expect(await codeOf(signed(duplicate))).toBe('BAD_NAME');
  });

  test('metadata: either total_size reading, bad numbers, inconsistent values', async () => {
    const mo = layout.metadata_offset;
    expect(await codeOf(signed((b) => void b.writeUInt32LE(layout.metadata_size, mo + 4)))).toBe('no error');
    expect(await codeOf(signed((b) => void b.writeUInt32LE(layout.metadata_size + 1, mo + 4)))).toBe('BAD_HEADER');
    const valueAt = (b: Buffer, key: string) => b.indexOf(Buffer.from(key), mo) + key.length;
    expect(await codeOf(signed((b) => void b.write('4', valueAt(b, 'embedding_dim'), 'latin1')))).toBe('CONFIG_MISMATCH'); // 42 != 32
    expect(await codeOf(signed((b) => void b.write('x', valueAt(b, 'num_layers'), 'latin1')))).toBe('CONFIG_MISMATCH');
    expect(await codeOf(signed((b) => void b.write('3', valueAt(b, 'num_layers'), 'latin1')))).toBe('MISSING_TENSOR'); // 3 layers, 2 stored
    expect(await codeOf(signed((b) => void b.write('1', valueAt(b, 'intermediate_size'), 'latin1')))).toBe('SHAPE_MISMATCH'); // 14
    expect(await codeOf(signed((b) => void b.write('k', valueAt(b, 'model_name') - 1, 'latin1')))).toBe('BAD_HEADER'); // model_namk: a required key missing
  });

  test('vocabulary: tolerant special-block placement, bounds', async () => {
    const vo = layout.vocab_offset;
    const relative = (b: Buffer) => void b.writeUInt32LE(b.readUInt32LE(vo + 8) - vo, vo + 8);
    expect(await codeOf(signed(relative))).toBe('no error');
    const blockFirst = (b: Buffer) => {
      const total = b.readUInt32LE(vo + 4);
      const entries = Buffer.from(b.subarray(vo + 12, vo + 12 + total));
      const block = Buffer.from(b.subarray(vo + 12 + total, vo + 12 + total + 20));
      block.copy(b, vo + 12);
      entries.copy(b, vo + 32);
      b.writeUInt32LE(vo + 12, vo + 8);
    };
    const file = corruptCopy(MODEL, tmp.dir, 'block-first.weights', signed(blockFirst));
    const moved = await embdFormat.read(file);
    const orig = await embdFormat.read(MODEL);
    expect(moved.tokenizer).toEqual(orig.tokenizer);
    [moved, orig].forEach(closeWeights);
    expect(await codeOf(signed((b) => void b.writeUInt32LE(0x7fffffff, vo + 8)))).toBe('OUT_OF_BOUNDS');
    expect(await codeOf(signed((b) => void b.writeUInt32LE(vo + 100, vo + 8)))).toBe('OUT_OF_BOUNDS'); // inside the entries
    expect(await codeOf(signed((b) => void b.writeUInt32LE(30522, b.readUInt32LE(vo + 8) + 4)))).toBe('CONFIG_MISMATCH'); // unk id
    expect(await codeOf(signed((b) => void b.writeUInt32LE(30521, vo)))).toBe('BAD_HEADER'); // token_count one short
    expect(await codeOf(signed((b) => void b.writeUInt32LE(0xffffffff, vo)))).toBe('BAD_HEADER'); // absurd token_count
  });

  test('sections out of bounds or overlapping', async () => {
    expect(await codeOf(signed((b) => void b.writeUInt32LE(0xfffffff0, 12)))).toBe('OUT_OF_BOUNDS'); // metadata_offset
    expect(await codeOf(signed((b) => void b.writeUInt32LE(40, 12)))).toBe('OVERLAP'); // metadata inside the header
  });
});
