/**
 * safetensors: a file written by the reference implementation (huggingface/safetensors 0.6,
 * numpy backend; embedded below), HF folders for Llama (converted from stories260K), Qwen3 and
 * BERT with the sentence-transformers files, sharded checkpoints, the writer (byte-identical to the
 * reference file; round trips) and corrupted headers.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { npyFormat } from '../../lib/formats/containers/npy';
import { safetensorsFormat } from '../../lib/formats/containers/safetensors';
import { sepweightFormat } from '../../lib/formats/containers/sepweight';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, findTensor, type ModelWeights } from '../../lib/addon/weights';
import type { BertConfig } from '../../lib/architectures/bert';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { tempDir } from '../helpers/fixtures';
import { bytesOf, expectFormatError, listFiles, STORIES_BIN, STORIES_TREE } from './userfmt-helpers';

/** safetensors.numpy.save({...}, metadata={'format': 'np', 'note': 'héllo'}): 14 tensors of 13 dtypes. */
const REFERENCE =
  'cAMAAAAAAAB7Il9fbWV0YWRhdGFfXyI6eyJmb3JtYXQiOiJucCIsIm5vdGUiOiJow6lsbG8ifSwibC51NjQiOnsiZHR5cGUiOiJVNjQiLCJzaGFwZSI6WzFdLCJkYXRhX29mZnNldHMiOlswLDhdfSwiZy5pNjQiOnsiZHR5cGUiOiJJNjQiLCJzaGFwZSI6WzFdLCJkYXRhX29mZnNldHMiOls4LDE2XX0sImYuZjY0Ijp7ImR0eXBlIjoiRjY0Iiwic2hhcGUiOlsyXSwiZGF0YV9vZmZzZXRzIjpbMTYsMzJdfSwiYS5mMzIiOnsiZHR5cGUiOiJGMzIiLCJzaGFwZSI6WzIsM10sImRhdGFfb2Zmc2V0cyI6WzMyLDU2XX0sIm0uc2NhbGFyIjp7ImR0eXBlIjoiRjMyIiwic2hhcGUiOltdLCJkYXRhX29mZnNldHMiOls1Niw2MF19LCJuLmVtcHR5Ijp7ImR0eXBlIjoiRjMyIiwic2hhcGUiOlswLDRdLCJkYXRhX29mZnNldHMiOls2MCw2MF19LCJrLnUzMiI6eyJkdHlwZSI6IlUzMiIsInNoYXBlIjpbMV0sImRhdGFfb2Zmc2V0cyI6WzYwLDY0XX0sImUuaTMyIjp7ImR0eXBlIjoiSTMyIiwic2hhcGUiOlsxXSwiZGF0YV9vZmZzZXRzIjpbNjQsNjhdfSwiYi5mMTYiOnsiZHR5cGUiOiJGMTYiLCJzaGFwZSI6WzNdLCJkYXRhX29mZnNldHMiOls2OCw3NF19LCJpLnUxNiI6eyJkdHlwZSI6IlUxNiIsInNoYXBlIjpbMV0sImRhdGFfb2Zmc2V0cyI6Wzc0LDc2XX0sImouaTE2Ijp7ImR0eXBlIjoiSTE2Iiwic2hhcGUiOlsxXSwiZGF0YV9vZmZzZXRzIjpbNzYsNzhdfSwiYy5pOCI6eyJkdHlwZSI6Ikk4Iiwic2hhcGUiOlszXSwiZGF0YV9vZmZzZXRzIjpbNzgsODFdfSwiZC51OCI6eyJkdHlwZSI6IlU4Iiwic2hhcGUiOlsyLDJdLCJkYXRhX29mZnNldHMiOls4MSw4NV19LCJoLmJvb2wiOnsiZHR5cGUiOiJCT09MIiwic2hhcGUiOlszXSwiZGF0YV9vZmZzZXRzIjpbODUsODhdfX0gAAAAAAAAAIAAAAAAAP///5x1AIg85Dd+AAAAAAAA4L8AACDAAADAvwAAAL8AAAA/AADAPwAAIEAAAFBAAChr7vn///8APgDA/3v///7/gAB/AQID/wEAAQ==';

