/**
 * HF safetensors folder -> ajc1 (FORMATS.md §5.2-5.4). The strong test: the ajc1 fixture
 * dequantized into an f32 HF folder with the real Qwen3 tokenizer files quantizes back to the
 * fixture's checkpoint, `.tokenizer` and four templates byte for byte. The fixture was exported
 * with group size 32 (its header), which the conversion is told; export.py's own default for
 * dim 64 would be 64, and that is what an unspecified group size gives.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { ajc1TokenizerFromVocabulary, internalStringBytes } from '../../lib/formats/vocabulary/ajc1-sidecars';
import { readWeights } from '../../lib/formats';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { closeWeights, type ModelWeights } from '../../lib/addon/weights';
import { fixture, tempDir } from '../helpers/fixtures';
import { sameBytes, writeJson } from './helpers';

const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');
const QWEN3 = fixture('tokenizers', 'qwen3');
const SIDECARS = ['', '.tokenizer', '.template', '.template.with-thinking', '.template.with-system', '.template.with-system-and-thinking'];

const tmp = tempDir('weightmap-hf-ajc1-');
afterAll(() => tmp.cleanup());
let counter = 0;
const fresh = (name: string) => path.join(tmp.dir, `${counter++}-${name}`);

/**
 * The fixture dequantized to an f32 HF folder (config.json + model.safetensors; the tokenizer files
 * the conversion writes are removed), plus `files` from the Qwen3 tokenizer folder.
 */
async function hfFolder(files: string[]): Promise<string> {
  const dir = fresh('hf');
  await convert(AJC1, path.join(dir, 'model.safetensors'), { to: 'safetensors', dtype: 'f32' });
  for (const f of ['tokenizer.json', 'tokenizer_config.json']) fs.rmSync(path.join(dir, f));
  for (const f of files) fs.copyFileSync(path.join(QWEN3, f), path.join(dir, f));
  return dir;
}

function expectSidecarsEqualFixture(out: string): void {
  for (const suffix of SIDECARS) expect(sameBytes(AJC1 + suffix, out + suffix)).toEqual({ file: path.basename(out + suffix), firstDifference: -1 });
}

