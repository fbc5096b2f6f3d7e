/**
 * GGUF: the stories260K copy (metadata as expected.json lists it, tensors, vocabulary against
 * tok512.bin), llama.cpp's vocabulary-only files (token counts and models as tokenizers/README.md
 * states; the BERT one against MiniLM's vocab.txt), and files built here from the GGUF spec to
 * cover every metadata type, v2, alignment, F16/BF16/Q8_0, unsupported types, Qwen3 and each
 * error code.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { dequantize } from '../../lib/formats/quantization/dequantize';
import { GGML_TYPES } from '../../lib/formats/containers/gguf';
import { ggufFormat } from '../../lib/formats/containers/gguf-format';
import { readLlama2cTokenizer } from '../../lib/formats/vocabulary/llama2c-tokenizer';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, findTensor, type ModelWeights, type TokenizerData } from '../../lib/addon/weights';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { fixture, readJson, tempDir } from '../helpers/fixtures';
import { bytesOf, expectFormatError, STORIES_GGUF, TOK512, writeEdited } from './userfmt-helpers';

const tmp = tempDir('weightmap-gguf-');
afterAll(() => tmp.cleanup());
const opened: ModelWeights[] = [];
afterEach(() => opened.splice(0).forEach(closeWeights));
async function read(p: string): Promise<ModelWeights> {
  const w = await ggufFormat.read(p);
  opened.push(w);
  return w;
}
let counter = 0;
function save(bytes: Buffer): string {
  const p = path.join(tmp.dir, `case-${counter++}.gguf`);
  fs.writeFileSync(p, bytes);
  return p;
}

// ---------------------------------------------------------------------------------------------
// A GGUF writer written from the spec (ggml docs/gguf.md), for synthetic files.

const T = { U8: 0, I8: 1, U16: 2, I16: 3, U32: 4, I32: 5, F32: 6, BOOL: 7, STR: 8, ARR: 9, U64: 10, I64: 11, F64: 12 } as const;
interface Arr {
  elem: number;
  items: unknown[];
}
type Kv = [string | Buffer, number, unknown];
interface TensorSpec {
  name: string;
  /** innermost first */
  dims: number[];
  type: number;
  /** Relative offset; default: packed in order, aligned. */
  offset?: number;
  data?: Buffer;
}

function str(s: string | Buffer): Buffer {
  const b = typeof s === 'string' ? Buffer.from(s, 'utf8') : s;
  const len = Buffer.alloc(8);
  len.writeBigUInt64LE(BigInt(b.length));
  return Buffer.concat([len, b]);
}

function value(type: number, v: unknown): Buffer {
  const b = Buffer.alloc(8);
  switch (type) {
    case T.U8: b.writeUInt8(v as number); return b.subarray(0, 1);
    case T.I8: b.writeInt8(v as number); return b.subarray(0, 1);
    case T.U16: b.writeUInt16LE(v as number); return b.subarray(0, 2);
    case T.I16: b.writeInt16LE(v as number); return b.subarray(0, 2);
    case T.U32: b.writeUInt32LE(v as number); return b.subarray(0, 4);
    case T.I32: b.writeInt32LE(v as number); return b.subarray(0, 4);
    case T.F32: b.writeFloatLE(v as number); return b.subarray(0, 4);
    case T.BOOL: b.writeUInt8(typeof v === 'number' ? v : v ? 1 : 0); return b.subarray(0, 1);
    case T.STR: return str(v as string | Buffer);
    case T.U64: b.writeBigUInt64LE(BigInt(v as number | bigint)); return b;
    case T.I64: b.writeBigInt64LE(BigInt(v as number | bigint)); return b;
    case T.F64: b.writeDoubleLE(v as number); return b;
    case T.ARR: {
      const a = v as Arr;
      const head = Buffer.alloc(12);
      head.writeUInt32LE(a.elem, 0);
      head.writeBigUInt64LE(BigInt(a.items.length), 4);
      return Buffer.concat([head, ...a.items.map((x) => value(a.elem, x))]);
    }
    default: {
      // An invalid type code, written as is (for error tests): no payload.
      return Buffer.alloc(0);
    }
  }
}

