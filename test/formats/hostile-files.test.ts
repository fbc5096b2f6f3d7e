/**
 * The reproductions of issue 10's "aborts and hangs from a few bytes" and "malformed accepted"
 * items. Each hostile file must fail with a typed WeightFormatError; the cases that once aborted
 * or hung the process run in a child process under a heap and time limit (fuzz/harness.ts), so a
 * regression fails its test instead of killing the jest worker.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WeightFormatError } from '../../lib/base/errors';
import { readWeights, writeWeights } from '../../lib/formats';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { closeWeights } from '../../lib/addon/weights';
import { runCli } from '../helpers/cli';
import { fixture, tempDir } from '../helpers/fixtures';
import { applyEdit, editJsonText, type Edit, type FuzzCase } from './fuzz/edits';
import { runCases, type Result } from './fuzz/harness';

const tmp = tempDir('weightmap-hostile-');
afterAll(() => tmp.cleanup());

/** An HF folder (model.safetensors + config.json) of stories260K. */
async function hfFolder(): Promise<string> {
  const dir = path.join(tmp.dir, 'hf');
  const w = await readWeights(fixture('llama-stories260k', 'stories260K.bin'));
  await writeWeights(w, path.join(dir, 'model.safetensors'), { format: 'safetensors' });
  closeWeights(w);
  return dir;
}

describe('hostile files from the audit fail fast with a typed error (each in a child process)', () => {
  let results: Result[];
  let cases: FuzzCase[];

  beforeAll(async () => {
    const hf = await hfFolder();
    const tllm = { target: 'tllm', source: fixture('tllm-tiny', 'model.tllm'), entry: 'model.tllm', options: { format: 'tllm' } };
    const numLayers: Edit = { kind: 'int', file: 'model.tllm', field: 'num_layers', offset: 12, width: 4, value: '2147483647' };
    const moon = { target: 'moon', source: fixture('moon-tiny', 'model.moon'), entry: 'model.moon', sidecars: [fixture('moon-tiny', 'config.json')], options: { format: 'moon' } };
    const moonLayers = (key: string, value: string): Edit => ({ kind: 'json', file: 'config.json', sets: [[[key], value]] });
    const hfLayers: Edit = { kind: 'json', file: 'config.json', sets: [[['num_hidden_layers'], '1000000']] };
    const wordPieceId: Edit = { kind: 'json', file: 'tokenizer.json', sets: [[['model', 'vocab', '[SEP]'], '2147483648']] };
    cases = [
      { ...tllm, operation: 'read', edit: numLayers },
      { ...tllm, operation: 'model', edit: numLayers },
      { ...moon, operation: 'read', edit: moonLayers('text_layers', '2147483648') },
      { ...moon, operation: 'read', edit: moonLayers('vision_layers', '2147483648') },
      { ...moon, operation: 'read', edit: moonLayers('text_layers', '2147483647') },
      { ...moon, operation: 'model', edit: moonLayers('text_layers', '2147483647') },
      { target: 'hf', source: hf, entry: '.', operation: 'read', options: { format: 'safetensors' }, edit: hfLayers },
      { target: 'hf', source: hf, entry: '.', operation: 'model', edit: hfLayers },
      { target: 'tokenizer', source: fixture('tokenizers', 'minilm'), entry: 'tokenizer.json', operation: 'tokenizer', edit: wordPieceId },
    ];
    results = await runCases(cases, path.join(tmp.dir, 'work'), { heapMb: 512, caseTimeoutMs: 60000 });
    // eslint-disable-next-line no-console
    console.log(results.map((r) => `${cases[r.index].target} ${cases[r.index].operation}: ${r.outcome} ${r.code ?? ''}`).join('\n'));
  }, 240000);

  const expectations: [string, number, string][] = [
    ['TLLM num_layers 2^31-1: readWeights', 0, 'SHAPE_MISMATCH'],
    ['TLLM num_layers 2^31-1: loadModel', 1, 'SHAPE_MISMATCH'],
    ['MOON text_layers 2^31', 2, 'CONFIG_MISMATCH'],
    ['MOON vision_layers 2^31', 3, 'CONFIG_MISMATCH'],
    ['MOON text_layers 2^31-1: readWeights', 4, 'SHAPE_MISMATCH'],
    ['MOON text_layers 2^31-1: loadModel', 5, 'SHAPE_MISMATCH'],
    ['HF num_hidden_layers 1000000: readWeights', 6, 'CONFIG_MISMATCH'],
    ['HF num_hidden_layers 1000000: loadModel', 7, 'CONFIG_MISMATCH'],
    ['tokenizer.json WordPiece id 2^31: loadTokenizer', 8, 'BAD_HEADER'],
  ];
  test.each(expectations)('%s', (_name, index, code) => {
    const r = results.find((x) => x.index === index)!;
    expect({ outcome: r.outcome, code: r.code }).toEqual({ outcome: 'typed', code });
  });
});