describe('HF folder -> ajc1', () => {
  test('vocab.json + merges.txt + tokenizer_config.json: checkpoint, .tokenizer and templates equal the fixture byte for byte', async () => {
    const dir = await hfFolder(['vocab.json', 'merges.txt', 'tokenizer_config.json']);
    const config = JSON.parse(fs.readFileSync(path.join(dir, 'config.json'), 'utf8'));
    expect(config).toMatchObject({ model_type: 'qwen3', bos_token_id: 151643, eos_token_id: 151645, torch_dtype: 'float32', head_dim: 32 });
    const out = path.join(fresh('out'), 'model.bin');
    await convert(dir, out, { to: 'ajc1', groupSize: 32 });
    expectSidecarsEqualFixture(out);
  });

  test('tokenizer.json (merges as pairs, added tokens listed in it) gives the same .tokenizer', async () => {
    const dir = await hfFolder(['tokenizer_config.json']);
    const vocab = JSON.parse(fs.readFileSync(path.join(QWEN3, 'vocab.json'), 'utf8'));
    const tokenizerConfig = JSON.parse(fs.readFileSync(path.join(QWEN3, 'tokenizer_config.json'), 'utf8'));
    const merges = fs
      .readFileSync(path.join(QWEN3, 'merges.txt'), 'utf8')
      .split('\n')
      .filter((l, i) => l.length > 0 && !(i === 0 && l.startsWith('#version')))
      .map((l) => l.split(' '));
    const added = Object.entries(tokenizerConfig.added_tokens_decoder as Record<string, { content: string; special: boolean }>).map(([id, t]) => ({
      id: Number(id),
      content: t.content,
      special: t.special,
    }));
    writeJson(path.join(dir, 'tokenizer.json'), { version: '1.0', added_tokens: added, model: { type: 'BPE', vocab, merges } });
    const out = path.join(fresh('out'), 'model.bin');
    await convert(dir, out, { to: 'ajc1', groupSize: 32 });
    expect(sameBytes(`${AJC1}.tokenizer`, `${out}.tokenizer`).firstDifference).toBe(-1);
    expect(sameBytes(`${AJC1}.template`, `${out}.template`).firstDifference).toBe(-1);
  });

  test('without a group size export.py\'s rule applies: 64 (it divides dim 64); without tokenizer files no sidecars', async () => {
    const dir = await hfFolder([]);
    const out = path.join(fresh('out'), 'model.bin');
    await convert(dir, out, { to: 'ajc1' });
    const header = fs.readFileSync(out).subarray(0, 256);
    expect(header.readInt32LE(0x2c)).toBe(64);
    expect(header.readInt32LE(0x28)).toBe(1);
    expect(fs.readdirSync(path.dirname(out))).toEqual(['model.bin']);
    // 64-groups of the fixture's 32-group values: every weight within half a step of its group's scale.
    let w: ModelWeights | undefined;
    let src: ModelWeights | undefined;
    try {
      w = await readWeights(out);
      src = await readWeights(AJC1);
      expect(w.config).toMatchObject({ groupSize: 64, hiddenSize: 64, vocabSize: 151936 });
      for (const name of ['model.embed_tokens.weight', 'model.layers.1.mlp.down_proj.weight']) {
        const mine = w.tensors.find((t) => t.name === name)!;
        const theirs = src.tensors.find((t) => t.name === name)!;
        const count = Math.min(64 * 1024, mine.byteLength);
        const a = readF32(mine, 0, count);
        const b = readF32(theirs, 0, count);
        const scales = readF32({ ...mine, dtype: 'f32', shape: [count / 64], byteOffset: mine.scales!.byteOffset, byteLength: (count / 64) * 4 }, 0, count / 64);
        let outside = 0;
        for (let i = 0; i < count; i++) if (!(Math.abs(a[i] - b[i]) <= scales[i >> 6] / 2 + 1e-12)) outside++;
        expect([name, outside]).toEqual([name, 0]);
      }
    } finally {
      if (w) closeWeights(w);
      if (src) closeWeights(src);
    }
  });
});

describe('the .tokenizer of a handmade vocabulary (§5.3 closed forms)', () => {
  test('bytes, scores, gaps, added tokens and max_token_length', () => {
    const tokens: (string | undefined)[] = [];
    tokens[0] = 'a';
    tokens[1] = 'b';
    tokens[2] = 'Ġ'; // the stand-in of byte 0x20
    tokens[3] = 'ab';
    tokens[4] = 'Ġab';
    // id 5: a gap
    tokens[6] = '<|im_end|>';
    tokens[7] = 'é'; // U+00E9 is the stand-in of byte 0xE9 itself
    tokens[8] = 'x\u4e2d'; // a character outside the table: its UTF-8
    const merges: [string, string][] = [['a', 'b'], ['Ġ', 'ab'], ['a', 'b']];
    const t = ajc1TokenizerFromVocabulary({ kind: 'bpe', tokens, merges, lowercase: false, path: 'handmade' }, 6, 6);
    expect(t.tokens.map((b) => Buffer.from(b).toString('hex'))).toEqual(['61', '62', '20', '6162', '206162', '', Buffer.from('<|im_end|>').toString('hex'), 'e9', '78e4b8ad']);
    // "ab" is merge 0 and merge 2: the last one counts (a dict keyed by a+b); "Ġab" is merge 1.
    expect(Array.from(t.scores)).toEqual([-1e6, -1e6, -1e6, -Math.log(3), -Math.log(2), -1e6, -1e6, -1e6, -1e6].map(Math.fround));
    expect(t.maxTokenLength).toBe(10);
    expect([t.bosId, t.eosId]).toEqual([6, 6]);
    expect(Buffer.from(internalStringBytes('Ċthe')).toString('hex')).toBe('0a746865');
  });
});
