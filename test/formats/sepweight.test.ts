/**
 * sepweight trees: part specs, the stories260K tree (config, names, partial loads that provably
 * touch only the folders asked for), both key schemes, inference without config.json, the writer
 * (the tree converted from stories260K.bin or .gguf equals the fixture tree file for file) and
 * corrupted trees.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { ggufFormat } from '../../lib/formats/containers/gguf-format';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { encodeNpyHeader, parseNpyHeader } from '../../lib/formats/containers/npy';
import { parsePartSpec, sepweightFormat, specLayers } from '../../lib/formats/containers/sepweight';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, findTensor, type ModelWeights, type TokenizerData } from '../../lib/addon/weights';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { tempDir } from '../helpers/fixtures';
import { bytesOf, expectFormatError, listFiles, STORIES_BIN, STORIES_GGUF, STORIES_TREE, TOK512 } from './userfmt-helpers';

const tmp = tempDir('weightmap-sepweight-');
afterAll(() => tmp.cleanup());
const opened: ModelWeights[] = [];
afterEach(() => opened.splice(0).forEach(closeWeights));
async function read(root: string, parts?: string): Promise<ModelWeights> {
  const w = await sepweightFormat.read(root, parts === undefined ? {} : { parts });
  opened.push(w);
  return w;
}
let counter = 0;
/** A writable copy of the fixture tree (its tokenizer path ../tok512.bin then points nowhere). */
function copyTree(): string {
  const dst = path.join(tmp.dir, `tree-${counter++}`);
  fs.cpSync(STORIES_TREE, dst, { recursive: true });
  for (const f of listFiles(dst)) fs.chmodSync(path.join(dst, f), 0o644);
  for (const d of [dst, ...listFiles(dst).map((f) => path.dirname(path.join(dst, f)))]) fs.chmodSync(d, 0o755);
  return dst;
}

const LAYER_STEMS = [
  'input_layernorm.weight',
  'mlp.down_proj.weight',
  'mlp.gate_proj.weight',
  'mlp.up_proj.weight',
  'post_attention_layernorm.weight',
  'self_attn.k_proj.weight',
  'self_attn.o_proj.weight',
  'self_attn.q_proj.weight',
  'self_attn.v_proj.weight',
];
const layerNames = (l: number) => LAYER_STEMS.map((s) => `model.layers.${l}.${s}`);

describe('part specs', () => {
  test.each([
    ['f', { full: true, begin: true, end: true, ranges: [] }],
    ['b 0-5', { full: false, begin: true, end: false, ranges: [[0, 5]] }],
    ['7-12', { full: false, begin: false, end: false, ranges: [[7, 12]] }],
    ['75-80 e', { full: false, begin: false, end: true, ranges: [[75, 80]] }],
    ['0-5 50-55', { full: false, begin: false, end: false, ranges: [[0, 5], [50, 55]] }],
    ['b', { full: false, begin: true, end: false, ranges: [] }],
    ['e', { full: false, begin: false, end: true, ranges: [] }],
    ['  b  0-2   2-4 e ', { full: false, begin: true, end: true, ranges: [[0, 2], [2, 4]] }],
  ])('%j', (spec, expected) => {
    expect(parsePartSpec(spec)).toEqual(expected);
  });

  test.each(['', '   ', 'x', 'f b', 'b 1-5', '5-5', '5-3', 'e 0-5', '0-5 b', '0-5 3-7', '4-6 0-2', '1--2', '-1-2', '01-3', '1-2-3', 'b b', '0-5 e e', '1.5-3', 'B 0-5'])(
    'rejects %j',
    (spec) => {
      expect(() => parsePartSpec(spec)).toThrow(RangeError);
    },
  );

  test('layer selection is half-open and bounded by the tree', () => {
    expect(specLayers(parsePartSpec('b 0-2 3-5'), 5)).toEqual([0, 1, 3, 4]);
    expect(specLayers(parsePartSpec('f'), 3)).toEqual([0, 1, 2]);
    expect(() => specLayers(parsePartSpec('3-6'), 5)).toThrow(RangeError);
  });
});