function buildGguf(opts: { version?: number; kv?: Kv[]; tensors?: TensorSpec[]; alignment?: number }): Buffer & { dataStart?: number } {
  const version = opts.version ?? 3;
  const alignment = opts.alignment ?? 32;
  const kv = opts.kv ?? [];
  const tensors = opts.tensors ?? [];
  const head = Buffer.alloc(24);
  head.write('GGUF', 0, 'latin1');
  head.writeUInt32LE(version, 4);
  head.writeBigUInt64LE(BigInt(tensors.length), 8);
  head.writeBigUInt64LE(BigInt(kv.length), 16);
  const parts: Buffer[] = [head];
  for (const [k, type, v] of kv) {
    const t = Buffer.alloc(4);
    t.writeUInt32LE(type);
    parts.push(str(k), t, value(type, v));
  }
  let next = 0;
  const datas: { offset: number; data: Buffer }[] = [];
  for (const t of tensors) {
    const type = GGML_TYPES[t.type] ?? { blockSize: 1, typeSize: 1 };
    const size = (t.dims.reduce((a, b) => a * b, 1) / type.blockSize) * type.typeSize;
    const data = t.data ?? Buffer.alloc(size, 0x11);
    const offset = t.offset ?? next;
    next = Math.ceil((offset + data.length) / alignment) * alignment;
    datas.push({ offset, data });
    const info = Buffer.alloc(4 + 8 * t.dims.length + 4 + 8);
    info.writeUInt32LE(t.dims.length, 0);
    t.dims.forEach((d, i) => info.writeBigUInt64LE(BigInt(d), 4 + 8 * i));
    info.writeUInt32LE(t.type, 4 + 8 * t.dims.length);
    info.writeBigUInt64LE(BigInt(offset), 8 + 8 * t.dims.length);
    parts.push(str(t.name), info);
  }
  let body = Buffer.concat(parts);
  if (tensors.length > 0) {
    const start = Math.ceil(body.length / alignment) * alignment;
    const end = Math.max(...datas.map((d) => d.offset + d.data.length));
    const data = Buffer.alloc(end);
    for (const d of datas) d.data.copy(data, d.offset);
    body = Buffer.concat([body, Buffer.alloc(start - body.length), data]);
    return Object.assign(body, { dataStart: start });
  }
  return body;
}

/** A tiny Qwen3 in llama.cpp names: d 32, 2 heads of 16, 1 kv head, ffn 64, vocab 4, 1 layer. */
function qwen3Tensors(): TensorSpec[] {
  const q8 = Buffer.alloc((32 * 4 / 32) * 34);
  for (let b = 0; b < 4; b++) {
    q8.writeUInt16LE(0x3800, b * 34); // f16 0.5
    for (let i = 0; i < 32; i++) q8.writeInt8(i - 16 + b, b * 34 + 2 + i);
  }
  return [
    { name: 'token_embd.weight', dims: [32, 4], type: 1 },
    { name: 'output_norm.weight', dims: [32], type: 0 },
    { name: 'output.weight', dims: [32, 4], type: 8, data: q8 },
    { name: 'blk.0.attn_norm.weight', dims: [32], type: 0 },
    { name: 'blk.0.attn_q.weight', dims: [32, 32], type: 30 },
    { name: 'blk.0.attn_k.weight', dims: [32, 16], type: 30 },
    { name: 'blk.0.attn_v.weight', dims: [32, 16], type: 30 },
    { name: 'blk.0.attn_output.weight', dims: [32, 32], type: 30 },
    { name: 'blk.0.attn_q_norm.weight', dims: [16], type: 0 },
    { name: 'blk.0.attn_k_norm.weight', dims: [16], type: 0 },
    { name: 'blk.0.ffn_norm.weight', dims: [32], type: 0 },
    { name: 'blk.0.ffn_gate.weight', dims: [32, 64], type: 1 },
    { name: 'blk.0.ffn_up.weight', dims: [32, 64], type: 1 },
    { name: 'blk.0.ffn_down.weight', dims: [64, 32], type: 8 },
    { name: 'extra.q4k', dims: [256, 2], type: 12 },
    { name: 'extra.iq2', dims: [256, 2], type: 16 },
  ];
}

function qwen3Kv(): Kv[] {
  return [
    ['general.architecture', T.STR, 'qwen3'],
    ['general.alignment', T.U32, 64],
    ['qwen3.block_count', T.U32, 1],
    ['qwen3.context_length', T.U32, 40960],
    ['qwen3.embedding_length', T.U32, 32],
    ['qwen3.feed_forward_length', T.U32, 64],
    ['qwen3.attention.head_count', T.U32, 2],
    ['qwen3.attention.head_count_kv', T.U32, 1],
    ['qwen3.attention.key_length', T.U32, 16],
    ['qwen3.attention.value_length', T.U32, 16],
    ['qwen3.rope.freq_base', T.F32, 1000000],
    ['qwen3.attention.layer_norm_rms_epsilon', T.F32, 1e-6],
    ['tokenizer.ggml.model', T.STR, 'gpt2'],
    ['tokenizer.ggml.pre', T.STR, 'qwen2'],
    ['tokenizer.ggml.tokens', T.ARR, { elem: T.STR, items: ['a', 'b', 'ab', '<|endoftext|>'] }],
    ['tokenizer.ggml.token_type', T.ARR, { elem: T.I32, items: [1, 1, 1, 3] }],
    ['tokenizer.ggml.merges', T.ARR, { elem: T.STR, items: ['a b'] }],
    ['tokenizer.ggml.eos_token_id', T.U32, 3],
    ['tokenizer.ggml.padding_token_id', T.U32, 3],
    ['tokenizer.ggml.bos_token_id', T.U32, 3],
  ];
}

// ---------------------------------------------------------------------------------------------

