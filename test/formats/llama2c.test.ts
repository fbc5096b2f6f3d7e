/**
 * llama2.c checkpoints: the real stories260K.bin (v0) against its layout written out from
 * export.py, against the GGUF copy (bit-identical, Meta q/k order) and the sepweight tree (HF q/k
 * order); "ak42" v1/v2 files built here from export.py's layout; the tokenizer; the v0 writer
 * (byte-identical to the original file) and corrupted copies.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { WeightFormatErrorCode } from '../../lib/base/errors';
import { ggufFormat } from '../../lib/formats/containers/gguf-format';
import { llama2cFormat } from '../../lib/formats/containers/llama2c';
import { encodeLlama2cTokenizer, readLlama2cTokenizer } from '../../lib/formats/vocabulary/llama2c-tokenizer';
import { sepweightFormat } from '../../lib/formats/containers/sepweight';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, findTensor, type ModelWeights, type TokenizerData } from '../../lib/addon/weights';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { fixture, tempDir } from '../helpers/fixtures';
import {
  bufferToF32,
  bytesOf,
  expectFormatError,
  f32Bytes,
  f32Of,
  metaToHf,
  STORIES_BIN,
  STORIES_CONFIG,
  STORIES_GGUF,
  STORIES_TREE,
  storiesBinLayout,
  TOK512,
  writeEdited,
} from './userfmt-helpers';

const tmp = tempDir('weightmap-llama2c-');
afterAll(() => tmp.cleanup());
const opened: ModelWeights[] = [];
afterEach(() => opened.splice(0).forEach(closeWeights));
async function track(p: Promise<ModelWeights>): Promise<ModelWeights> {
  const w = await p;
  opened.push(w);
  return w;
}
let counter = 0;
const tmpFile = (name: string) => path.join(tmp.dir, `${counter++}-${name}`);

describe('llama2.c v0: stories260K.bin', () => {
  test('header, config and tensor list', async () => {
    const w = await track(llama2cFormat.read(STORIES_BIN));
    const c = w.config as DecoderConfig;
    expect(w.format).toBe('llama2c');
    expect(w.architecture).toBe('llama');
    expect(c).toEqual({
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
      ropePairing: 'interleaved',
      tieWordEmbeddings: true,
      qkNorm: false,
      bosTokenId: 1,
      eosTokenIds: [2],
    });
    // Shared classifier: no lm_head; 1 + 9 per layer + final norm.
    expect(w.tensors).toHaveLength(1 + 9 * 5 + 1);
    expect(findTensor(w, 'lm_head.weight')).toBeUndefined();
    const { ranges, freqCis } = storiesBinLayout();
    for (const t of w.tensors) {
      expect(t.dtype).toBe('f32');
      expect([t.byteOffset, t.byteOffset + t.byteLength]).toEqual(ranges.get(t.name));
    }
    expect(findTensor(w, 'model.layers.0.self_attn.q_proj.weight')!.shape).toEqual([64, 64]);
    expect(findTensor(w, 'model.layers.0.self_attn.k_proj.weight')!.shape).toEqual([32, 64]);
    expect(findTensor(w, 'model.layers.4.mlp.down_proj.weight')!.shape).toEqual([64, 172]);
    expect(findTensor(w, 'model.layers.4.mlp.up_proj.weight')!.shape).toEqual([172, 64]);
    // The legacy tables: freqs_cos then freqs_sin, f32 [seq_len, head_size / 2] each.
    const half = (freqCis[1] - freqCis[0]) / 2;
    const tables = w.metadata.ropeTables as { cos: { byteOffset: number; byteLength: number; shape: number[] }; sin: { byteOffset: number; byteLength: number; shape: number[] } };
    expect([tables.cos.byteOffset, tables.cos.byteLength, tables.cos.shape]).toEqual([freqCis[0], half, [512, 4]]);
    expect([tables.sin.byteOffset, tables.sin.byteLength, tables.sin.shape]).toEqual([freqCis[0] + half, half, [512, 4]]);
    expect(freqCis[1]).toBe(fs.statSync(STORIES_BIN).size);
  });

  test('tok512.bin beside the checkpoint is found and read', async () => {
    const w = await track(llama2cFormat.read(STORIES_BIN));
    const tok = w.tokenizer as Extract<TokenizerData, { kind: 'scored' }>;
    expect(tok.kind).toBe('scored');
    expect(tok.style).toBe('llama2c');
    expect(tok.tokens).toHaveLength(512);
    expect(tok.maxTokenLength).toBe(7);
    expect(Buffer.from(tok.tokens[1]).toString()).toBe('\n<s>\n');
    expect([tok.bosId, tok.eosId]).toEqual([1, 2]);
    expect(w.metadata.tokenizerPath).toBe(TOK512);
  });

  test('the tensors are bit-identical to the GGUF copy (both Meta q/k order)', async () => {
    const bin = await track(llama2cFormat.read(STORIES_BIN));
    const gguf = await track(ggufFormat.read(STORIES_GGUF));
    for (const t of bin.tensors) expect(bytesOf(findTensor(gguf, t.name)!).equals(bytesOf(t))).toBe(true);
    // The GGUF stores the (equal) classifier explicitly.
    expect(bytesOf(findTensor(gguf, 'lm_head.weight')!).equals(bytesOf(findTensor(bin, 'model.embed_tokens.weight')!))).toBe(true);
  });

  test('the sepweight tree holds the same values, q/k rows in HF order', async () => {
    const bin = await track(llama2cFormat.read(STORIES_BIN));
    const tree = await track(sepweightFormat.read(STORIES_TREE));
    const { heads, kvHeads, headDim, dim } = STORIES_CONFIG;
    for (const t of bin.tensors) {
      const other = findTensor(tree, t.name)!;
      let expected = f32Of(t);
      if (t.name.endsWith('q_proj.weight')) expected = metaToHf(expected, heads, headDim, dim);
      if (t.name.endsWith('k_proj.weight')) expected = metaToHf(expected, kvHeads, headDim, dim);
      expect(bytesOf(other).equals(f32Bytes(expected))).toBe(true);
    }
  });
});

describe('llama2.c tokenizers', () => {
  test('tok512.bin read standalone: 512 entries to the end of the file, round trip to the same bytes', () => {
    const tok = readLlama2cTokenizer(TOK512) as Extract<TokenizerData, { kind: 'scored' }>;
    expect(tok.tokens).toHaveLength(512);
    expect(Buffer.from(tok.tokens[300]).toString()).toBe(' ha');
    expect(tok.scores[300]).toBe(-41);
    expect(encodeLlama2cTokenizer(tok).equals(fs.readFileSync(TOK512))).toBe(true);
  });

  test('the Llama 2 tokenizer.bin equals the llama-spm GGUF vocabulary (U+2581 as space, ids 1/2 aside)', async () => {
    const tok = readLlama2cTokenizer(fixture('tokenizers', 'llama2c', 'tokenizer.bin')) as Extract<TokenizerData, { kind: 'scored' }>;
    expect([tok.tokens.length, tok.maxTokenLength]).toEqual([32000, 27]);
    const gguf = await track(ggufFormat.read(fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-llama-spm.gguf')));
    const g = gguf.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    const differing: number[] = [];
    for (let i = 0; i < 32000; i++) {
      const text = i === 1 ? '\n<s>\n' : i === 2 ? '\n</s>\n' : g.tokens[i].replace(/\u2581/g, ' ');
      if (!Buffer.from(tok.tokens[i]).equals(Buffer.from(text, 'utf8'))) differing.push(i);
    }
    // Token 30143 is U+FEFF: a decoder that drops byte-order marks would lose it.
    expect(g.tokens[30143]).toBe('\ufeff');
    expect(differing).toEqual([]);
    expect(Buffer.from(tok.scores.buffer).equals(Buffer.from(g.scores!.buffer))).toBe(true);
  });

  test('corrupted tokenizers', () => {
    const bad = (edit: (b: Buffer) => Buffer | void) => writeEdited(TOK512, tmpFile('tok.bin'), edit);
    expect(() => readLlama2cTokenizer(bad((b) => b.subarray(0, b.length - 1)))).toThrow(expect.objectContaining({ code: 'TRUNCATED' }));
    expect(() => readLlama2cTokenizer(bad((b) => void b.writeInt32LE(0, 0)))).toThrow(expect.objectContaining({ code: 'BAD_HEADER' }));
    // Token 0's length field set above max_token_length.
    expect(() => readLlama2cTokenizer(bad((b) => void b.writeInt32LE(8, 8)))).toThrow(expect.objectContaining({ code: 'BAD_HEADER' }));
    // Reading a fixed vocabulary size stops there; asking for more than the file holds is a truncation.
    expect((readLlama2cTokenizer(TOK512, 100) as { tokens: unknown[] }).tokens).toHaveLength(100);
    expect(() => readLlama2cTokenizer(TOK512, 513)).toThrow(expect.objectContaining({ code: 'TRUNCATED' }));
  });
});

/**
 * An "ak42" checkpoint laid out as export.py's version1_export / version2_export write it, for a
 * tiny model: dim 8, hidden 16, 2 layers, 2 heads, 1 kv head, vocab 6, seq 4.
 */