describe('the stories260K tree', () => {
  test('full read: config.json, canonical names, the llama2.c tokenizer it points to', async () => {
    const w = await read(STORIES_TREE);
    expect([w.format, w.architecture, w.metadata.keyScheme]).toEqual(['sepweight', 'llama', 'hf']);
    expect(w.config).toEqual({
      architecture: 'llama',
      hiddenSize: 64,
      intermediateSize: 172,
      numLayers: 5,
      numHeads: 8,
      numKvHeads: 4,
      headDim: 8,
      vocabSize: 512,
      maxSeqLen: 512,
      rmsNormEps: 1e-5,
      ropeTheta: 10000,
      ropePairing: 'half',
      tieWordEmbeddings: true,
      qkNorm: false,
      bosTokenId: 1,
      eosTokenIds: [2],
    });
    const names = w.tensors.map((t) => t.name);
    expect(names).toEqual(['model.embed_tokens.weight', ...[0, 1, 2, 3, 4].flatMap(layerNames), 'lm_head.weight', 'model.norm.weight']);
    expect(w.sources).toHaveLength(48);
    // end/lm_head.weight.npy is a copy of the embedding.
    expect(bytesOf(findTensor(w, 'lm_head.weight')!).equals(bytesOf(findTensor(w, 'model.embed_tokens.weight')!))).toBe(true);
    const tok = w.tokenizer as Extract<TokenizerData, { kind: 'scored' }>;
    expect([tok.kind, tok.style, tok.tokens.length]).toEqual(['scored', 'llama2c', 512]);
    expect(Buffer.from(tok.tokens[300]).toString()).toBe(' ha');
    expect(w.metadata.parts).toEqual({ spec: 'f', begin: true, end: true, layers: [0, 1, 2, 3, 4] });
  });

  test.each([
    ['b 0-2', ['model.embed_tokens.weight', ...layerNames(0), ...layerNames(1)]],
    ['1-3 e', [...layerNames(1), ...layerNames(2), 'lm_head.weight', 'model.norm.weight']],
    ['3-5', [...layerNames(3), ...layerNames(4)]],
    ['0-1 4-5', [...layerNames(0), ...layerNames(4)]],
    ['b', ['model.embed_tokens.weight']],
    ['e', ['lm_head.weight', 'model.norm.weight']],
  ])('parts %j map exactly their tensors, with the same bytes as a full read', async (spec, names) => {
    const part = await read(STORIES_TREE, spec);
    const full = await read(STORIES_TREE);
    expect(part.tensors.map((t) => t.name)).toEqual(names);
    expect(part.sources).toHaveLength(names.length);
    expect(part.config).toEqual(full.config);
    for (const t of part.tensors) expect(bytesOf(t).equals(bytesOf(findTensor(full, t.name)!))).toBe(true);
  });

  test('a partial read never lists, stats or maps a folder it was not asked for', async () => {
    const root = copyTree();
    // Make the unwanted folders poison: any read of them would fail.
    for (const dir of ['start', 'mid/0', 'mid/3', 'mid/4']) {
      for (const f of fs.readdirSync(path.join(root, dir))) fs.writeFileSync(path.join(root, dir, f), 'not a numpy file');
    }
    /* eslint-disable @typescript-eslint/no-require-imports */
    const fsModule = require('node:fs') as typeof fs;
    const mapping = require('../../lib/addon/mapping') as typeof import('../../lib/addon/mapping');
    /* eslint-enable @typescript-eslint/no-require-imports */
    const spies = [
      jest.spyOn(fsModule, 'readdirSync'),
      jest.spyOn(fsModule, 'statSync'),
      jest.spyOn(fsModule, 'lstatSync'),
      jest.spyOn(fsModule, 'existsSync'),
      jest.spyOn(fsModule, 'readFileSync'),
      jest.spyOn(fsModule, 'openSync'),
      jest.spyOn(mapping, 'mapFile'),
    ];
    let w: ModelWeights;
    let calls: unknown[][][];
    try {
      w = await read(root, '1-3 e');
    } finally {
      // mockRestore() also clears the recorded calls: take them first.
      calls = spies.map((s) => [...(s.mock.calls as unknown[][])]);
      spies.forEach((s) => s.mockRestore());
    }
    const touched = calls.flat().map((c) => path.resolve(String(c[0])));
    const mapped = calls[6].map((c) => path.relative(root, String(c[0])));
    expect(touched.length).toBeGreaterThan(mapped.length);
    expect(mapped.sort()).toEqual([...LAYER_STEMS.map((s) => `mid/1/${s}.npy`), ...LAYER_STEMS.map((s) => `mid/2/${s}.npy`), 'end/lm_head.weight.npy', 'end/norm.weight.npy'].sort());
    for (const forbidden of ['start', 'mid/0', 'mid/3', 'mid/4']) {
      const dir = path.join(root, forbidden);
      expect(touched.filter((p) => p === dir || p.startsWith(dir + path.sep))).toEqual([]);
    }
    expect(w!.tensors).toHaveLength(20);
    // The poison is real: a full read fails on it.
    await expectFormatError(read(root), 'BAD_MAGIC');
  });

  test('asking for layers the tree does not have is a RangeError', async () => {
    await expect(read(STORIES_TREE, '3-7')).rejects.toThrow(RangeError);
    await expect(read(STORIES_TREE, 'garbage')).rejects.toThrow(RangeError);
  });
});