describe("the audit's files through `weightmap inspect`: one line with the reader's code, exit code 2", () => {
  /** A copy of `files` (name -> source) in a folder of its own, the file `edit` names edited. */
  function edited(name: string, files: Record<string, string>, edit: Edit): string {
    const dir = path.join(tmp.dir, `inspect-${name}`);
    fs.mkdirSync(dir, { recursive: true });
    for (const [file, source] of Object.entries(files)) {
      const bytes = fs.readFileSync(source);
      fs.writeFileSync(path.join(dir, file), file === edit.file ? applyEdit(bytes, edit) : bytes);
    }
    return dir;
  }

  test.each([
    ['TLLM num_layers 2^31-1', 'SHAPE_MISMATCH', () => path.join(edited('tllm', { 'model.tllm': fixture('tllm-tiny', 'model.tllm') },
      { kind: 'int', file: 'model.tllm', field: 'num_layers', offset: 12, width: 4, value: '2147483647' }), 'model.tllm')],
    ['MOON text_layers 2^31', 'CONFIG_MISMATCH', () => path.join(edited('moon', { 'model.moon': fixture('moon-tiny', 'model.moon'), 'config.json': fixture('moon-tiny', 'config.json') },
      { kind: 'json', file: 'config.json', sets: [[['text_layers'], '2147483648']] }), 'model.moon')],
    ['HF num_hidden_layers 1000000', 'CONFIG_MISMATCH', async () => {
      const hf = await hfFolder();
      return edited('hf', { 'model.safetensors': path.join(hf, 'model.safetensors'), 'config.json': path.join(hf, 'config.json') },
        { kind: 'json', file: 'config.json', sets: [[['num_hidden_layers'], '1000000']] });
    }],
  ] as [string, string, () => string | Promise<string>][])('%s: %s', async (_name, code, make) => {
    const r = await runCli(['inspect', await make()]);
    expect({ exitCode: r.exitCode, stdout: r.stdout }).toEqual({ exitCode: 2, stdout: '' });
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(new RegExp(`^weightmap: ${code}: `))]);
  }, 60000);
});

describe('layer counts the file cannot hold, in formats the audit did not name (each in a child process)', () => {
  test('ajc1 n_layers 2^31-1 and GGUF llama.block_count 2^31-1 fail with a typed error', async () => {
    const gguf = fs.readFileSync(fixture('llama-stories260k', 'stories260K.gguf'));
    const key = Buffer.from('llama.block_count');
    const blockCount = gguf.indexOf(key) + key.length + 4; // after the key and its u32 value type
    expect(gguf.readUInt32LE(blockCount - 4)).toBe(4); // GGUF's UINT32
    const cases: FuzzCase[] = [
      {
        target: 'ajc1', source: fixture('ajc1-qwen3-tiny', 'model.bin'), entry: 'model.bin', operation: 'read', options: { format: 'ajc1' },
        edit: { kind: 'int', file: 'model.bin', field: 'n_layers', offset: 16, width: 4, value: '2147483647' },
      },
      {
        target: 'gguf', source: fixture('llama-stories260k', 'stories260K.gguf'), entry: 'stories260K.gguf', operation: 'read', options: { format: 'gguf' },
        edit: { kind: 'int', file: 'stories260K.gguf', field: 'llama.block_count', offset: blockCount, width: 4, value: '2147483647' },
      },
    ];
    const results = await runCases(cases, path.join(tmp.dir, 'work-layers'), { heapMb: 512, caseTimeoutMs: 60000 });
    expect(results.map((r) => [r.outcome, r.code])).toEqual([['typed', 'TRUNCATED'], ['typed', 'CONFIG_MISMATCH']]);
  }, 120000);
});

