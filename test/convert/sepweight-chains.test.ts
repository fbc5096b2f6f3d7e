/**
 * Seed and user formats -> sepweight -> back, where the architecture fits (FORMATS.md §4, §7):
 * stories260K as llama2.c .bin and GGUF, the Qwen3 ajc1 fixture. The references are the fixture
 * files themselves.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { readWeights } from '../../lib/formats';
import { viewBytes } from '../../lib/formats/quantization/tensor-data';
import type { TokenizerData } from '../../lib/addon/weights';
import { UnsupportedError } from '../../lib/base/errors';
import { fixture } from '../helpers/fixtures';
import { listFiles, sameBytes } from './helpers';
import { testWorkspace } from '../helpers/workspace';

const BIN = fixture('llama-stories260k', 'stories260K.bin');
const GGUF = fixture('llama-stories260k', 'stories260K.gguf');
const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');

const { fresh, read } = testWorkspace('weightmap-sepweight-chains-');

/** The .bin's layout: 28-byte header, tensors, then freq_cis (2 × 512 × 4 f32) at the very end (shared classifier). */
const FREQ_CIS_BYTES = 2 * 512 * 4 * 4;

describe('stories260K: llama2.c <-> sepweight <-> GGUF', () => {
  test('.bin -> sepweight -> .bin is the original file byte for byte (its RoPE tables kept in start/)', async () => {
    const tree = fresh('tree');
    await convert(BIN, tree, { to: 'sepweight' });
    expect(listFiles(path.join(tree, 'start'))).toEqual(['embed_tokens.weight.npy', 'freqs_cos.npy', 'freqs_sin.npy']);
    const out = fresh('back.bin');
    await convert(tree, out, { to: 'llama2c' });
    expect(sameBytes(BIN, out).firstDifference).toBe(-1);
    // The tree without start/ (a node running layers only) still reads.
    const mid = await read(tree, (p) => readWeights(p, { parts: '1-3' }));
    expect(mid.metadata.ropeTables).toBeUndefined();
  });

  test('.bin -> sepweight -> GGUF: the tensors and vocabulary of stories260K.gguf', async () => {
    const tree = fresh('tree');
    await convert(BIN, tree, { to: 'sepweight' });
    const out = fresh('from-tree.gguf');
    await convert(tree, out, { to: 'gguf' });
    const mine = await read(out);
    const theirs = await read(GGUF);
    for (const t of theirs.tensors) {
      const m = mine.tensors.find((x) => x.name === t.name)!;
      expect([t.name, viewBytes(m).equals(viewBytes(t))]).toEqual([t.name, true]);
    }
    expect(mine.tensors).toHaveLength(theirs.tensors.length);
    const a = mine.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    const b = theirs.tokenizer as Extract<TokenizerData, { kind: 'gguf' }>;
    expect([a.tokens, a.scores, a.tokenTypes]).toEqual([b.tokens, b.scores, b.tokenTypes]);
  });

  test('GGUF -> sepweight -> .bin: header and every tensor byte of the original (freq_cis, which GGUF lacks, recomputed)', async () => {
    const tree = fresh('tree');
    await convert(GGUF, tree, { to: 'sepweight' });
    const out = fresh('from-gguf.bin');
    await convert(tree, out, { to: 'llama2c' });
    const mine = fs.readFileSync(out);
    const orig = fs.readFileSync(BIN);
    // The GGUF says context 2048 where the .bin says 512: seq_len (header int 6) and so the size of
    // the recomputed freq_cis blocks differ; everything else is the .bin's.
    const tensorsEnd = orig.length - FREQ_CIS_BYTES;
    expect([mine.readInt32LE(24), orig.readInt32LE(24)]).toEqual([2048, 512]);
    expect(mine.subarray(0, 24).equals(orig.subarray(0, 24))).toBe(true);
    expect(mine.subarray(28, tensorsEnd).equals(orig.subarray(28, tensorsEnd))).toBe(true);
    expect(mine.length).toBe(tensorsEnd + 4 * FREQ_CIS_BYTES);
  });
});

describe('Qwen3 ajc1 <-> sepweight', () => {
  test('ajc1 -> sepweight -> ajc1: checkpoint, .tokenizer and templates byte for byte; the tree reads with its tokenizer and templates', async () => {
    const tree = fresh('qtree');
    await convert(AJC1, tree, { to: 'sepweight' });
    expect(fs.readdirSync(tree).sort()).toEqual(
      ['config.json', 'end', 'mid', 'model.template', 'model.template.with-system', 'model.template.with-system-and-thinking', 'model.template.with-thinking', 'model.tokenizer', 'start', 'tokenizer.json', 'tokenizer_config.json'],
    );
    const w = await read(tree);
    expect(w.config).toMatchObject({ architecture: 'qwen3', qkNorm: true, headDim: 32, ropePairing: 'half', bosTokenId: 151643, eosTokenIds: [151645] });
    expect(w.tokenizer).toMatchObject({ kind: 'scored', style: 'ajc1', maxTokenLength: 128 });
    expect(w.metadata.templates).toMatchObject({ default: fs.readFileSync(`${AJC1}.template`, 'utf8') });
    // The fixture was exported with group size 32 (a tree is float32 and does not say).
    const out = path.join(fresh('q'), 'model.bin');
    await convert(tree, out, { to: 'ajc1', groupSize: 32 });
    for (const suffix of ['', '.tokenizer', '.template', '.template.with-thinking', '.template.with-system', '.template.with-system-and-thinking']) {
      expect(sameBytes(AJC1 + suffix, out + suffix)).toEqual({ file: path.basename(out + suffix), firstDifference: -1 });
    }
  });

  test('architectures a format cannot hold are refused before anything is written', async () => {
    for (const [src, to] of [
      [fixture('tllm-tiny', 'model.tllm'), 'sepweight'],
      [fixture('moon-tiny', 'model.moon'), 'sepweight'],
      [fixture('embd-minilm-tiny', 'model.weights'), 'sepweight'],
      [AJC1, 'llama2c'],
      [BIN, 'ajc1'],
    ] as const) {
      const out = fresh(`refused-${to}`);
      await expect(convert(src, out, { to })).rejects.toBeInstanceOf(UnsupportedError);
      expect(fs.existsSync(out)).toBe(false);
    }
  });
});