function ak42(version: 1 | 2, opts: { shared?: boolean; groupSize?: number } = {}) {
  const shared = opts.shared ?? true;
  const gs = opts.groupSize ?? 4;
  const [dim, hidden, layers, heads, kv, vocab, seq] = [8, 16, 2, 2, 1, 6, 4];
  const hs = dim / heads;
  const header = Buffer.alloc(256);
  header.writeUInt32LE(0x616b3432, 0);
  header.writeInt32LE(version, 4);
  [dim, hidden, layers, heads, kv, vocab, seq].forEach((v, i) => header.writeInt32LE(v, 8 + 4 * i));
  header[36] = shared ? 1 : 0;
  if (version === 2) header.writeInt32LE(gs, 37);
  let seed = 1;
  const next = () => ((seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31) - 0.5;
  const parts: Buffer[] = [header];
  const where = new Map<string, { offset: number; numel: number; scales?: number }>();
  let at = 256;
  const f32 = (name: string, n: number) => {
    const b = Buffer.alloc(4 * n);
    for (let i = 0; i < n; i++) b.writeFloatLE(next(), 4 * i);
    where.set(name, { offset: at, numel: n });
    parts.push(b);
    at += b.length;
  };
  const q8 = (name: string, n: number) => {
    const q = Buffer.alloc(n);
    for (let i = 0; i < n; i++) q.writeInt8(Math.round(next() * 254), i);
    const s = Buffer.alloc(4 * (n / gs));
    for (let i = 0; i < n / gs; i++) s.writeFloatLE(0.01 * (i + 1), 4 * i);
    where.set(name, { offset: at, numel: n, scales: at + n });
    parts.push(q, s);
    at += q.length + s.length;
  };
  const per = (suffix: string, n: number, write: (name: string, n: number) => void) => {
    for (let l = 0; l < layers; l++) write(`model.layers.${l}.${suffix}`, n);
  };
  per('input_layernorm.weight', dim, f32);
  per('post_attention_layernorm.weight', dim, f32);
  f32('model.norm.weight', dim);
  const mat = version === 1 ? f32 : q8;
  mat('model.embed_tokens.weight', vocab * dim);
  per('self_attn.q_proj.weight', dim * heads * hs, mat);
  per('self_attn.k_proj.weight', dim * kv * hs, mat);
  per('self_attn.v_proj.weight', dim * kv * hs, mat);
  per('self_attn.o_proj.weight', heads * hs * dim, mat);
  per('mlp.gate_proj.weight', dim * hidden, mat);
  per('mlp.down_proj.weight', hidden * dim, mat);
  per('mlp.up_proj.weight', dim * hidden, mat);
  if (!shared) mat('lm_head.weight', vocab * dim);
  return { bytes: Buffer.concat(parts), where };
}

describe('llama2.c "ak42" v1 (fp32) and v2 (Q8_0)', () => {
  test.each([
    [1, true],
    [2, true],
    [2, false],
  ] as const)('version %i, shared classifier %s: every tensor where export.py puts it', async (version, shared) => {
    const { bytes, where } = ak42(version, { shared });
    const file = tmpFile('ak42.bin');
    fs.writeFileSync(file, bytes);
    const w = await track(llama2cFormat.read(file));
    const c = w.config as DecoderConfig;
    expect([c.hiddenSize, c.intermediateSize, c.numLayers, c.numHeads, c.numKvHeads, c.headDim, c.vocabSize, c.maxSeqLen]).toEqual([8, 16, 2, 2, 1, 4, 6, 4]);
    expect(c.tieWordEmbeddings).toBe(shared);
    expect(c.groupSize).toBe(version === 2 ? 4 : undefined);
    expect(w.metadata.version).toBe(version);
    expect(w.tensors).toHaveLength(where.size);
    for (const t of w.tensors) {
      const loc = where.get(t.name)!;
      expect(t.byteOffset).toBe(loc.offset);
      if (loc.scales !== undefined) {
        expect(t.dtype).toBe('q8_0');
        expect(t.byteLength).toBe(loc.numel);
        expect(t.scales).toEqual({ byteOffset: loc.scales, byteLength: loc.numel, groupSize: 4 });
        // Dequantisation: element i = q[i] * s[i / GS].
        const values = readF32(t, 0, loc.numel);
        for (const i of [0, 5, loc.numel - 1]) {
          expect(values[i]).toBe(Math.fround(bytes.readInt8(loc.offset + i) * bytes.readFloatLE(loc.scales + 4 * Math.floor(i / 4))));
        }
      } else {
        expect(t.dtype).toBe('f32');
        expect(t.byteLength).toBe(4 * loc.numel);
      }
    }
  });

  test('the group size comes from the header, and must divide every quantized tensor', async () => {
    const eight = ak42(2, { groupSize: 8 });
    const file = tmpFile('gs8.bin');
    fs.writeFileSync(file, eight.bytes);
    const w = await track(llama2cFormat.read(file));
    expect(findTensor(w, 'model.embed_tokens.weight')!.scales).toEqual({ byteOffset: eight.where.get('model.embed_tokens.weight')!.scales, byteLength: (48 / 8) * 4, groupSize: 8 });
    // Built with 4-element groups but the header says 8: fewer scale bytes expected than present.
    const mislabelled = Buffer.from(ak42(2).bytes);
    mislabelled.writeInt32LE(8, 37);
    fs.writeFileSync(file, mislabelled);
    await expectFormatError(llama2cFormat.read(file), 'TRAILING_DATA');
    const odd = Buffer.from(ak42(2).bytes);
    odd.writeInt32LE(3, 37);
    fs.writeFileSync(file, odd);
    await expectFormatError(llama2cFormat.read(file), 'CONFIG_MISMATCH');
  });

  test('corrupted headers', async () => {
    const good = ak42(2).bytes;
    const bad = async (edit: (b: Buffer) => Buffer | void, code: Parameters<typeof expectFormatError>[1]) => {
      const b = Buffer.from(good);
      const file = tmpFile('bad.bin');
      fs.writeFileSync(file, edit(b) ?? b);
      await expectFormatError(llama2cFormat.read(file), code);
    };
    await bad((b) => void b.writeInt32LE(3, 4), 'BAD_VERSION');
    await bad((b) => void (b[36] = 2), 'BAD_HEADER');
    await bad((b) => void b.writeInt32LE(0, 37), 'CONFIG_MISMATCH');
    await bad((b) => void b.writeInt32LE(-6, 28), 'CONFIG_MISMATCH'); // negative vocab is a v0 convention only
    await bad((b) => b.subarray(0, 200), 'TRUNCATED');
    await bad((b) => b.subarray(0, b.length - 1), 'TRUNCATED');
    await bad((b) => Buffer.concat([b, Buffer.alloc(4)]), 'TRAILING_DATA');
  });
});

describe('llama2.c v0 corruptions', () => {
  const bad = async (edit: (b: Buffer) => Buffer | void, code: Parameters<typeof expectFormatError>[1]) => {
    await expectFormatError(llama2cFormat.read(writeEdited(STORIES_BIN, tmpFile('bad.bin'), edit)), code);
  };
  const cases: [string, (b: Buffer) => Buffer | void, WeightFormatErrorCode][] = [
    ['a truncated file', (b: Buffer) => b.subarray(0, b.length - 4), 'TRUNCATED'],
    ['a file cut inside the header', (b: Buffer) => b.subarray(0, 20), 'TRUNCATED'],
    ['one extra byte', (b: Buffer) => Buffer.concat([b, Buffer.alloc(1)]), 'TRAILING_DATA'],
    ['dim 0', (b: Buffer) => void b.writeInt32LE(0, 0), 'CONFIG_MISMATCH'],
    ['n_heads not dividing dim', (b: Buffer) => void b.writeInt32LE(7, 12), 'CONFIG_MISMATCH'],
    ['n_kv_heads not dividing n_heads', (b: Buffer) => void b.writeInt32LE(3, 16), 'CONFIG_MISMATCH'],
    ['an absurd layer count', (b: Buffer) => void b.writeInt32LE(0x7fffffff, 8), 'CONFIG_MISMATCH'],
    // A negative vocab means a separate classifier, which this file does not have room for.
    ['a negative vocab_size', (b: Buffer) => void b.writeInt32LE(-512, 20), 'TRUNCATED'],
  ];
  test.each(cases)('%s', async (_what, edit, code) => {
    await bad(edit, code);
  });
});

describe('llama2.c v0 writer', () => {
  test('writing stories260K.bin back gives the identical file (legacy freq_cis blocks carried over)', async () => {
    const out = tmpFile('stories.bin');
    await llama2cFormat.write!(await track(llama2cFormat.read(STORIES_BIN)), out);
    expect(fs.readFileSync(out).equals(fs.readFileSync(STORIES_BIN))).toBe(true);
  });

  test('from the sepweight tree (HF order) the q/k rows go back to Meta order: every tensor byte equals the .bin', async () => {
    const out = tmpFile('from-tree.bin');
    await llama2cFormat.write!(await track(sepweightFormat.read(STORIES_TREE)), out);
    const mine = fs.readFileSync(out);
    const orig = fs.readFileSync(STORIES_BIN);
    expect(mine.length).toBe(orig.length);
    const { freqCis } = storiesBinLayout();
    // Header (vocab > 0: the tree's lm_head copy is recognised as shared) and every tensor.
    expect(mine.subarray(0, freqCis[0]).equals(orig.subarray(0, freqCis[0]))).toBe(true);
    // The freq_cis blocks are recomputed: cos/sin of pos * 10000^(-2i/hs), float32.
    const real = bufferToF32(mine.subarray(freqCis[0], freqCis[0] + 512 * 4 * 4));
    const imag = bufferToF32(mine.subarray(freqCis[0] + 512 * 4 * 4, freqCis[1]));
    expect(real[1 * 4 + 1]).toBe(Math.fround(Math.cos(1 / 10000 ** (2 / 8))));
    expect(imag[7 * 4 + 3]).toBe(Math.fround(Math.sin(7 / 10000 ** (6 / 8))));
    const origReal = bufferToF32(orig.subarray(freqCis[0], freqCis[0] + 512 * 4 * 4));
    for (let i = 0; i < real.length; i++) expect(Math.abs(real[i] - origReal[i])).toBeLessThan(1e-4);
  });

  test('round trip read(write(x)) keeps config and tensors; writing again is byte-identical', async () => {
    const gguf = await track(ggufFormat.read(STORIES_GGUF));
    const a = tmpFile('a.bin');
    await llama2cFormat.write!(gguf, a);
    const back = await track(llama2cFormat.read(a));
    // The GGUF's explicit output.weight equals the embedding, so the classifier is shared (as export.py decides).
    expect(back.config).toEqual({ ...gguf.config, tieWordEmbeddings: true });
    for (const t of back.tensors) expect(bytesOf(t).equals(bytesOf(findTensor(gguf, t.name)!))).toBe(true);
    // Elsewhere: a.bin's tokenizer.bin (written beside it, read with it) is an input of this write.
    const b = path.join(tmpFile('again'), 'b.bin');
    await llama2cFormat.write!(back, b);
    expect(fs.readFileSync(b).equals(fs.readFileSync(a))).toBe(true);
    expect(fs.readFileSync(path.join(path.dirname(b), 'tokenizer.bin')).equals(fs.readFileSync(path.join(path.dirname(a), 'tokenizer.bin')))).toBe(true);
  });

  test('an untied model gets a negative vocab_size and the classifier after freq_cis', async () => {
    const gguf = await track(ggufFormat.read(STORIES_GGUF));
    const head = findTensor(gguf, 'lm_head.weight')!;
    // A different classifier (the embedding with its rows reversed) cannot be shared.
    const reversed = Buffer.alloc(head.byteLength);
    for (let r = 0; r < 512; r++) bytesOf(head).copy(reversed, (511 - r) * 256, r * 256, (r + 1) * 256);
    const file = tmpFile('head.bin');
    fs.writeFileSync(file, reversed);
    const { mapFile } = await import('../../lib/addon/mapping');
    const src = mapFile(file);
    const untied: ModelWeights = {
      ...gguf,
      tensors: gguf.tensors.map((t) => (t.name === 'lm_head.weight' ? { ...t, source: src, byteOffset: 0 } : t)),
      sources: [...gguf.sources, src],
    };
    const out = tmpFile('untied.bin');
    await llama2cFormat.write!(untied, out);
    const bytes = fs.readFileSync(out);
    expect(bytes.readInt32LE(20)).toBe(-512);
    expect(bytes.subarray(bytes.length - reversed.length).equals(reversed)).toBe(true);
    const back = await track(llama2cFormat.read(out));
    expect((back.config as DecoderConfig).tieWordEmbeddings).toBe(false);
    expect(bytesOf(findTensor(back, 'lm_head.weight')!).equals(reversed)).toBe(true);
    src.close();
  });

  test('models llama2.c cannot hold are refused', async () => {
    const w = await track(llama2cFormat.read(STORIES_BIN));
    const c = w.config as DecoderConfig;
    await expect(llama2cFormat.write!({ ...w, config: { ...c, ropeTheta: 500000 } }, tmpFile('x.bin'))).rejects.toThrow(/θ = 10000/);
    await expect(llama2cFormat.write!({ ...w, config: { ...c, qkNorm: true } }, tmpFile('x.bin'))).rejects.toThrow(/q\/k norms/);
    await expect(llama2cFormat.write!({ ...w, config: { architecture: 'unknown' } }, tmpFile('x.bin'))).rejects.toThrow(/Llama/);
  });
});