const tmp = tempDir('weightmap-safetensors-');
afterAll(() => tmp.cleanup());
const opened: ModelWeights[] = [];
afterEach(() => opened.splice(0).forEach(closeWeights));
async function read(p: string): Promise<ModelWeights> {
  const w = await safetensorsFormat.read(p);
  opened.push(w);
  return w;
}
async function track(p: Promise<ModelWeights>): Promise<ModelWeights> {
  const w = await p;
  opened.push(w);
  return w;
}
let counter = 0;
const newDir = (name: string) => {
  const d = path.join(tmp.dir, `${counter++}-${name}`);
  fs.mkdirSync(d, { recursive: true });
  return d;
};

// ---------------------------------------------------------------------------------------------
// A safetensors writer written from the format description, for synthetic files.

const SIZES: Record<string, number> = { F32: 4, F16: 2, BF16: 2, I32: 4, I8: 1, U8: 1, I64: 8, F64: 8 };
interface Entry {
  name: string;
  dtype: string;
  shape: number[];
  data?: Buffer;
}

/** A header object and data buffer as one file: u64 length, JSON padded to 8 with spaces, data. */
function rawFile(header: unknown, data: Buffer, pad = true): Buffer {
  let json = Buffer.from(JSON.stringify(header), 'utf8');
  if (pad && json.length % 8) json = Buffer.concat([json, Buffer.alloc(8 - (json.length % 8), 0x20)]);
  const n = Buffer.alloc(8);
  n.writeBigUInt64LE(BigInt(json.length));
  return Buffer.concat([n, json, data]);
}

function buildFile(entries: Entry[], metadata?: Record<string, string>): Buffer {
  const header: Record<string, unknown> = metadata ? { __metadata__: metadata } : {};
  const parts: Buffer[] = [];
  let at = 0;
  let seed = 7;
  for (const e of entries) {
    const size = e.shape.reduce((a, b) => a * b, 1) * (SIZES[e.dtype] ?? 1);
    let data = e.data;
    if (!data) {
      data = Buffer.alloc(size);
      for (let i = 0; i < size; i++) data[i] = (seed = (seed * 131 + 17) % 251);
    }
    header[e.name] = { dtype: e.dtype, shape: e.shape, data_offsets: [at, at + data.length] };
    parts.push(data);
    at += data.length;
  }
  return rawFile(header, Buffer.concat(parts));
}

function folder(name: string, files: Record<string, Buffer | object>): string {
  const dir = newDir(name);
  for (const [rel, content] of Object.entries(files)) {
    fs.mkdirSync(path.dirname(path.join(dir, rel)), { recursive: true });
    fs.writeFileSync(path.join(dir, rel), Buffer.isBuffer(content) ? content : JSON.stringify(content));
  }
  return dir;
}