describe('key schemes and config inference', () => {
  test('a meta-scheme tree (tok_embeddings, attention.wq, feed_forward.w1, output) maps to the same canonical tensors', async () => {
    const root = copyTree();
    const rename: Record<string, string> = {
      'input_layernorm.weight': 'attention_norm.weight',
      'self_attn.q_proj.weight': 'attention.wq.weight',
      'self_attn.k_proj.weight': 'attention.wk.weight',
      'self_attn.v_proj.weight': 'attention.wv.weight',
      'self_attn.o_proj.weight': 'attention.wo.weight',
      'post_attention_layernorm.weight': 'ffn_norm.weight',
      'mlp.gate_proj.weight': 'feed_forward.w1.weight',
      'mlp.up_proj.weight': 'feed_forward.w3.weight',
      'mlp.down_proj.weight': 'feed_forward.w2.weight',
    };
    for (let l = 0; l < 5; l++) {
      for (const [from, to] of Object.entries(rename)) fs.renameSync(path.join(root, 'mid', String(l), `${from}.npy`), path.join(root, 'mid', String(l), `${to}.npy`));
    }
    fs.renameSync(path.join(root, 'start', 'embed_tokens.weight.npy'), path.join(root, 'start', 'tok_embeddings.weight.npy'));
    fs.renameSync(path.join(root, 'end', 'lm_head.weight.npy'), path.join(root, 'end', 'output.weight.npy'));
    // A Meta tree keeps Meta q/k order: without rope_pairing the scheme implies 'interleaved'.
    const config = JSON.parse(fs.readFileSync(path.join(root, 'config.json'), 'utf8'));
    delete config.sepweight_key_scheme;
    delete config.rope_pairing;
    fs.writeFileSync(path.join(root, 'config.json'), JSON.stringify(config));
    const meta = await read(root);
    const hf = await read(STORIES_TREE);
    expect(meta.metadata.keyScheme).toBe('meta');
    expect(meta.config).toEqual({ ...hf.config, ropePairing: 'interleaved' });
    expect(meta.tensors.map((t) => t.name).sort()).toEqual(hf.tensors.map((t) => t.name).sort());
    for (const t of meta.tensors) expect(bytesOf(t).equals(bytesOf(findTensor(hf, t.name)!))).toBe(true);
  });

  /** Writes a tree of zero-filled f32 .npy files. */
  function syntheticTree(files: Record<string, number[]>): string {
    const root = path.join(tmp.dir, `synthetic-${counter++}`);
    for (const [rel, shape] of Object.entries(files)) {
      fs.mkdirSync(path.dirname(path.join(root, rel)), { recursive: true });
      fs.writeFileSync(path.join(root, rel), Buffer.concat([encodeNpyHeader('f32', shape), Buffer.alloc(4 * shape.reduce((a, b) => a * b, 1))]));
    }
    return root;
  }
  const layer = (l: number, d: number, q: number, kv: number, f: number, qkNorm?: number) => ({
    [`mid/${l}/input_layernorm.weight.npy`]: [d],
    [`mid/${l}/self_attn.q_proj.weight.npy`]: [q, d],
    [`mid/${l}/self_attn.k_proj.weight.npy`]: [kv, d],
    [`mid/${l}/self_attn.v_proj.weight.npy`]: [kv, d],
    [`mid/${l}/self_attn.o_proj.weight.npy`]: [d, q],
    [`mid/${l}/post_attention_layernorm.weight.npy`]: [d],
    [`mid/${l}/mlp.gate_proj.weight.npy`]: [f, d],
    [`mid/${l}/mlp.up_proj.weight.npy`]: [f, d],
    [`mid/${l}/mlp.down_proj.weight.npy`]: [d, f],
    ...(qkNorm ? { [`mid/${l}/self_attn.q_norm.weight.npy`]: [qkNorm], [`mid/${l}/self_attn.k_norm.weight.npy`]: [qkNorm] } : {}),
  });

  test('without config.json: sizes from the shapes, head_dim 128, eps 1e-5, θ 10000, tied when end/ has no head', async () => {
    const root = syntheticTree({ 'start/embed_tokens.weight.npy': [10, 256], ...layer(0, 256, 256, 128, 48), ...layer(1, 256, 256, 128, 48), 'end/norm.weight.npy': [256] });
    const w = await read(root);
    expect(w.config).toEqual({
      architecture: 'llama',
      hiddenSize: 256,
      intermediateSize: 48,
      numLayers: 2,
      numHeads: 2,
      numKvHeads: 1,
      headDim: 128,
      vocabSize: 10,
      maxSeqLen: 2048,
      rmsNormEps: 1e-5,
      ropeTheta: 10000,
      ropePairing: 'half',
      tieWordEmbeddings: true,
      qkNorm: false,
    });
  });

  test('without config.json: q_norm gives Qwen3 and its head_dim; an end/ head unties', async () => {
    const root = syntheticTree({ 'start/embed_tokens.weight.npy': [10, 64], ...layer(0, 64, 128, 32, 48, 16), 'end/norm.weight.npy': [64], 'end/lm_head.weight.npy': [10, 64] });
    const c = (await read(root)).config as DecoderConfig;
    expect([c.architecture, c.qkNorm, c.headDim, c.numHeads, c.numKvHeads, c.tieWordEmbeddings]).toEqual(['qwen3', true, 16, 8, 2, false]);
  });

  test('without config.json the stories260K tree cannot be run (head_dim 8 is not inferable)', async () => {
    const root = copyTree();
    fs.rmSync(path.join(root, 'config.json'));
    await expectFormatError(read(root), 'CONFIG_MISMATCH');
  });

  test('a tree of another model (config.json not Llama/Qwen3) reads as unknown with path names', async () => {
    const root = syntheticTree({ 'start/word_embeddings.weight.npy': [4, 8], 'mid/0/self_attention.query_key_value.bias.npy': [24], 'end/ln_f.weight.npy': [8] });
    fs.writeFileSync(path.join(root, 'config.json'), JSON.stringify({ model_type: 'falcon' }));
    const w = await read(root);
    expect(w.architecture).toBe('unknown');
    expect(w.tensors.map((t) => t.name)).toEqual(['start/word_embeddings.weight', 'mid/0/self_attention.query_key_value.bias', 'end/ln_f.weight']);
  });
});

