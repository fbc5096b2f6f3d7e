/**
 * resolveTokenizer's one precedence (lib/tokenizer-loading/resolve.ts): the caller's tokenizer, then the
 * vocabulary the weights carry, then the tokenizer files of the model's folder, then none. Told
 * apart by vocabulary size: the EMBD fixture embeds 30522 WordPiece tokens, llama2.c's tok512.bin
 * holds 512, TLLM files carry none.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { readWeights } from '../../lib/formats';
import { resolveTokenizer } from '../../lib/tokenizer-loading/resolve';
import { closeWeights } from '../../lib/addon/weights';
import { fixture, tempDir } from '../helpers/fixtures';

const tmp = tempDir('weightmap-resolve-');
afterAll(() => tmp.cleanup());

const shared = path.join(tmp.dir, 'shared');
const alone = path.join(tmp.dir, 'alone');
beforeAll(() => {
  fs.mkdirSync(shared);
  fs.mkdirSync(alone);
  fs.copyFileSync(fixture('embd-minilm-tiny', 'model.weights'), path.join(shared, 'model.weights'));
  fs.copyFileSync(fixture('tllm-tiny', 'model.tllm'), path.join(shared, 'model.tllm'));
  fs.copyFileSync(fixture('tokenizers', 'llama2c', 'tok512.bin'), path.join(shared, 'tokenizer.bin'));
  fs.copyFileSync(fixture('tllm-tiny', 'model.tllm'), path.join(alone, 'model.tllm'));
});

async function resolvedSize(file: string, given?: string): Promise<number | undefined> {
  const weights = await readWeights(file);
  try {
    return (await resolveTokenizer(weights, given))?.vocabSize;
  } finally {
    closeWeights(weights);
  }
}

test("the weights' own vocabulary comes before the folder's tokenizer files", async () => {
  expect(await resolvedSize(path.join(shared, 'model.weights'))).toBe(30522);
});

test('the caller’s tokenizer comes first', async () => {
  expect(await resolvedSize(path.join(shared, 'model.weights'), path.join(shared, 'tokenizer.bin'))).toBe(512);
});

test('weights without a vocabulary take the folder’s tokenizer files, else none', async () => {
  expect(await resolvedSize(path.join(shared, 'model.tllm'))).toBe(512);
  expect(await resolvedSize(path.join(alone, 'model.tllm'))).toBeUndefined();
});

test('a tokenizer that is neither a path nor a Tokenizer is a TypeError', async () => {
  const weights = await readWeights(path.join(alone, 'model.tllm'));
  try {
    await expect(resolveTokenizer(weights, 42 as never)).rejects.toThrow(TypeError);
  } finally {
    closeWeights(weights);
  }
});