/** Tiny Qwen3: d 16, 2 heads of head_dim 12 (≠ d / heads), 1 kv head, ffn 24, vocab 10, 2 layers, BF16. */
const QWEN3_CONFIG = {
  architectures: ['Qwen3ForCausalLM'],
  model_type: 'qwen3',
  hidden_size: 16,
  intermediate_size: 24,
  num_hidden_layers: 2,
  num_attention_heads: 2,
  num_key_value_heads: 1,
  head_dim: 12,
  vocab_size: 10,
  max_position_embeddings: 40960,
  rms_norm_eps: 1e-6,
  rope_theta: 1000000,
  hidden_act: 'silu',
  attention_bias: false,
  tie_word_embeddings: true,
  bos_token_id: 151643,
  eos_token_id: 151645,
  torch_dtype: 'bfloat16',
  use_sliding_window: false,
};
function qwen3Entries(): Entry[] {
  const e: Entry[] = [{ name: 'model.embed_tokens.weight', dtype: 'BF16', shape: [10, 16] }];
  for (let l = 0; l < 2; l++) {
    const p = `model.layers.${l}.`;
    e.push(
      { name: `${p}input_layernorm.weight`, dtype: 'BF16', shape: [16] },
      { name: `${p}self_attn.q_proj.weight`, dtype: 'BF16', shape: [24, 16] },
      { name: `${p}self_attn.k_proj.weight`, dtype: 'BF16', shape: [12, 16] },
      { name: `${p}self_attn.v_proj.weight`, dtype: 'BF16', shape: [12, 16] },
      { name: `${p}self_attn.o_proj.weight`, dtype: 'BF16', shape: [16, 24] },
      { name: `${p}self_attn.q_norm.weight`, dtype: 'BF16', shape: [12] },
      { name: `${p}self_attn.k_norm.weight`, dtype: 'BF16', shape: [12] },
      { name: `${p}post_attention_layernorm.weight`, dtype: 'BF16', shape: [16] },
      { name: `${p}mlp.gate_proj.weight`, dtype: 'BF16', shape: [24, 16] },
      { name: `${p}mlp.up_proj.weight`, dtype: 'BF16', shape: [24, 16] },
      { name: `${p}mlp.down_proj.weight`, dtype: 'BF16', shape: [16, 24] },
    );
  }
  e.push({ name: 'model.norm.weight', dtype: 'BF16', shape: [16] });
  return e;
}

/** Tiny BERT (hidden 8, 1 layer, 2 heads, ffn 12, vocab 20, 16 positions) with legacy names. */
const BERT_CONFIG = {
  architectures: ['BertModel'],
  model_type: 'bert',
  hidden_size: 8,
  num_hidden_layers: 1,
  num_attention_heads: 2,
  intermediate_size: 12,
  vocab_size: 20,
  max_position_embeddings: 16,
  type_vocab_size: 2,
  layer_norm_eps: 1e-12,
  hidden_act: 'gelu',
  position_embedding_type: 'absolute',
};
function bertEntries(): Entry[] {
  const p = 'bert.encoder.layer.0.';
  return [
    { name: 'bert.embeddings.word_embeddings.weight', dtype: 'F32', shape: [20, 8] },
    { name: 'bert.embeddings.position_embeddings.weight', dtype: 'F32', shape: [16, 8] },
    { name: 'bert.embeddings.token_type_embeddings.weight', dtype: 'F32', shape: [2, 8] },
    { name: 'bert.embeddings.LayerNorm.gamma', dtype: 'F32', shape: [8] },
    { name: 'bert.embeddings.LayerNorm.beta', dtype: 'F32', shape: [8] },
    { name: 'bert.embeddings.position_ids', dtype: 'I64', shape: [1, 16] },
    ...['query', 'key', 'value'].flatMap((m) => [
      { name: `${p}attention.self.${m}.weight`, dtype: 'F32', shape: [8, 8] },
      { name: `${p}attention.self.${m}.bias`, dtype: 'F32', shape: [8] },
    ]),
    { name: `${p}attention.output.dense.weight`, dtype: 'F32', shape: [8, 8] },
    { name: `${p}attention.output.dense.bias`, dtype: 'F32', shape: [8] },
    { name: `${p}attention.output.LayerNorm.weight`, dtype: 'F32', shape: [8] },
    { name: `${p}attention.output.LayerNorm.bias`, dtype: 'F32', shape: [8] },
    { name: `${p}intermediate.dense.weight`, dtype: 'F32', shape: [12, 8] },
    { name: `${p}intermediate.dense.bias`, dtype: 'F32', shape: [12] },
    { name: `${p}output.dense.weight`, dtype: 'F32', shape: [8, 12] },
    { name: `${p}output.dense.bias`, dtype: 'F32', shape: [8] },
    { name: `${p}output.LayerNorm.weight`, dtype: 'F32', shape: [8] },
    { name: `${p}output.LayerNorm.bias`, dtype: 'F32', shape: [8] },
    { name: 'bert.pooler.dense.weight', dtype: 'F32', shape: [8, 8] },
    { name: 'bert.pooler.dense.bias', dtype: 'F32', shape: [8] },
    { name: 'cls.predictions.bias', dtype: 'F32', shape: [20] },
  ];
}
const ST_FILES = {
  'modules.json': [
    { idx: 0, name: '0', path: '', type: 'sentence_transformers.models.Transformer' },
    { idx: 1, name: '1', path: '1_Pooling', type: 'sentence_transformers.models.Pooling' },
    { idx: 2, name: '2', path: '2_Normalize', type: 'sentence_transformers.models.Normalize' },
  ],
  'sentence_bert_config.json': { max_seq_length: 12, do_lower_case: false },
  '1_Pooling/config.json': { word_embedding_dimension: 8, pooling_mode_cls_token: true, pooling_mode_mean_tokens: false, pooling_mode_max_tokens: false, pooling_mode_mean_sqrt_len_tokens: false },
};