describe('stories260K.gguf', () => {
  test('metadata as expected.json lists it, config, 48 F32 tensors with canonical names', async () => {
    const w = await read(STORIES_GGUF);
    const expected = readJson('llama-stories260k', 'expected.json').gguf;
    expect(w.metadata['gguf.version']).toBe(3);
    expect(w.metadata['gguf.alignment']).toBe(32);
    for (const [key, v] of Object.entries(expected.metadata)) expect([key, w.metadata[key]]).toEqual([key, v]);
    expect(w.architecture).toBe('llama');
    expect(w.config).toEqual({
      architecture: 'llama',
      hiddenSize: 64,
      intermediateSize: 172,
      numLayers: 5,
      numHeads: 8,
      numKvHeads: 4,
      headDim: 8,
      vocabSize: 512,
      maxSeqLen: 2048,
      rmsNormEps: 1e-5,
      ropeTheta: 10000,
      ropePairing: 'interleaved',
      tieWordEmbeddings: false,
      qkNorm: false,
      bosTokenId: 1,
      eosTokenIds: [2],
    });
    expect(w.tensors).toHaveLength(expected.tensor_count);
    const names = w.tensors.map((t) => t.name);
    expect(names.slice(0, 5)).toEqual(['model.embed_tokens.weight', 'model.norm.weight', 'lm_head.weight', 'model.layers.0.self_attn.q_proj.weight', 'model.layers.0.self_attn.k_proj.weight']);
    expect(new Set(names).size).toBe(48);
    for (const t of w.tensors) expect(t.dtype).toBe('f32');
    // dims are innermost first in the file: token_embd [64, 512] is our [512, 64].
    expect(findTensor(w, 'model.embed_tokens.weight')!.shape).toEqual([512, 64]);
    expect(findTensor(w, 'model.layers.2.mlp.down_proj.weight')!.shape).toEqual([64, 172]);
    expect(findTensor(w, 'model.layers.2.mlp.gate_proj.weight')!.shape).toEqual([172, 64]);
    // Data section: tensor infos end at 14152, aligned to 32 -> 14176; last tensor ends at EOF.
    expect(findTensor(w, 'model.embed_tokens.weight')!.byteOffset).toBe(14176);
    const last = findTensor(w, 'model.layers.4.post_attention_layernorm.weight')!;
    expect(last.byteOffset + last.byteLength).toBe(fs.statSync(STORIES_GGUF).size);
    const listed = w.metadata['gguf.tensors'] as { name: string; type: string; supported: boolean }[];
    expect(listed).toHaveLength(48);
    expect(listed.every((t) => t.type === 'F32' && t.supported)).toBe(true);
  });

  test('its vocabulary equals tok512.bin (U+2581 for space; llama2.c wraps <s> and </s> in newlines)', async () => {
    const w = await read(STORIES_GGUF);
    const g = w.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    expect(g.kind).toBe('gguf');
    expect(g.model).toBe('llama');
    expect(g.tokens).toHaveLength(512);
    expect([g.bosId, g.eosId, g.unkId, g.padId]).toEqual([1, 2, 0, undefined]);
    expect(Array.from(g.tokenTypes!.subarray(0, 5))).toEqual([2, 3, 3, 6, 6]);
    const tok = readLlama2cTokenizer(TOK512) as Extract<TokenizerData, { kind: 'scored' }>;
    for (let i = 0; i < 512; i++) {
      const text = i === 1 ? '\n<s>\n' : i === 2 ? '\n</s>\n' : g.tokens[i].replace(/\u2581/g, ' ');
      expect(Buffer.from(tok.tokens[i]).toString('utf8')).toBe(text);
      expect(g.scores![i]).toBe(tok.scores[i]);
    }
  });

  test('corrupted copies', async () => {
    const copy = (edit: (b: Buffer) => Buffer | void) => writeEdited(STORIES_GGUF, path.join(tmp.dir, `c-${counter++}.gguf`), edit);
    await expectFormatError(ggufFormat.read(copy((b) => b.subarray(0, b.length - 1))), 'OUT_OF_BOUNDS');
    await expectFormatError(ggufFormat.read(copy((b) => b.subarray(0, 1000))), 'TRUNCATED');
    await expectFormatError(ggufFormat.read(copy((b) => void b.write('GGUG', 0, 'latin1'))), 'BAD_MAGIC');
    await expectFormatError(ggufFormat.read(copy((b) => void b.writeUInt32LE(1, 4))), 'BAD_VERSION');
    await expectFormatError(ggufFormat.read(copy((b) => void b.writeUInt32LE(0x03000000, 4))), 'UNSUPPORTED');
    await expectFormatError(ggufFormat.read(copy((b) => void b.writeBigUInt64LE(1n << 40n, 8))), 'TRUNCATED');
    await expectFormatError(ggufFormat.read(copy((b) => void b.writeBigUInt64LE(1n << 40n, 16))), 'TRUNCATED');
  });
});

