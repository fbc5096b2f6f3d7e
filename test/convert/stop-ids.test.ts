/**
 * The ids that end generation, from an HF folder (config.json's eos_token_id list and
 * generation_config.json's) and from the GGUF converted from it (eos, eot and eom token ids, as
 * llama.cpp reads them), for tiny random Gemma 3 and Llama 3.x models with the real tokenizer files:
 * both equal the ids the real files name (Gemma 3 <eos>, <end_of_turn>; Llama 3.1
 * <|end_of_text|>, 128008, <|eot_id|>), plus BOS as weightmap always stops on it.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { loadModel } from '../../lib/models/model';
import { runCli } from '../helpers/cli';
import { testWorkspace } from '../helpers/workspace';
import { tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';
import { familyDir, familyJson, type Family } from '../tokenizers/family-reference';
import { useTempTokenizerCache } from '../tokenizers/family-compare';

useTempTokenizerCache();
const ws = testWorkspace('stop-ids-');

/** The id of `text` in the family's real tokenizer.json (an added token). */
function idOf(family: Family, text: string): number {
  const found = (familyJson(family, 'tokenizer.json').added_tokens as { id: number; content: string }[]).find((a) => a.content === text);
  if (!found) throw new Error(`${family} has no ${text}`);
  return found.id;
}

const SMALL = { hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, max_position_embeddings: 64, rms_norm_eps: 1e-5 };

function folderOf(family: Family, hf: Record<string, unknown>, extra: Record<string, string> = {}): string {
  const dir = writeHfFolder(tinyDecoder(hf, 5), ws.fresh(family), { 'tokenizer_config.json': JSON.stringify(familyJson(family, 'tokenizer_config.json')), ...extra });
  fs.symlinkSync(nodePath.join(familyDir(family), 'tokenizer.json'), nodePath.join(dir, 'tokenizer.json'));
  return dir;
}

async function stopsOf(file: string): Promise<readonly number[]> {
  const model = await loadModel(file, { threads: 1, contextLength: 16 });
  try {
    return model.stopTokens;
  } finally {
    model.dispose();
  }
}

async function toGguf(folder: string): Promise<string> {
  const out = ws.fresh('model.gguf');
  const r = await runCli(['convert', folder, out, '--to', 'gguf']);
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  return out;
}

const LLAMA = { architectures: ['LlamaForCausalLM'], model_type: 'llama', tie_word_embeddings: true, vocab_size: 128256, rope_theta: 500000, bos_token_id: 128000, ...SMALL };

test('Gemma 3 (config.json eos_token_id [1, 106]): folder and GGUF stop on <eos>, <end_of_turn> and <bos>; the GGUF names <eos> as eot beside its EOS <end_of_turn>', async () => {
  const folder = folderOf('gemma3', {
    architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', ...SMALL, head_dim: 8, query_pre_attn_scalar: 8, vocab_size: 262145, rms_norm_eps: 1e-6,
    rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 4, sliding_window_pattern: 2,
    hidden_activation: 'gelu_pytorch_tanh', bos_token_id: 2, eos_token_id: [1, 106],
  });
  const gguf = await toGguf(folder);
  const want = [idOf('gemma3', '<eos>'), idOf('gemma3', '<bos>'), idOf('gemma3', '<end_of_turn>')].sort((a, b) => a - b);
  expect(want).toEqual([1, 2, 106]);
  expect(await stopsOf(folder)).toEqual(want);
  expect(await stopsOf(gguf)).toEqual(want);
  expect((await ws.read(gguf)).metadata).toMatchObject({ 'tokenizer.ggml.eos_token_id': 106, 'tokenizer.ggml.eot_token_id': 1 });
  expect((await ws.read(gguf)).metadata['tokenizer.ggml.eom_token_id']).toBeUndefined();
}, 240_000);

test('Llama 3.1 (config.json eos_token_id [128001, 128008, 128009]): folder and GGUF stop on all three and BOS; a GGUF round trip keeps them', async () => {
  const folder = folderOf('llama3_1', { ...LLAMA, eos_token_id: [128001, 128008, 128009] });
  const gguf = await toGguf(folder);
  // (128008 is <|eom_id|> in Meta's release; this copy of the file still names it <|reserved_special_token_4|>.)
  const want = [idOf('llama3_1', '<|begin_of_text|>'), idOf('llama3_1', '<|end_of_text|>'), 128008, idOf('llama3_1', '<|eot_id|>')];
  expect(want).toEqual([128000, 128001, 128008, 128009]);
  expect(await stopsOf(folder)).toEqual(want);
  expect(await stopsOf(gguf)).toEqual(want);
  const again = ws.fresh('again.gguf');
  expect((await runCli(['convert', gguf, again, '--to', 'gguf'])).exitCode).toBe(0);
  expect(await stopsOf(again)).toEqual(want);
}, 240_000);

test('Llama 3 Instruct (config.json eos 128009, generation_config.json [128001, 128009]): both lists count, in the folder and the GGUF', async () => {
  const folder = folderOf('llama3', { ...LLAMA, eos_token_id: 128009 }, { 'generation_config.json': JSON.stringify({ bos_token_id: 128000, eos_token_id: [128001, 128009] }) });
  const gguf = await toGguf(folder);
  const want = [idOf('llama3', '<|begin_of_text|>'), idOf('llama3', '<|end_of_text|>'), idOf('llama3', '<|eot_id|>')];
  expect(want).toEqual([128000, 128001, 128009]);
  expect(await stopsOf(folder)).toEqual(want);
  expect(await stopsOf(gguf)).toEqual(want);
}, 240_000);

test('a generation_config.json eos_token_id that is no token id is a WeightFormatError', async () => {
  const folder = folderOf('llama3', { ...LLAMA, eos_token_id: 128009 }, { 'generation_config.json': JSON.stringify({ eos_token_id: ['x'] }) });
  await expect(loadModel(folder, { threads: 1, contextLength: 16 })).rejects.toMatchObject({ name: 'WeightFormatError', code: 'CONFIG_MISMATCH' });
});

test('a fourth end-of-generation id, which GGUF has no key for, is refused rather than dropped', async () => {
  const folder = folderOf('llama3_1', { ...LLAMA, eos_token_id: [128001, 128008, 128009, 128006] });
  const r = await runCli(['convert', folder, ws.fresh('four.gguf'), '--to', 'gguf']);
  expect(r.exitCode).not.toBe(0);
  expect(r.stderr).toMatch(/three ids that end generation \(eos, eot, eom\), not 128001, 128008, 128009, 128006/);
}, 120_000);