// ---------------------------------------------------------------------------------------------

describe('a file written by the reference implementation', () => {
  test('every dtype, shape, offset and value; __metadata__', async () => {
    const file = path.join(newDir('ref'), 'ref.safetensors');
    const bytes = Buffer.from(REFERENCE, 'base64');
    fs.writeFileSync(file, bytes);
    const w = await read(file);
    expect([w.format, w.architecture, w.config]).toEqual(['safetensors', 'unknown', { architecture: 'unknown' }]);
    expect(w.metadata).toEqual({ format: 'np', note: 'héllo' });
    const data = 8 + 880;
    const summary = Object.fromEntries(w.tensors.map((t) => [t.name, [t.dtype, t.shape, t.byteOffset - data, t.byteLength]]));
    expect(summary).toEqual({
      'l.u64': ['u64', [1], 0, 8],
      'g.i64': ['i64', [1], 8, 8],
      'f.f64': ['f64', [2], 16, 16],
      'a.f32': ['f32', [2, 3], 32, 24],
      'm.scalar': ['f32', [], 56, 4],
      'n.empty': ['f32', [0, 4], 60, 0],
      'k.u32': ['u32', [1], 60, 4],
      'e.i32': ['i32', [1], 64, 4],
      'b.f16': ['f16', [3], 68, 6],
      'i.u16': ['u16', [1], 74, 2],
      'j.i16': ['i16', [1], 76, 2],
      'c.i8': ['i8', [3], 78, 3],
      'd.u8': ['u8', [2, 2], 81, 4],
      'h.bool': ['bool', [3], 85, 3],
    });
    const t = (name: string) => bytesOf(findTensor(w, name)!);
    expect(Array.from(readF32(findTensor(w, 'a.f32')!, 0, 6))).toEqual([-2.5, -1.5, -0.5, 0.5, 1.5, 2.5]);
    expect(Array.from(readF32(findTensor(w, 'b.f16')!, 0, 3))).toEqual([1.5, -2, 65504]);
    expect(Array.from(readF32(findTensor(w, 'f.f64')!, 0, 2))).toEqual([Math.fround(1e300), -0.5]);
    expect([t('l.u64').readBigUInt64LE(0), t('g.i64').readBigInt64LE(0), t('k.u32').readUInt32LE(0), t('e.i32').readInt32LE(0)]).toEqual([2n ** 63n, -(2n ** 40n), 4000000000, -7]);
    expect([Array.from(new Int8Array(Buffer.from(t('c.i8')))), Array.from(t('d.u8')), Array.from(t('h.bool'))]).toEqual([[-128, 0, 127], [1, 2, 3, 255], [1, 0, 1]]);
  });

  test('writing it back gives the identical file', async () => {
    const dir = newDir('ref-rt');
    const file = path.join(dir, 'ref.safetensors');
    fs.writeFileSync(file, Buffer.from(REFERENCE, 'base64'));
    const out = path.join(dir, 'out.safetensors');
    await safetensorsFormat.write!(await read(file), out);
    expect(fs.readFileSync(out).equals(fs.readFileSync(file))).toBe(true);
    // An 'unknown' model writes no config.json.
    expect(fs.existsSync(path.join(dir, 'config.json'))).toBe(false);
  });
});

