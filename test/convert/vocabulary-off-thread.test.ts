/**
 * Writers convert a 151k-token vocabulary in the tokenizer worker (lib/formats/vocabulary/vocab-offload.ts):
 * ajc1 -> GGUF, GGUF (the Qwen3 vocabulary) -> ajc1 and GGUF (Gemma 3's SentencePiece vocabulary) ->
 * HF folder write the bytes they write when the conversion runs on this thread, and this thread
 * runs none of it. How long the event loop waits
 * is measured by scripts/bench/load.js, not here.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { closeWeights, convert, readWeights, writeWeights } from '../../lib';
import * as vocabConvert from '../../lib/formats/vocabulary/vocab-convert';
import { setVocabularyRunner } from '../../lib/formats/vocabulary/vocab-offload';
import { vocabularyInWorker } from '../../lib/tokenizer-loading/worker-client';
import * as spmVocab from '../../lib/formats/vocabulary/gguf-spm-vocab';
import { fixture, tempDir } from '../helpers/fixtures';
import { tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';
import { familyDir, familyJson } from '../tokenizers/family-reference';

const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');
const GEMMA_HF = {
  architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: 16, intermediate_size: 32, num_hidden_layers: 2,
  num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8, query_pre_attn_scalar: 8, vocab_size: 262144, max_position_embeddings: 64,
  rms_norm_eps: 1e-6, rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 4, sliding_window_pattern: 2,
  hidden_activation: 'gelu_pytorch_tanh', bos_token_id: 2, eos_token_id: [1, 106],
};

let work: ReturnType<typeof tempDir>;
let gguf: string;

beforeAll(async () => {
  work = tempDir('weightmap-vocab-worker-');
  gguf = path.join(work.dir, 'source.gguf');
  await convert(AJC1, gguf, { to: 'gguf' });
}, 120_000);

afterAll(() => {
  setVocabularyRunner(vocabularyInWorker);
  work.cleanup();
});

/** Every file of `dir`, by name. */
function filesOf(dir: string): Record<string, Buffer> {
  return Object.fromEntries(fs.readdirSync(dir).sort().map((f) => [f, fs.readFileSync(path.join(dir, f))]));
}

test.each([
  ['ajc1 -> GGUF', () => AJC1, 'gguf', 'out.gguf'],
  ['GGUF with the Qwen3 vocabulary -> ajc1', () => gguf, 'ajc1', 'out.bin'],
] as const)('%s: converted in the worker, to the bytes this thread writes', async (_name, source, to, name) => {
  const inWorker = path.join(work.dir, `${to}-worker`);
  const here = path.join(work.dir, `${to}-here`);
  fs.mkdirSync(inWorker);
  fs.mkdirSync(here);
  const spies = [jest.spyOn(vocabConvert, 'ggufVocabulary'), jest.spyOn(vocabConvert, 'ajc1Vocabulary')];
  try {
    setVocabularyRunner(vocabularyInWorker);
    await convert(source(), path.join(inWorker, name), { to });
    expect(spies.map((s) => s.mock.calls.length)).toEqual([0, 0]); // not on this thread
    // A worker that fails leaves the conversion to this thread.
    setVocabularyRunner(() => Promise.reject(new Error('no worker')));
    await convert(source(), path.join(here, name), { to });
    expect(spies.reduce((n, s) => n + s.mock.calls.length, 0)).toBeGreaterThan(0);
  } finally {
    spies.forEach((s) => s.mockRestore());
    setVocabularyRunner(vocabularyInWorker);
  }
  const [a, b] = [filesOf(inWorker), filesOf(here)];
  expect(Object.keys(a)).toEqual(Object.keys(b));
  expect(Object.keys(a)).toContain(to === 'ajc1' ? 'out.bin.tokenizer' : 'out.gguf');
  for (const file of Object.keys(a)) expect({ file, same: a[file].equals(b[file]) }).toEqual({ file, same: true });
}, 180_000);

test('weights whose vocabulary changed after reading are written with it (the worker, reading the file again, would not find it)', async () => {
  const weights = await readWeights(AJC1);
  const out = path.join(work.dir, 'changed-vocabulary.gguf');
  try {
    const t = weights.tokenizer!;
    if (t.kind !== 'scored') throw new Error('expected the ajc1 vocabulary');
    expect(t.bosId).not.toBe(7);
    weights.tokenizer = { ...t, bosId: 7 };
    await writeWeights(weights, out, { format: 'gguf' });
  } finally {
    closeWeights(weights);
  }
  const written = await readWeights(out);
  try {
    expect(written.metadata['tokenizer.ggml.bos_token_id']).toBe(7);
  } finally {
    closeWeights(written);
  }
}, 120_000);

test('a source file replaced since it was read is converted here, from the weights in hand', async () => {
  const dir = path.join(work.dir, 'replaced');
  fs.mkdirSync(dir);
  const copy = path.join(dir, 'model.bin');
  fs.copyFileSync(AJC1, copy);
  fs.copyFileSync(`${AJC1}.tokenizer`, `${copy}.tokenizer`);
  const weights = await readWeights(copy);
  const spy = jest.spyOn(vocabConvert, 'ggufVocabulary');
  try {
    const other = new Date('2001-02-03T04:05:06Z'); // any time but the file's own
    fs.utimesSync(`${copy}.tokenizer`, other, other);
    await writeWeights(weights, path.join(dir, 'out.gguf'), { format: 'gguf' });
    expect(spy).toHaveBeenCalled();
  } finally {
    spy.mockRestore();
    closeWeights(weights);
  }
}, 120_000);

test('GGUF with Gemma 3\'s SentencePiece vocabulary -> HF folder: tokenizer.json made in the worker, the bytes this thread writes', async () => {
  const folder = writeHfFolder(tinyDecoder(GEMMA_HF, 3), path.join(work.dir, 'gemma-hf'), { 'tokenizer_config.json': JSON.stringify(familyJson('gemma3', 'tokenizer_config.json')) });
  fs.symlinkSync(path.join(familyDir('gemma3'), 'tokenizer.json'), path.join(folder, 'tokenizer.json'));
  const source = path.join(work.dir, 'gemma.gguf');
  await convert(folder, source, { to: 'gguf' });
  const [inWorker, here] = [path.join(work.dir, 'gemma-worker'), path.join(work.dir, 'gemma-here')];
  const spy = jest.spyOn(spmVocab, 'tokenizerJsonFromSentencePieceSteps');
  try {
    setVocabularyRunner(vocabularyInWorker);
    await convert(source, path.join(inWorker, 'model.safetensors'), { to: 'safetensors' });
    expect(spy).not.toHaveBeenCalled();
    setVocabularyRunner(() => Promise.reject(new Error('no worker')));
    await convert(source, path.join(here, 'model.safetensors'), { to: 'safetensors' });
    expect(spy).toHaveBeenCalled();
  } finally {
    spy.mockRestore();
    setVocabularyRunner(vocabularyInWorker);
  }
  const [a, b] = [filesOf(inWorker), filesOf(here)];
  expect(Object.keys(a)).toEqual(['config.json', 'model.safetensors', 'tokenizer.json', 'tokenizer_config.json']);
  expect(Object.keys(b)).toEqual(Object.keys(a));
  for (const file of Object.keys(a)) expect({ file, same: a[file].equals(b[file]) }).toEqual({ file, same: true });
}, 240_000);