describe('corrupted trees', () => {
  const edits: [string, (root: string) => void, string, string | undefined][] = [
    ['an unknown file in a layer', (r) => fs.copyFileSync(path.join(r, 'end/norm.weight.npy'), path.join(r, 'mid/2/foo.weight.npy')), 'BAD_NAME', undefined],
    ['a missing layer file', (r) => fs.rmSync(path.join(r, 'mid/2/mlp.up_proj.weight.npy')), 'MISSING_TENSOR', undefined],
    ['a k_proj where q_proj belongs', (r) => fs.copyFileSync(path.join(r, 'mid/1/self_attn.k_proj.weight.npy'), path.join(r, 'mid/1/self_attn.q_proj.weight.npy')), 'SHAPE_MISMATCH', undefined],
    ['a layer folder that is not a number', (r) => fs.mkdirSync(path.join(r, 'mid/x')), 'BAD_NAME', undefined],
    ['a gap in the layer folders', (r) => fs.renameSync(path.join(r, 'mid/4'), path.join(r, 'mid/7')), 'MISSING_TENSOR', undefined],
    ['num_hidden_layers disagreeing with mid/', (r) => patchConfig(r, { num_hidden_layers: 6 }), 'CONFIG_MISMATCH', undefined],
    ['config.json that is not JSON', (r) => fs.writeFileSync(path.join(r, 'config.json'), '{"model_type": '), 'BAD_HEADER', undefined],
    ['an unknown key scheme', (r) => patchConfig(r, { sepweight_key_scheme: 'gguf' }), 'CONFIG_MISMATCH', undefined],
    ['an unknown rope pairing', (r) => patchConfig(r, { rope_pairing: 'spiral' }), 'CONFIG_MISMATCH', undefined],
    ['a corrupted .npy', (r) => fs.writeFileSync(path.join(r, 'mid/3/mlp.down_proj.weight.npy'), Buffer.from('\x93NUMPX')), 'BAD_MAGIC', undefined],
    ['a float64 weight', (r) => fs.writeFileSync(path.join(r, 'end/norm.weight.npy'), Buffer.concat([npyF8Header(), Buffer.alloc(64 * 8)])), 'BAD_DTYPE', undefined],
    ['a tied tree whose end/ has no head, read end-only', (r) => fs.rmSync(path.join(r, 'end/lm_head.weight.npy')), 'MISSING_TENSOR', 'e'],
  ];
  function patchConfig(root: string, patch: Record<string, unknown>): void {
    const file = path.join(root, 'config.json');
    fs.writeFileSync(file, JSON.stringify({ ...JSON.parse(fs.readFileSync(file, 'utf8')), ...patch }));
  }
  function npyF8Header(): Buffer {
    const h = encodeNpyHeader('f32', [64]);
    h.write("'<f8'", h.indexOf("'<f4'"), 'latin1');
    return h;
  }
  // Every row has four entries: jest treats a test function with more parameters than the row as taking `done`.
  test.each(edits)('%s', async (_what, edit, code, parts) => {
    const root = copyTree();
    edit(root);
    await expectFormatError(read(root, parts), code as Parameters<typeof expectFormatError>[1]);
  });

  test('the same tree without the head still reads whole (tied to the embedding)', async () => {
    const root = copyTree();
    fs.rmSync(path.join(root, 'end/lm_head.weight.npy'));
    const w = await read(root);
    expect(findTensor(w, 'lm_head.weight')).toBeUndefined();
    expect((w.config as DecoderConfig).tieWordEmbeddings).toBe(true);
  });
});