describe('the harness', () => {
  test('an abort is a crash and a spinning case a hang; the cases after each still run', async () => {
    const ok: FuzzCase = { target: 'tllm', source: fixture('tllm-tiny', 'model.tllm'), entry: 'model.tllm', operation: 'read', options: { format: 'tllm' } };
    const cases: FuzzCase[] = [{ ...ok, operation: 'abort' }, ok, { ...ok, operation: 'spin' }, ok];
    const results = await runCases(cases, path.join(tmp.dir, 'work-harness'), { heapMb: 256, caseTimeoutMs: 3000 });
    expect(results.map((r) => [r.index, r.outcome])).toEqual([[0, 'crash'], [1, 'accepted'], [2, 'hang'], [3, 'accepted']]);
    expect(results[0].message).toMatch(/SIGABRT/);
  }, 120000);
});

describe('tokenizer.json validated as HF tokenizers does', () => {
  const minilm = fs.readFileSync(fixture('tokenizers', 'minilm', 'tokenizer.json'), 'utf8');

  /** loadTokenizer on MiniLM's tokenizer.json with `sets` applied; the error it raises. */
  async function errorOf(sets: [(string | number)[], string][]): Promise<WeightFormatError> {
    const file = path.join(tmp.dir, `tokenizer-${Math.random().toString(36).slice(2)}.json`);
    fs.writeFileSync(file, editJsonText(minilm, sets));
    try {
      await loadTokenizer(file);
    } catch (error) {
      return error as WeightFormatError;
    } finally {
      fs.rmSync(file);
    }
    throw new Error('loaded without error');
  }

  test.each([
    ['vocab null', '$.model.vocab', [['model', 'vocab'], 'null']],
    ['vocab a list', '$.model.vocab', [['model', 'vocab'], '["[PAD]", "[UNK]"]']],
    ['id -1', '$.model.vocab["[UNK]"]', [['model', 'vocab', '[UNK]'], '-1']],
    ['id 1.5', '$.model.vocab["[UNK]"]', [['model', 'vocab', '[UNK]'], '1.5']],
    ['id "x"', '$.model.vocab["[UNK]"]', [['model', 'vocab', '[UNK]'], '"x"']],
    ['id 1e300', '$.model.vocab["[UNK]"]', [['model', 'vocab', '[UNK]'], '1e300']],
    ['id 2^53', '$.model.vocab["[UNK]"]', [['model', 'vocab', '[UNK]'], '9007199254740992']],
    ['added token id 2^31', '$.added_tokens[0].id', [['added_tokens', 0, 'id'], '2147483648']],
  ] as [string, string, [(string | number)[], string]][])('%s: BAD_HEADER naming %s', async (_name, jsonPath, set) => {
    const error = await errorOf([set]);
    expect(error).toBeInstanceOf(WeightFormatError);
    expect(error.code).toBe('BAD_HEADER');
    expect(error.message).toContain(jsonPath);
    expect(error.path).toMatch(/tokenizer-.*\.json$/);
  });

  test('500 tokens sharing one id: BAD_HEADER naming two of them', async () => {
    const vocab = JSON.parse(minilm).model.vocab as Record<string, number>;
    const tokens = Object.keys(vocab).slice(1000, 1500);
    const error = await errorOf(tokens.map((t) => [['model', 'vocab', t], '7']));
    expect(error.code).toBe('BAD_HEADER');
    expect(error.message).toMatch(/share the id 7/);
  });

  test('the unedited file still loads', async () => {
    const file = path.join(tmp.dir, 'tokenizer.json');
    fs.writeFileSync(file, minilm);
    const tokenizer = await loadTokenizer(file);
    expect(tokenizer.decode(tokenizer.encode('hello world'))).toContain('hello world');
  });
});

describe('checksums before meaning', () => {
  test('EMBD with checksums and one flipped metadata bit reports the checksum', async () => {
    const original = fs.readFileSync(fixture('embd-minilm-tiny', 'model.weights'));
    const metadataOffset = original.readUInt32LE(12);
    // The first byte of the first key ("model_name"): the key no longer matches a required one.
    const edit: Edit = { kind: 'bytes', file: 'model.weights', what: 'flip one bit of the first metadata key', xor: [[metadataOffset + 12, 0x01]] };
    const file = path.join(tmp.dir, 'flipped.weights');
    fs.writeFileSync(file, applyEdit(original, edit));
    await expect(readWeights(file)).rejects.toMatchObject({ code: 'CHECKSUM_MISMATCH' });
    // Unverified, the same file shows what the flip broke.
    await expect(readWeights(file, { verifyChecksums: false })).rejects.toMatchObject({ code: 'BAD_HEADER', message: expect.stringContaining('lacks the required key') });
  });
});