describe('llama.cpp vocabulary-only GGUF files', () => {
  test('ggml-vocab-bert-bge.gguf: 30,522 WordPiece tokens = MiniLM vocab.txt, no tensors', async () => {
    const w = await read(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf'));
    expect(w.architecture).toBe('unknown');
    expect(w.tensors).toHaveLength(0);
    expect(w.metadata['general.architecture']).toBe('bert');
    expect(w.metadata['bert.block_count']).toBe(12);
    expect(w.metadata['bert.attention.causal']).toBe(false);
    expect(w.metadata['bert.attention.layer_norm_epsilon']).toBe(Math.fround(1e-12));
    expect(w.metadata['tokenizer.ggml.cls_token_id']).toBe(101);
    expect(w.metadata['tokenizer.ggml.mask_token_id']).toBe(103);
    const g = w.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    expect([g.model, g.pre, g.tokens.length, g.unkId, g.padId, g.scores]).toEqual(['bert', 'bert-bge', 30522, 100, 0, undefined]);
    expect(g.tokenTypes).toHaveLength(30522);
    // llama.cpp's converter marks word starts with U+2581 and strips '##' from continuations.
    const vocab = fs.readFileSync(fixture('tokenizers', 'minilm', 'vocab.txt'), 'utf8').split('\n').slice(0, 30522);
    const unphantom = (t: string) => (t.startsWith('\u2581') ? t.slice(1) : t.startsWith('[') && t.endsWith(']') ? t : `##${t}`);
    expect(g.tokens.map(unphantom)).toEqual(vocab);
  });

  test('ggml-vocab-llama-spm.gguf: 32,000 SentencePiece tokens with scores', async () => {
    const w = await read(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-llama-spm.gguf'));
    expect([w.architecture, w.tensors.length, w.metadata['llama.vocab_size'], w.metadata['llama.block_count']]).toEqual(['unknown', 0, 32000, 32]);
    const g = w.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    expect([g.model, g.pre, g.tokens.length, g.scores!.length, g.bosId, g.eosId, g.unkId, g.addBos, g.addEos]).toEqual(['llama', 'default', 32000, 32000, 1, 2, 0, true, false]);
    expect(g.tokens.slice(0, 4)).toEqual(['<unk>', '<s>', '</s>', '<0x00>']);
  });
});

describe('synthetic GGUF files', () => {
  test('every metadata value type, v2 and v3', async () => {
    const kv: Kv[] = [
      ['general.architecture', T.STR, 'test'],
      ['t.u8', T.U8, 200],
      ['t.i8', T.I8, -100],
      ['t.u16', T.U16, 60000],
      ['t.i16', T.I16, -30000],
      ['t.u32', T.U32, 4000000000],
      ['t.i32', T.I32, -2000000000],
      ['t.f32', T.F32, 1.1],
      ['t.f64', T.F64, 1e300],
      ['t.bool', T.BOOL, true],
      ['t.str', T.STR, 'héllo \ufeff'],
      ['t.u64.small', T.U64, 7],
      ['t.u64.big', T.U64, 1n << 60n],
      ['t.i64', T.I64, -5],
      ['t.i64.big', T.I64, -(1n << 62n)],
      ['t.arr.u8', T.ARR, { elem: T.U8, items: [1, 2, 255] }],
      ['t.arr.i16', T.ARR, { elem: T.I16, items: [-1, 2] }],
      ['t.arr.f32', T.ARR, { elem: T.F32, items: [0.5, -2] }],
      ['t.arr.f64', T.ARR, { elem: T.F64, items: [0.1] }],
      ['t.arr.u64', T.ARR, { elem: T.U64, items: [1n << 63n] }],
      ['t.arr.bool', T.ARR, { elem: T.BOOL, items: [true, false] }],
      ['t.arr.str', T.ARR, { elem: T.STR, items: ['x', '', 'zz'] }],
      ['t.arr.nested', T.ARR, { elem: T.ARR, items: [{ elem: T.U32, items: [1, 2] }, { elem: T.STR, items: ['q'] }] }],
      ['t.arr.empty', T.ARR, { elem: T.I32, items: [] }],
    ];
    for (const version of [2, 3]) {
      const w = await read(save(buildGguf({ version, kv })));
      const m = w.metadata;
      expect(m['gguf.version']).toBe(version);
      expect([m['t.u8'], m['t.i8'], m['t.u16'], m['t.i16'], m['t.u32'], m['t.i32']]).toEqual([200, -100, 60000, -30000, 4000000000, -2000000000]);
      expect(m['t.f32']).toBe(Math.fround(1.1));
      expect([m['t.f64'], m['t.bool'], m['t.str'], m['t.u64.small'], m['t.u64.big'], m['t.i64'], m['t.i64.big']]).toEqual([1e300, true, 'héllo \ufeff', 7, 1n << 60n, -5, -(1n << 62n)]);
      expect(m['t.arr.u8']).toEqual(Uint8Array.from([1, 2, 255]));
      expect(m['t.arr.i16']).toEqual(Int16Array.from([-1, 2]));
      expect(m['t.arr.f32']).toEqual(Float32Array.from([0.5, -2]));
      expect(m['t.arr.f64']).toEqual(Float64Array.from([0.1]));
      expect(m['t.arr.u64']).toEqual(BigUint64Array.from([1n << 63n]));
      expect(m['t.arr.bool']).toEqual([true, false]);
      expect(m['t.arr.str']).toEqual(['x', '', 'zz']);
      expect(m['t.arr.nested']).toEqual([Uint32Array.from([1, 2]), ['q']]);
      expect(m['t.arr.empty']).toEqual(new Int32Array(0));
      expect(w.architecture).toBe('unknown');
      expect(w.tokenizer).toBeUndefined();
    }
  });

  test('a Qwen3 model: half pairing, QK-norm, F16/BF16/Q8_0/Q4_K views, alignment 64, an unsupported extra tensor listed', async () => {
    const tensors = qwen3Tensors();
    const bytes = buildGguf({ kv: qwen3Kv(), tensors, alignment: 64 });
    const w = await read(save(bytes));
    const c = w.config as DecoderConfig;
    expect(c).toEqual({
      architecture: 'qwen3',
      hiddenSize: 32,
      intermediateSize: 64,
      numLayers: 1,
      numHeads: 2,
      numKvHeads: 1,
      headDim: 16,
      vocabSize: 4,
      maxSeqLen: 40960,
      rmsNormEps: 1e-6,
      ropeTheta: 1000000,
      ropePairing: 'half',
      tieWordEmbeddings: false,
      qkNorm: true,
      bosTokenId: 3,
      eosTokenIds: [3],
    });
    const dtypes = Object.fromEntries(w.tensors.map((t) => [t.name, t.dtype]));
    expect(dtypes).toEqual({
      'model.embed_tokens.weight': 'f16',
      'model.norm.weight': 'f32',
      'lm_head.weight': 'ggml_q8_0',
      'model.layers.0.input_layernorm.weight': 'f32',
      'model.layers.0.self_attn.q_proj.weight': 'bf16',
      'model.layers.0.self_attn.k_proj.weight': 'bf16',
      'model.layers.0.self_attn.v_proj.weight': 'bf16',
      'model.layers.0.self_attn.o_proj.weight': 'bf16',
      'model.layers.0.self_attn.q_norm.weight': 'f32',
      'model.layers.0.self_attn.k_norm.weight': 'f32',
      'model.layers.0.post_attention_layernorm.weight': 'f32',
      'model.layers.0.mlp.gate_proj.weight': 'f16',
      'model.layers.0.mlp.up_proj.weight': 'f16',
      'model.layers.0.mlp.down_proj.weight': 'ggml_q8_0',
      'extra.q4k': 'ggml_q4_k',
    });
    // Data starts at the first multiple of 64 after the infos; every offset is a multiple of 64.
    const embed = findTensor(w, 'model.embed_tokens.weight')!;
    expect(bytes.dataStart! % 64).toBe(0);
    expect(embed.byteOffset).toBe(bytes.dataStart);
    for (const t of w.tensors) expect((t.byteOffset - bytes.dataStart!) % 64).toBe(0);
    const head = findTensor(w, 'lm_head.weight')!;
    expect([head.shape, head.byteLength]).toEqual([[4, 32], 4 * 34]);
    expect(findTensor(w, 'model.layers.0.mlp.down_proj.weight')!.byteLength).toBe((64 * 32 / 32) * 34);
    // Q8_0 block b: f16 scale 0.5, q[i] = i - 16 + b.
    const values = readF32(head, 0, 128);
    expect(values[0]).toBe(-8);
    expect(values[32 + 31]).toBe(8);
    expect(values[96 + 5]).toBe(-4);
    const listed = w.metadata['gguf.tensors'] as { name: string; type: string; supported: boolean; shape: number[] }[];
    expect(listed.find((t) => t.name === 'extra.q4k')).toEqual(expect.objectContaining({ type: 'Q4_K', supported: true, shape: [2, 256], byteLength: 2 * 144 }));
    expect(findTensor(w, 'extra.q4k')!.byteLength).toBe(2 * 144);
    expect(listed.find((t) => t.name === 'extra.iq2')).toEqual(expect.objectContaining({ type: 'IQ2_XXS', supported: false, shape: [2, 256], byteLength: 2 * 66 }));
    expect(findTensor(w, 'extra.iq2')).toBeUndefined();
    const g = w.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    expect([g.model, g.pre, g.tokens, g.merges, g.eosId, g.padId]).toEqual(['gpt2', 'qwen2', ['a', 'b', 'ab', '<|endoftext|>'], ['a b'], 3, 3]);
    // dequantize (native, off the JS thread) equals the JS decoding of every float dtype
    for (const name of ['model.embed_tokens.weight', 'model.layers.0.self_attn.q_proj.weight', 'lm_head.weight', 'model.norm.weight']) {
      const view = findTensor(w, name)!;
      expect(Array.from(await dequantize(w, name))).toEqual(Array.from(readF32(view, 0, view.shape.reduce((a, b) => a * b, 1))));
    }
    await expect(dequantize(w, 'no.such.tensor')).rejects.toThrow("no tensor 'no.such.tensor'");
  });

  const withTensors = (edit: (t: TensorSpec[]) => void) => {
    const t = qwen3Tensors();
    edit(t);
    return buildGguf({ kv: qwen3Kv(), tensors: t, alignment: 64 });
  };
  const withKv = (edit: (kv: Kv[]) => void) => {
    const kv = qwen3Kv();
    edit(kv);
    return buildGguf({ kv, tensors: qwen3Tensors(), alignment: 64 });
  };
  const setKv = (kv: Kv[], key: string, type: number, v: unknown) => {
    const i = kv.findIndex(([k]) => k === key);
    if (i >= 0) kv[i] = [key, type, v];
    else kv.push([key, type, v]);
  };
  const named = (t: TensorSpec[], name: string) => t.find((x) => x.name === name)!;

  test('a long string array with a long string that is not UTF-8 reads, and fails with BAD_HEADER when first used', async () => {
    const items = [...Array(5000).fill('ab'), Buffer.concat([Buffer.alloc(200, 0x61), Buffer.from([0xc3])]), 'cd'];
    const w = await ggufFormat.read(save(withKv((kv) => kv.push(['t.strs', T.ARR, { elem: T.STR, items }]))));
    try {
      expect(() => w.metadata['t.strs']).toThrow(expect.objectContaining({ name: 'WeightFormatError', code: 'BAD_HEADER', message: expect.stringContaining("'t.strs'[5000]") }));
    } finally {
      closeWeights(w);
    }
    const ok = await ggufFormat.read(save(withKv((kv) => kv.push(['t.strs', T.ARR, { elem: T.STR, items: [...items.slice(0, 5000), 'x'.repeat(300), 'é'] }]))));
    try {
      expect(ok.metadata['t.strs']).toEqual([...items.slice(0, 5000), 'x'.repeat(300), 'é']);
    } finally {
      closeWeights(ok);
    }
  });

  test('long string arrays read before or after the weights close are the strings written', async () => {
    const items = Array.from({ length: 6000 }, (_, i) => `tok${i}é`);
    const other = Array.from({ length: 5000 }, (_, i) => `m ${i}`);
    const path = save(withKv((kv) => kv.push(['t.strs', T.ARR, { elem: T.STR, items }], ['t.more', T.ARR, { elem: T.STR, items: other }])));
    const early = await ggufFormat.read(path);
    expect(early.metadata['t.strs']).toEqual(items); // decoded while mapped
    closeWeights(early);
    expect(early.metadata['t.more']).toEqual(other); // first read after the mapping closed
    const late = await ggufFormat.read(path);
    closeWeights(late);
    expect(late.metadata['t.strs']).toEqual(items);
    expect(late.metadata['t.more']).toEqual(other);
  });

  test.each([
    ['a missing required tensor', () => withTensors((t) => t.splice(t.findIndex((x) => x.name === 'blk.0.ffn_up.weight'), 1)), 'MISSING_TENSOR'],
    ['a required tensor of an unsupported type (Q8_1)', () => withTensors((t) => void (named(t, 'blk.0.ffn_up.weight').type = 9)), 'UNSUPPORTED'],
    ['a tensor whose dims disagree with the metadata', () => withTensors((t) => void (named(t, 'blk.0.attn_q.weight').dims = [32, 16])), 'SHAPE_MISMATCH'],
    ['a Q4_K row that is not a multiple of 256', () => withTensors((t) => void (named(t, 'extra.q4k').dims = [100, 1])), 'SHAPE_MISMATCH'],
    ['an MXFP4 row that is not a multiple of 32', () => withTensors((t) => t.push({ name: 'extra.mxfp4', dims: [48, 2], type: 39, data: Buffer.alloc(51) })), 'SHAPE_MISMATCH'],
    ['MXFP4 blocks past the end of the file', () => withTensors((t) => t.push({ name: 'extra.mxfp4', dims: [64, 1 << 20], type: 39, data: Buffer.alloc(34) })), 'OUT_OF_BOUNDS'],
    ['an unknown (removed) ggml type', () => withTensors((t) => void (named(t, 'extra.q4k').type = 4)), 'BAD_DTYPE'],
    ['a misaligned offset', () => withTensors((t) => void (named(t, 'extra.q4k').offset = 100000 + 8)), 'BAD_HEADER'],
    ['an offset past the end', () => withTensors((t) => t.push({ name: 'far', dims: [4], type: 0, offset: 1 << 20, data: Buffer.alloc(0) })), 'OUT_OF_BOUNDS'],
    ['overlapping tensors', () => withTensors((t) => void (named(t, 'output_norm.weight').offset = 0)), 'OVERLAP'],
    ['a duplicated tensor name', () => withTensors((t) => t.push({ ...named(t, 'output_norm.weight'), offset: undefined })), 'BAD_NAME'],
    ['five dimensions', () => withTensors((t) => void (named(t, 'extra.q4k').dims = [256, 1, 1, 1, 1])), 'BAD_HEADER'],
    ['a layer past block_count', () => withTensors((t) => t.push({ name: 'blk.1.attn_norm.weight', dims: [32], type: 0 })), 'CONFIG_MISMATCH'],
    ['a duplicated key', () => withKv((kv) => kv.push(['general.architecture', T.STR, 'qwen3'])), 'BAD_NAME'],
    ['a key that is not UTF-8', () => withKv((kv) => kv.push([Buffer.from([0x62, 0xff]), T.U8, 1])), 'BAD_NAME'],
    ['a string value that is not UTF-8', () => withKv((kv) => kv.push(['t.s', T.STR, Buffer.from([0x61, 0xc3])])), 'BAD_HEADER'],
    ['an unknown value type', () => withKv((kv) => kv.push(['t.x', 13, 0])), 'BAD_HEADER'],
    ['a bool that is 2', () => withKv((kv) => kv.push(['t.b', T.BOOL, 2])), 'BAD_HEADER'],
    ['an alignment that is not a power of two', () => withKv((kv) => setKv(kv, 'general.alignment', T.U32, 48)), 'BAD_HEADER'],
    ['an alignment stored as u64', () => withKv((kv) => setKv(kv, 'general.alignment', T.U64, 64)), 'BAD_HEADER'],
    ['per-layer head counts', () => withKv((kv) => setKv(kv, 'qwen3.attention.head_count', T.ARR, { elem: T.U32, items: [2] })), 'UNSUPPORTED'],
    ['a rope dimension count past the head dim', () => withKv((kv) => setKv(kv, 'qwen3.rope.dimension_count', T.U32, 1000)), 'CONFIG_MISMATCH'],
    ['an odd rope dimension count', () => withKv((kv) => setKv(kv, 'qwen3.rope.dimension_count', T.U32, 7)), 'CONFIG_MISMATCH'],
    ['rope scaling', () => withKv((kv) => setKv(kv, 'qwen3.rope.scaling.type', T.STR, 'yarn')), 'UNSUPPORTED'],
    ['a missing size key', () => withKv((kv) => kv.splice(kv.findIndex(([k]) => k === 'qwen3.embedding_length'), 1)), 'CONFIG_MISMATCH'],
    ['a size key of the wrong type', () => withKv((kv) => setKv(kv, 'qwen3.block_count', T.STR, '1')), 'BAD_HEADER'],
    ['head_count not a multiple of head_count_kv', () => withKv((kv) => setKv(kv, 'qwen3.attention.head_count_kv', T.U32, 3)), 'CONFIG_MISMATCH'],
    ['scores of the wrong length', () => withKv((kv) => kv.push(['tokenizer.ggml.scores', T.ARR, { elem: T.F32, items: [0] }])), 'BAD_HEADER'],
    ['an array longer than the file', () => withKv((kv) => kv.push(['t.a', T.ARR, { elem: T.U64, items: [] }])), 'TRUNCATED'],
    // 5000 strings: an array decoded on first use, whose UTF-8 is still checked at read.
    ['a long string array with a string that is not UTF-8', () => withKv((kv) => kv.push(['t.strs', T.ARR, { elem: T.STR, items: [...Array(5000).fill('ab'), Buffer.from([0x61, 0xc3])] }])), 'BAD_HEADER'],
    // 40000 strings (past the first slice of length checks), the last one's length past the end.
    ['a long string array whose last string runs past the file', () => withKv((kv) => kv.push(['t.strs', T.ARR, { elem: T.STR, items: [...Array(40000).fill('ab'), 'zz'] }])), 'TRUNCATED'],
  ] as const)('rejects %s', async (what, make, code) => {
    let bytes = make();
    if (what === 'a long string array whose last string runs past the file') {
      // Patch the last string's u64 length (just before its bytes 'zz') to 2^30.
      bytes = Buffer.from(bytes);
      bytes.writeBigUInt64LE(1n << 30n, bytes.indexOf(Buffer.from('zz', 'latin1')) - 8);
    }
    if (what === 'an array longer than the file') {
      // Patch the empty array's u64 count (right after 't.a' and its element type) to 2^40.
      const at = bytes.indexOf(Buffer.from('t.a', 'latin1')) + 3 + 4 + 4;
      bytes = Buffer.from(bytes);
      bytes.writeBigUInt64LE(1n << 40n, at);
    }
    await expectFormatError(ggufFormat.read(save(bytes)), code);
  });

  test('a vocabulary-only file may end right after its metadata (no data section padding)', async () => {
    const bytes = buildGguf({ kv: [['general.architecture', T.STR, 'llama'], ['tokenizer.ggml.tokens', T.ARR, { elem: T.STR, items: ['x'] }]] });
    const w = await read(save(bytes));
    expect([w.architecture, w.tensors.length, (w.tokenizer as { tokens: string[] }).tokens]).toEqual(['unknown', 0, ['x']]);
  });

  test('detect() recognises the magic', () => {
    const probe = (head: Buffer) => ({ path: 'x', isDirectory: false, head, entries: [] });
    expect(ggufFormat.detect(probe(fs.readFileSync(STORIES_GGUF).subarray(0, 64)))).toBe(true);
    expect(ggufFormat.detect(probe(Buffer.from('GGML0000')))).toBe(false);
  });

  test('a view of the GGUF data is the very bytes of the file', async () => {
    const w = await read(STORIES_GGUF);
    const t = findTensor(w, 'model.norm.weight')!;
    const file = fs.readFileSync(STORIES_GGUF);
    expect(bytesOf(t).equals(file.subarray(14176 + 131072, 14176 + 131072 + 256))).toBe(true);
  });
});

describe('GGUF writer', () => {
  const out = () => path.join(tmp.dir, `out-${counter++}.gguf`);

  test.each([
    ['stories260K.gguf', STORIES_GGUF],
    ['ggml-vocab-bert-bge.gguf', fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf')],
    ['ggml-vocab-llama-spm.gguf', fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-llama-spm.gguf')],
  ])('reading %s and writing it again gives the identical file', async (_name, file) => {
    const dst = out();
    await ggufFormat.write!(await read(file), dst);
    expect(fs.readFileSync(dst).equals(fs.readFileSync(file))).toBe(true);
  });

  test('synthetic files round trip byte for byte: every value type; Qwen3 with alignment 64, BF16, Q8_0, a Q4_K view and an IQ2_XXS tensor copied as stored', async () => {
    const kv: Kv[] = [
      ['t.u8', T.U8, 200], ['t.i64', T.I64, -(1n << 62n)], ['t.f64', T.F64, 0.1], ['t.bool', T.BOOL, false],
      ['t.nested', T.ARR, { elem: T.ARR, items: [{ elem: T.U32, items: [1, 2] }, { elem: T.STR, items: ['q'] }, { elem: T.BOOL, items: [true] }] }],
      ['t.empty', T.ARR, { elem: T.STR, items: [] }], ['t.u64s', T.ARR, { elem: T.U64, items: [1n << 63n, 5n] }],
    ];
    for (const bytes of [buildGguf({ kv }), buildGguf({ kv: qwen3Kv(), tensors: qwen3Tensors(), alignment: 64 })]) {
      const src = save(bytes);
      const dst = out();
      await ggufFormat.write!(await read(src), dst);
      expect(fs.readFileSync(dst).equals(bytes)).toBe(true);
    }
  });

  test('from stories260K.bin + tok512.bin: the tensors of the .bin and the vocabulary llama.cpp wrote for it', async () => {
    const { llama2cFormat } = await import('../../lib/formats/containers/llama2c');
    const bin = await llama2cFormat.read(fixture('llama-stories260k', 'stories260K.bin'));
    opened.push(bin);
    const dst = out();
    await ggufFormat.write!(bin, dst);
    const mine = await read(dst);
    const theirs = await read(STORIES_GGUF);
    expect(mine.config).toEqual({ ...(theirs.config as DecoderConfig), maxSeqLen: 512, tieWordEmbeddings: true });
    for (const t of bin.tensors) expect(bytesOf(findTensor(mine, t.name)!).equals(bytesOf(t))).toBe(true);
    const a = mine.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    const b = theirs.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    expect(a.tokens).toEqual(b.tokens);
    expect(a.scores).toEqual(b.scores);
    expect(a.tokenTypes).toEqual(b.tokenTypes);
    expect([a.model, a.bosId, a.eosId, a.unkId]).toEqual([b.model, b.bosId, b.eosId, b.unkId]);
  });

  test('from the sepweight tree (HF order): q/k go back to llama.cpp order, equal to stories260K.gguf; f16 matrices, f32 vectors', async () => {
    const { sepweightFormat } = await import('../../lib/formats/containers/sepweight');
    const tree = await sepweightFormat.read(fixture('llama-stories260k', 'sepweight'));
    opened.push(tree);
    const dst = out();
    await ggufFormat.write!(tree, dst);
    const mine = await read(dst);
    const theirs = await read(STORIES_GGUF);
    expect((mine.config as DecoderConfig).ropePairing).toBe('interleaved');
    for (const t of theirs.tensors) expect([t.name, bytesOf(findTensor(mine, t.name)!).equals(bytesOf(t))]).toEqual([t.name, true]);

    const half = out();
    await ggufFormat.write!(tree, half, { dtype: 'f16' });
    const h = await read(half);
    for (const t of h.tensors) expect([t.name, t.dtype]).toEqual([t.name, t.shape.length >= 2 ? 'f16' : 'f32']);
    const q = readF32(findTensor(h, 'model.layers.2.self_attn.q_proj.weight')!, 0, 4096);
    const ref = readF32(findTensor(theirs, 'model.layers.2.self_attn.q_proj.weight')!, 0, 4096);
    for (let i = 0; i < 4096; i++) expect(Math.abs(q[i] - ref[i])).toBeLessThanOrEqual(Math.abs(ref[i]) * 2 ** -11 + 2 ** -24);
  });

  test('weights that are neither a decoder nor read from GGUF are refused', async () => {
    const w = await read(STORIES_GGUF);
    await expect(ggufFormat.write!({ ...w, format: 'npy', config: { architecture: 'unknown' }, architecture: 'unknown' }, out())).rejects.toThrow(/Llama\/Qwen3/);
  });
});