describe('sepweight writer', () => {
  const npyFiles = listFiles(STORIES_TREE).filter((f) => f.endsWith('.npy'));

  test.each([
    ['stories260K.bin (llama2.c, interleaved)', () => llama2cFormat.read(STORIES_BIN)],
    ['stories260K.gguf (llama.cpp, interleaved)', () => ggufFormat.read(STORIES_GGUF)],
  ])('from %s: every .npy equals the fixture tree bit for bit', async (_what, load) => {
    const src = await load();
    opened.push(src);
    const out = path.join(tmp.dir, `written-${counter++}`);
    await sepweightFormat.write!(src, out);
    // A llama2.c source also leaves its legacy RoPE tables in start/ (for the way back to .bin).
    const llama2cExtras = ['tokenizer.bin', 'start/freqs_cos.npy', 'start/freqs_sin.npy'];
    // Both sources carry the vocabulary (tokenizer.bin); only llama2.c has RoPE tables.
    const expected = [...npyFiles, 'config.json', ...(src.format === 'llama2c' ? llama2cExtras : ['tokenizer.bin'])].sort();
    expect(listFiles(out)).toEqual(expected);
    for (const f of npyFiles) expect([f, fs.readFileSync(path.join(out, f)).equals(fs.readFileSync(path.join(STORIES_TREE, f)))]).toEqual([f, true]);
    const config = JSON.parse(fs.readFileSync(path.join(out, 'config.json'), 'utf8'));
    const fixtureConfig = JSON.parse(fs.readFileSync(path.join(STORIES_TREE, 'config.json'), 'utf8'));
    for (const key of ['architectures', 'model_type', 'hidden_size', 'intermediate_size', 'num_hidden_layers', 'num_attention_heads', 'num_key_value_heads', 'head_dim', 'vocab_size', 'rms_norm_eps', 'rope_theta', 'hidden_act', 'bos_token_id', 'eos_token_id', 'torch_dtype', 'sepweight_key_scheme', 'rope_pairing']) {
      expect([key, config[key]]).toEqual([key, fixtureConfig[key]]);
    }
    if (src.format === 'llama2c') {
      expect(config.max_position_embeddings).toBe(512);
      expect(config.tie_word_embeddings).toBe(true);
      expect(fs.readFileSync(path.join(out, 'tokenizer.bin')).equals(fs.readFileSync(TOK512))).toBe(true);
    }
    // The written tree reads back as the fixture tree does, tokenizer included.
    const back = await read(out);
    const fixtureTree = await read(STORIES_TREE);
    expect(back.config).toEqual({ ...fixtureTree.config, maxSeqLen: src.format === 'gguf' ? 2048 : 512, tieWordEmbeddings: src.format === 'llama2c' });
  });

  test('round trip: read(write(x)) keeps config and tensors; writing that again gives identical files', async () => {
    const first = path.join(tmp.dir, `rt-a-${counter++}`);
    const second = path.join(tmp.dir, `rt-b-${counter++}`);
    const tree = await read(STORIES_TREE);
    await sepweightFormat.write!(tree, first);
    const back = await read(first);
    expect(back.config).toEqual(tree.config);
    expect(back.tensors.map((t) => t.name)).toEqual(tree.tensors.map((t) => t.name));
    for (const t of back.tensors) expect(bytesOf(t).equals(bytesOf(findTensor(tree, t.name)!))).toBe(true);
    await sepweightFormat.write!(back, second);
    const files = listFiles(first);
    expect(listFiles(second)).toEqual(files);
    for (const f of files) expect([f, fs.readFileSync(path.join(second, f)).equals(fs.readFileSync(path.join(first, f)))]).toEqual([f, true]);
  });

  test('float16 trees: <f2 files, the same config, values within half precision; progress reaches the total', async () => {
    const out = path.join(tmp.dir, `f16-${counter++}`);
    const tree = await read(STORIES_TREE);
    const progress: number[] = [];
    let total = 0;
    await sepweightFormat.write!(tree, out, { dtype: 'f16', onProgress: (p) => (progress.push(p.bytesWritten), (total = p.totalBytes)) });
    const back = await read(out);
    expect(back.config).toEqual(tree.config);
    const q = findTensor(back, 'model.layers.0.self_attn.q_proj.weight')!;
    expect(q.dtype).toBe('f16');
    expect(parseNpyHeader(q.source.bytes, q.source.path).descr).toBe('<f2');
    const a = readF32(findTensor(tree, q.name)!, 0, 4096);
    const b = readF32(q, 0, 4096);
    for (let i = 0; i < 4096; i++) expect(Math.abs(a[i] - b[i])).toBeLessThanOrEqual(Math.abs(a[i]) * 2 ** -11 + 2 ** -24);
    const onDisk = listFiles(out).filter((f) => f.endsWith('.npy')).reduce((s, f) => s + fs.statSync(path.join(out, f)).size, 0);
    expect(total).toBe(onDisk);
    expect(progress[progress.length - 1]).toBe(total);
    expect(progress.every((v, i) => i === 0 || v >= progress[i - 1])).toBe(true);
  });

  test('Q8_0 sources (llama2.c/ajc1 groups and ggml blocks) are dequantized as q × scale', async () => {
    const tree = await read(STORIES_TREE);
    // up_proj of layer 0 as q8_0 in groups of 64 (172 groups): q[i] = (i % 255) - 127, s[g] = (g + 1) / 1024.
    const n = 172 * 64;
    const q8 = Buffer.alloc(n + 172 * 4);
    for (let i = 0; i < n; i++) q8.writeInt8((i % 255) - 127, i);
    for (let g = 0; g < 172; g++) q8.writeFloatLE((g + 1) / 1024, n + 4 * g);
    // down_proj of layer 1 as ggml Q8_0: blocks of 34 bytes (f16 scale 0.25 = 0x3400, then 32 int8 = j - 16).
    const blocks = (64 * 172) / 32;
    const ggml = Buffer.alloc(blocks * 34);
    for (let b = 0; b < blocks; b++) {
      ggml.writeUInt16LE(0x3400, b * 34);
      for (let j = 0; j < 32; j++) ggml.writeInt8(j - 16, b * 34 + 2 + j);
    }
    const dir = path.join(tmp.dir, `q8-src-${counter++}`);
    fs.mkdirSync(dir);
    fs.writeFileSync(path.join(dir, 'q8.bin'), q8);
    fs.writeFileSync(path.join(dir, 'ggml.bin'), ggml);
    const { mapFile } = await import('../../lib/addon/mapping');
    const q8src = mapFile(path.join(dir, 'q8.bin'));
    const ggmlSrc = mapFile(path.join(dir, 'ggml.bin'));
    const up = 'model.layers.0.mlp.up_proj.weight';
    const down = 'model.layers.1.mlp.down_proj.weight';
    const weights: ModelWeights = {
      ...tree,
      tensors: tree.tensors.map((t) => {
        if (t.name === up) return { ...t, dtype: 'q8_0' as const, source: q8src, byteOffset: 0, byteLength: n, scales: { byteOffset: n, byteLength: 172 * 4, groupSize: 64 } };
        if (t.name === down) return { ...t, dtype: 'ggml_q8_0' as const, source: ggmlSrc, byteOffset: 0, byteLength: ggml.length };
        return t;
      }),
      sources: [...tree.sources, q8src, ggmlSrc],
    };
    const out = path.join(tmp.dir, `q8-${counter++}`);
    await sepweightFormat.write!(weights, out);
    const back = await read(out);
    const upValues = readF32(findTensor(back, up)!, 0, n);
    for (const i of [0, 1, 63, 64, 5000, n - 1]) expect(upValues[i]).toBe(Math.fround((((i % 255) - 127) * (Math.floor(i / 64) + 1)) / 1024));
    const downValues = readF32(findTensor(back, down)!, 0, 64 * 172);
    for (const i of [0, 31, 32, 1000, 64 * 172 - 1]) expect(downValues[i]).toBe(((i % 32) - 16) * 0.25);
    q8src.close();
    ggmlSrc.close();
  });

  test('refuses non-decoders and non-empty output folders', async () => {
    const tree = await read(STORIES_TREE);
    await expect(sepweightFormat.write!({ ...tree, config: { architecture: 'unknown' } }, path.join(tmp.dir, 'u'))).rejects.toThrow(/Llama\/Qwen2\/Qwen3\/.*Gptoss decoders, not unknown/);
    const busy = path.join(tmp.dir, `busy-${counter++}`);
    fs.mkdirSync(busy);
    fs.writeFileSync(path.join(busy, 'x'), 'x');
    await expect(sepweightFormat.write!(tree, busy)).rejects.toThrow(RangeError);
  });
});