describe('HF folders', () => {
  test('Llama converted from stories260K.bin: HF q/k order, the same tensors as the sepweight tree, config round trip', async () => {
    const dir = newDir('llama');
    const bin = await track(llama2cFormat.read(STORIES_BIN));
    await safetensorsFormat.write!(bin, path.join(dir, 'model.safetensors'));
    // The llama2.c vocabulary rides along as tokenizer.bin (weightmap reads no SentencePiece tokenizer.json).
    expect(listFiles(dir)).toEqual(['config.json', 'model.safetensors', 'tokenizer.bin']);
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    expect(config).toEqual(expect.objectContaining({ architectures: ['LlamaForCausalLM'], model_type: 'llama', num_key_value_heads: 4, tie_word_embeddings: true, torch_dtype: 'float32' }));
    const w = await read(dir);
    expect(w.config).toEqual({ ...bin.config, ropePairing: 'half' });
    const tree = await track(sepweightFormat.read(STORIES_TREE));
    expect(w.tensors).toHaveLength(47);
    for (const t of w.tensors) expect([t.name, bytesOf(t).equals(bytesOf(findTensor(tree, t.name)!))]).toEqual([t.name, true]);
    // Writing what was read gives the identical file and config.json.
    const again = newDir('llama-again');
    await safetensorsFormat.write!(w, path.join(again, 'model.safetensors'));
    for (const f of ['model.safetensors', 'config.json']) expect(fs.readFileSync(path.join(again, f)).equals(fs.readFileSync(path.join(dir, f)))).toBe(true);
    // A lone file reads with the config.json beside it.
    expect((await read(path.join(dir, 'model.safetensors'))).config).toEqual(w.config);
  });

  test('float16 output converts every float tensor', async () => {
    const dir = newDir('llama16');
    const tree = await track(sepweightFormat.read(STORIES_TREE));
    await safetensorsFormat.write!(tree, path.join(dir, 'model.safetensors'), { dtype: 'f16' });
    const w = await read(dir);
    expect(new Set(w.tensors.map((t) => t.dtype))).toEqual(new Set(['f16']));
    expect(JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8')).torch_dtype).toBe('float16');
    expect(w.config).toEqual(tree.config);
    const a = readF32(findTensor(tree, 'model.layers.1.mlp.up_proj.weight')!, 0, 172 * 64);
    const b = readF32(findTensor(w, 'model.layers.1.mlp.up_proj.weight')!, 0, 172 * 64);
    for (let i = 0; i < a.length; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(Math.abs(a[i]) * 2 ** -11 + 2 ** -24);
  });

  test('sharded checkpoints: model.safetensors.index.json and its weight_map', async () => {
    const entries = qwen3Entries();
    const first = entries.slice(0, 10);
    const second = entries.slice(10);
    const weightMap = Object.fromEntries([...first.map((e) => [e.name, 'model-00001-of-00002.safetensors']), ...second.map((e) => [e.name, 'model-00002-of-00002.safetensors'])]);
    const files = {
      'config.json': QWEN3_CONFIG,
      'model-00001-of-00002.safetensors': buildFile(first, { format: 'pt' }),
      'model-00002-of-00002.safetensors': buildFile(second, { format: 'pt' }),
      'model.safetensors.index.json': { metadata: { total_size: 0 }, weight_map: weightMap },
    };
    const w = await read(folder('sharded', files));
    expect(w.sources).toHaveLength(2);
    expect(w.tensors.map((t) => t.name).sort()).toEqual(entries.map((e) => e.name).sort());
    const c = w.config as DecoderConfig;
    expect([c.architecture, c.headDim, c.numHeads, c.numKvHeads, c.qkNorm, c.ropePairing, c.tieWordEmbeddings, c.ropeTheta, c.rmsNormEps, c.eosTokenIds]).toEqual(['qwen3', 12, 2, 1, true, 'half', true, 1000000, 1e-6, [151645]]);
    expect(new Set(w.tensors.map((t) => t.dtype))).toEqual(new Set(['bf16']));

    const broken = async (edit: (f: Record<string, Buffer | object>) => void, code: Parameters<typeof expectFormatError>[1]) => {
      const copy = { ...files, 'model.safetensors.index.json': { weight_map: { ...weightMap } } } as Record<string, Buffer | object>;
      edit(copy);
      await expectFormatError(safetensorsFormat.read(folder('broken', copy)), code);
    };
    const map = (f: Record<string, Buffer | object>) => (f['model.safetensors.index.json'] as { weight_map: Record<string, string> }).weight_map;
    await broken((f) => void (map(f)['model.norm.weight'] = 'model-00001-of-00002.safetensors'), 'BAD_NAME');
    await broken((f) => void (map(f)['model.extra'] = 'model-00002-of-00002.safetensors'), 'MISSING_TENSOR');
    await broken((f) => void (map(f)['model.norm.weight'] = '../model-00002-of-00002.safetensors'), 'BAD_NAME');
    await broken((f) => void delete f['model-00002-of-00002.safetensors'], 'MISSING_TENSOR');
    await broken((f) => void (f['model-00002-of-00002.safetensors'] = buildFile([...second, entries[0]])), 'BAD_NAME');
    await broken((f) => void (f['model.safetensors.index.json'] = { weight_map: [1, 2] }), 'BAD_HEADER');
  });

  test('BERT with sentence-transformers files: bert. prefix, gamma/beta, buffers and MLM head normalised', async () => {
    const dir = folder('bert', { 'config.json': BERT_CONFIG, 'model.safetensors': buildFile(bertEntries()), ...ST_FILES });
    const w = await read(dir);
    const c = w.config as BertConfig;
    expect(c).toEqual({
      architecture: 'bert',
      hiddenSize: 8,
      numLayers: 1,
      numHeads: 2,
      intermediateSize: 12,
      vocabSize: 20,
      maxPositionEmbeddings: 16,
      typeVocabSize: 2,
      layerNormEps: 1e-12,
      hiddenAct: 'gelu',
      maxSeqLength: 12,
      pooling: 'cls',
      normalize: true,
    });
    const names = w.tensors.map((t) => t.name);
    expect(names).toContain('embeddings.LayerNorm.weight');
    expect(names).toContain('embeddings.LayerNorm.bias');
    expect(names).toContain('encoder.layer.0.attention.self.query.weight');
    expect(names).toContain('pooler.dense.weight');
    expect(names.some((n) => n.startsWith('bert.') || n.startsWith('cls.') || n.includes('position_ids') || n.endsWith('gamma'))).toBe(false);
    expect(names).toHaveLength(bertEntries().length - 2);

    // Round trip: the config (pooling, normalize, max_seq_length) survives; the second write is identical.
    const out = newDir('bert-out');
    await safetensorsFormat.write!(w, path.join(out, 'model.safetensors'));
    expect(listFiles(out)).toEqual(['1_Pooling/config.json', 'config.json', 'model.safetensors', 'modules.json', 'sentence_bert_config.json']);
    const back = await read(out);
    expect(back.config).toEqual(c);
    for (const t of back.tensors) expect(bytesOf(t).equals(bytesOf(findTensor(w, t.name)!))).toBe(true);
    const again = newDir('bert-again');
    await safetensorsFormat.write!(back, path.join(again, 'model.safetensors'));
    for (const f of listFiles(out)) expect(fs.readFileSync(path.join(again, f)).equals(fs.readFileSync(path.join(out, f)))).toBe(true);
  });

  test('BERT without sentence-transformers files: mean pooling, no normalisation, max_seq_length = positions', async () => {
    const c = (await read(folder('bert-plain', { 'config.json': BERT_CONFIG, 'model.safetensors': buildFile(bertEntries()) }))).config as BertConfig;
    expect([c.pooling, c.normalize, c.maxSeqLength]).toEqual(['mean', false, 16]);
  });

  test('another architecture reads as unknown with the file names', async () => {
    const w = await read(folder('gpt2', { 'config.json': { model_type: 'gpt2', architectures: ['GPT2LMHeadModel'] }, 'model.safetensors': buildFile([{ name: 'h.0.attn.c_attn.weight', dtype: 'F32', shape: [2, 6] }]) }));
    expect([w.architecture, w.tensors.map((t) => t.name)]).toEqual(['unknown', ['h.0.attn.c_attn.weight']]);
  });

  test('a transposed source view is written in canonical orientation', async () => {
    const npy = path.join(newDir('fortran'), 'w.npy');
    // numpy.save(np.asfortranarray(np.arange(6, dtype='<f4').reshape(2, 3)))
    fs.writeFileSync(npy, Buffer.from('k05VTVBZAQB2AHsnZGVzY3InOiAnPGY0JywgJ2ZvcnRyYW5fb3JkZXInOiBUcnVlLCAnc2hhcGUnOiAoMiwgMyksIH0gICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgICAgIAoAAAAAAABAQAAAgD8AAIBAAAAAQAAAoEA=', 'base64'));
    const src = await track(npyFormat.read(npy));
    const out = path.join(newDir('fortran-out'), 'w.safetensors');
    await safetensorsFormat.write!(src, out);
    const w = await read(out);
    expect(w.tensors[0].shape).toEqual([2, 3]);
    expect(Array.from(readF32(w.tensors[0], 0, 6))).toEqual([0, 1, 2, 3, 4, 5]);
  });
});

describe('corrupted files', () => {
  const f32 = (n: number) => Buffer.alloc(4 * n);
  const cases: [string, () => Buffer, Parameters<typeof expectFormatError>[1]][] = [
    ['an absurd header length (refused before allocating)', () => { const b = Buffer.alloc(16); b.writeBigUInt64LE(1n << 40n); return b; }, 'BAD_HEADER'],
    ['a header longer than the file', () => { const b = rawFile({}, Buffer.alloc(0)); b.writeBigUInt64LE(BigInt(b.length), 0); return b; }, 'TRUNCATED'],
    ['a file shorter than the length field', () => Buffer.alloc(5), 'TRUNCATED'],
    ['a header that is not JSON', () => { const b = rawFile({ a: 1 }, Buffer.alloc(0)); b.write('{"a', 8, 'latin1'); b.write('!', 12, 'latin1'); return b; }, 'BAD_HEADER'],
    ['a JSON array header', () => rawFile([1, 2], Buffer.alloc(0)), 'BAD_HEADER'],
    ['a gap between tensors', () => rawFile({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] }, b: { dtype: 'F32', shape: [1], data_offsets: [8, 12] } }, f32(3)), 'BAD_HEADER'],
    ['overlapping tensors', () => rawFile({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] }, b: { dtype: 'F32', shape: [1], data_offsets: [4, 8] } }, f32(2)), 'OVERLAP'],
    ['bytes after the last tensor', () => rawFile({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, f32(2)), 'TRAILING_DATA'],
    ['data cut short', () => rawFile({ a: { dtype: 'F32', shape: [2], data_offsets: [0, 8] } }, f32(1)), 'TRUNCATED'],
    ['a byte range that is not numel x size', () => rawFile({ a: { dtype: 'F32', shape: [3], data_offsets: [0, 8] } }, f32(2)), 'SHAPE_MISMATCH'],
    ['reversed data_offsets', () => rawFile({ a: { dtype: 'F32', shape: [0], data_offsets: [4, 0] } }, f32(1)), 'BAD_HEADER'],
    ['fractional data_offsets', () => rawFile({ a: { dtype: 'F32', shape: [1], data_offsets: [0, 4.5] } }, f32(1)), 'BAD_HEADER'],
    ['a negative dimension', () => rawFile({ a: { dtype: 'F32', shape: [-1], data_offsets: [0, 0] } }, Buffer.alloc(0)), 'BAD_HEADER'],
    ['an unknown dtype', () => rawFile({ a: { dtype: 'Q4', shape: [1], data_offsets: [0, 1] } }, Buffer.alloc(1)), 'BAD_DTYPE'],
    ['an fp8 dtype', () => rawFile({ a: { dtype: 'F8_E4M3', shape: [1], data_offsets: [0, 1] } }, Buffer.alloc(1)), 'UNSUPPORTED'],
    ['non-string metadata', () => rawFile({ __metadata__: { n: 1 } }, Buffer.alloc(0)), 'BAD_HEADER'],
    ['an empty tensor name', () => rawFile({ '': { dtype: 'F32', shape: [1], data_offsets: [0, 4] } }, f32(1)), 'BAD_NAME'],
    ['a header that is not UTF-8', () => { const b = rawFile({ ab: { dtype: 'U8', shape: [0], data_offsets: [0, 0] } }, Buffer.alloc(0)); b[10] = 0xff; return b; }, 'BAD_HEADER'],
  ];
  test.each(cases)('%s', async (_what, make, code) => {
    const file = path.join(newDir('bad'), 'x.safetensors');
    fs.writeFileSync(file, make());
    await expectFormatError(safetensorsFormat.read(file), code);
  });

  const llamaDir = (edit: (config: Record<string, unknown>, entries: Entry[]) => void) => {
    const config: Record<string, unknown> = { ...QWEN3_CONFIG };
    const entries = qwen3Entries();
    edit(config, entries);
    return folder('cfg', { 'config.json': config, 'model.safetensors': buildFile(entries) });
  };
  const configCases: [string, (c: Record<string, unknown>, e: Entry[]) => void, Parameters<typeof expectFormatError>[1]][] = [
    ['rope scaling', (c) => void (c.rope_scaling = { rope_type: 'yarn', factor: 4 }), 'UNSUPPORTED'],
    ['attention biases', (c) => void (c.attention_bias = true), 'UNSUPPORTED'],
    ['another activation', (c) => void (c.hidden_act = 'gelu'), 'UNSUPPORTED'],
    ['a missing size', (c) => void delete c.hidden_size, 'CONFIG_MISMATCH'],
    ['a size of the wrong type', (c) => void (c.num_hidden_layers = '2'), 'BAD_HEADER'],
    ['heads not divisible by kv heads', (c) => void (c.num_key_value_heads = 3), 'CONFIG_MISMATCH'],
    ['a tensor shape that disagrees', (c) => void (c.intermediate_size = 25), 'SHAPE_MISMATCH'],
    ['a missing tensor', (_c, e) => void e.splice(3, 1), 'MISSING_TENSOR'],
    ['a missing head when untied', (c) => void (c.tie_word_embeddings = false), 'MISSING_TENSOR'],
    ['an unknown tensor', (_c, e) => void e.push({ name: 'model.layers.0.self_attn.q_proj.bias', dtype: 'BF16', shape: [24] }), 'BAD_NAME'],
    ['an integer weight', (_c, e) => void (e[1] = { ...e[1], dtype: 'I32' }), 'BAD_DTYPE'],
  ];
  test.each(configCases)('config: %s', async (_what, edit, code) => {
    await expectFormatError(safetensorsFormat.read(llamaDir(edit)), code);
  });

  test('config.json that is not JSON', async () => {
    const dir = folder('badjson', { 'model.safetensors': buildFile(qwen3Entries()) });
    fs.writeFileSync(path.join(dir, 'config.json'), '{"model_type": "qwen3",');
    await expectFormatError(safetensorsFormat.read(dir), 'BAD_HEADER');
  });

  test('a folder without weights', async () => {
    await expectFormatError(safetensorsFormat.read(folder('empty', { 'config.json': QWEN3_CONFIG })), 'MISSING_TENSOR');
  });

  test('detect()', () => {
    const file = (head: Buffer) => ({ path: 'x', isDirectory: false, head, entries: [] });
    expect(safetensorsFormat.detect(file(Buffer.from(REFERENCE, 'base64').subarray(0, 64)))).toBe(true);
    expect(safetensorsFormat.detect(file(Buffer.from('GGUF\x03\x00\x00\x00\x00\x00\x00\x00')))).toBe(false);
    expect(safetensorsFormat.detect({ path: 'd', isDirectory: true, head: Buffer.alloc(0), entries: ['config.json', 'model.safetensors.index.json'] })).toBe(true);
  });
});
