/**
 * Conversions carry the vocabulary (and a Jinja chat template) in each output format's own way, so
 * that every reader -> writer pair, and chains of them, load with no tokenizer argument and encode
 * and generate exactly as the source does. The reference is the source model itself (its fixture
 * vocabulary), and for llama2.c the fixture tokenizer file byte for byte.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { WeightFormatError } from '../../lib/base/errors';
import { readWeights } from '../../lib/formats';
import { loadModel } from '../../lib/models/model';
import { closeWeights, type FormatName } from '../../lib/addon/weights';
import { runCli } from '../helpers/cli';
import { fixture } from '../helpers/fixtures';
import { testWorkspace } from '../helpers/workspace';

const BIN = fixture('llama-stories260k', 'stories260K.bin');
const GGUF = fixture('llama-stories260k', 'stories260K.gguf');
const TOK512 = fixture('llama-stories260k', 'tok512.bin');
const AJC1 = fixture('ajc1-qwen3-tiny', 'model.bin');
const TLLM = fixture('tllm-tiny', 'model.tllm');
const QWEN_CONFIG = fixture('tokenizers', 'qwen3', 'tokenizer_config.json');

const { fresh } = testWorkspace('weightmap-vocab-');

const PROMPTS: Record<string, string> = {
  [BIN]: 'Once upon a time, Lily met a big dog. "Hi!"',
  [GGUF]: 'Once upon a time, Lily met a big dog. "Hi!"',
  [AJC1]: '<|im_start|>user\nHéllo, wörld! 1234 你好 <think>\n</think><|im_end|>\n<|im_start|>assistant\n',
};

interface Behaviour {
  ids: number[];
  tokens: number[];
}

/** What a model does with the source's prompt: its ids and 16 greedy tokens (loaded with no tokenizer argument). */
async function behaviour(file: string, prompt: string): Promise<Behaviour> {
  const model = await loadModel(file, { threads: 1, contextLength: 128 });
  try {
    const generation = model.generate(prompt, { maxTokens: 16, temperature: 0 });
    await generation.text();
    return { ids: model.encode(prompt), tokens: [...generation.tokens] };
  } finally {
    model.dispose();
  }
}

const references = new Map<string, Promise<Behaviour>>();
const referenceOf = (src: string) => {
  if (!references.has(src)) references.set(src, behaviour(src, PROMPTS[src]));
  return references.get(src)!;
};

/** Where a conversion to `to` writes, and what to load afterwards. */
function target(to: FormatName): { out: string; load: string } {
  const dir = fresh(to);
  if (to === 'sepweight') return { out: dir, load: dir };
  if (to === 'safetensors') return { out: path.join(dir, 'model.safetensors'), load: dir };
  return { out: path.join(dir, `model.${to === 'llama2c' ? 'bin' : to}`), load: path.join(dir, `model.${to === 'llama2c' ? 'bin' : to}`) };
}

describe('every reader -> writer pair (and chains) generates as its source, with no tokenizer argument', () => {
  test.each([
    [BIN, ['gguf']],
    [BIN, ['sepweight']],
    [BIN, ['llama2c']],
    [BIN, ['safetensors']],
    [GGUF, ['gguf']],
    [GGUF, ['sepweight']],
    [GGUF, ['llama2c']],
    [GGUF, ['safetensors']],
    [AJC1, ['ajc1']],
    [AJC1, ['sepweight']],
    [AJC1, ['gguf']],
    [AJC1, ['safetensors']],
    [BIN, ['gguf', 'sepweight']],
    [GGUF, ['llama2c', 'gguf']],
    [AJC1, ['gguf', 'ajc1']],
    [AJC1, ['gguf', 'sepweight']],
    [AJC1, ['safetensors', 'gguf']],
    [AJC1, ['gguf', 'safetensors', 'ajc1']],
  ] as [string, FormatName[]][])('%s -> %j', async (src, chain) => {
    let from = src;
    for (const to of chain) {
      const { out, load } = target(to);
      await convert(from, out, { to });
      from = load;
    }
    expect(await behaviour(from, PROMPTS[src])).toEqual(await referenceOf(src));
  });
});

describe('each format holds the vocabulary its own way', () => {
  test("GGUF from ajc1: a byte-level BPE vocabulary as llama.cpp reads it (model gpt2, pre qwen2, merges, ids)", async () => {
    const out = target('gguf').out;
    await convert(AJC1, out, { to: 'gguf' });
    const w = await readWeights(out);
    try {
      const kv = w.metadata;
      expect([kv['tokenizer.ggml.model'], kv['tokenizer.ggml.pre'], kv['tokenizer.ggml.bos_token_id'], kv['tokenizer.ggml.eos_token_id']]).toEqual(['gpt2', 'qwen2', 151643, 151645]);
      const tokens = kv['tokenizer.ggml.tokens'] as string[];
      const types = kv['tokenizer.ggml.token_type'] as Int32Array;
      // One token per embedding row; <|im_end|> a control token, 'Ġthe' a normal one.
      expect(tokens).toHaveLength(w.tensors.find((t) => t.name === 'token_embd.weight' || t.name.endsWith('embed_tokens.weight'))!.shape[0]);
      expect([tokens[151645], types[151645]]).toEqual(['<|im_end|>', 3]);
      expect(types[tokens.indexOf('Ġthe')]).toBe(1);
      expect((kv['tokenizer.ggml.merges'] as string[]).slice(0, 1)).toEqual(['Ġ Ġ']);
    } finally {
      closeWeights(w);
    }
  });

  test('llama2.c from GGUF: tokenizer.bin beside the checkpoint is the original tok512.bin byte for byte', async () => {
    const { out } = target('llama2c');
    await convert(GGUF, out, { to: 'llama2c' });
    expect(fs.readFileSync(path.join(path.dirname(out), 'tokenizer.bin')).equals(fs.readFileSync(TOK512))).toBe(true);
  });

  test('a Jinja chat template rides along: HF folder -> GGUF tokenizer.chat_template -> HF tokenizer_config.json', async () => {
    const hf = target('safetensors');
    await convert(AJC1, hf.out, { to: 'safetensors' });
    const template = JSON.parse(fs.readFileSync(QWEN_CONFIG, 'utf8')).chat_template as string;
    const configPath = path.join(hf.load, 'tokenizer_config.json');
    fs.writeFileSync(configPath, JSON.stringify({ ...JSON.parse(fs.readFileSync(configPath, 'utf8')), chat_template: template }));
    const gguf = target('gguf');
    await convert(hf.load, gguf.out, { to: 'gguf' });
    const w = await readWeights(gguf.out);
    expect(w.metadata['tokenizer.chat_template']).toBe(template);
    closeWeights(w);
    const back = target('safetensors');
    await convert(gguf.load, back.out, { to: 'safetensors' });
    expect(JSON.parse(fs.readFileSync(path.join(back.load, 'tokenizer_config.json'), 'utf8')).chat_template).toBe(template);
    const model = await loadModel(back.load, { threads: 1 });
    try {
      expect(model.renderChat([{ role: 'user', content: 'Hi' }], { enableThinking: false })).toContain('<|im_start|>user\nHi<|im_end|>\n<|im_start|>assistant\n');
    } finally {
      model.dispose();
    }
  });

  test("TLLM's vocab.txt + merges.txt ride into an HF folder: a TLLM file written there encodes and generates as the source", async () => {
    const dir = fresh('tllm-vocab');
    fs.mkdirSync(dir);
    fs.copyFileSync(TLLM, path.join(dir, 'model.tllm'));
    // One letter per id ("token id" lines), no merges: each letter is one token.
    fs.writeFileSync(path.join(dir, 'vocab.txt'), 'abcdefghij'.split('').map((ch, i) => `${ch} ${(i * 7 + 3) % 100}`).join('\n') + '\n');
    fs.writeFileSync(path.join(dir, 'merges.txt'), '#version: 0.2\n');
    const hf = target('safetensors');
    expect((await convert(path.join(dir, 'model.tllm'), hf.out, { to: 'safetensors' })).notes).toEqual([]);
    expect(fs.readdirSync(hf.load).sort()).toEqual(['config.json', 'merges.txt', 'model.safetensors', 'vocab.txt']);
    // The gpt engine runs TLLM's own layout: back to a TLLM file inside the folder, beside the carried files.
    await convert(hf.load, path.join(hf.load, 'model.tllm'), { to: 'tllm' });
    const reference = await behaviour(path.join(dir, 'model.tllm'), 'jihgfedcba');
    expect(reference.ids).toEqual([66, 59, 52, 45, 38, 31, 24, 17, 10, 3]);
    expect(await behaviour(path.join(hf.load, 'model.tllm'), 'jihgfedcba')).toEqual(reference);
  });

  test('a format that holds no vocabulary says so in one line (API note, CLI stderr)', async () => {
    const dir = fresh('tllm-with-vocab');
    fs.mkdirSync(dir);
    fs.copyFileSync(TLLM, path.join(dir, 'model.tllm'));
    fs.writeFileSync(path.join(dir, 'vocab.json'), '{}');
    const out = path.join(fresh('tllm-out'), 'model.tllm');
    const { notes } = await convert(path.join(dir, 'model.tllm'), out, { to: 'tllm' });
    expect(notes).toEqual([expect.stringMatching(/^TLLM \(tiny_llama\) holds no vocabulary: the tokenizer of .* was not written/)]);
    const r = await runCli(['convert', path.join(dir, 'model.tllm'), `${out}2`, '--to', 'tllm', '--no-progress']);
    expect(r.exitCode).toBe(0);
    expect(r.stderr.trimEnd().split('\n')).toEqual([expect.stringMatching(/^weightmap: note: TLLM \(tiny_llama\) holds no vocabulary/)]);
    expect((await convert(TLLM, `${out}3`, { to: 'tllm' })).notes).toEqual([]);
  });
});

describe('the tokenizer the caller names, and ajc1 ids of -1', () => {
  function ajc1Copy(tokenizer: Buffer): string {
    const dir = fresh('ajc1');
    fs.mkdirSync(dir);
    fs.copyFileSync(AJC1, path.join(dir, 'model.bin'));
    fs.writeFileSync(path.join(dir, 'model.bin.tokenizer'), tokenizer);
    return path.join(dir, 'model.bin');
  }

  test('--tokenizer PATH (and the option) take precedence over a bad sidecar, which is not even read', async () => {
    const good = fs.readFileSync(`${AJC1}.tokenizer`);
    const bad = ajc1Copy(good.subarray(0, 1000));
    await expect(loadModel(bad)).rejects.toBeInstanceOf(WeightFormatError);
    const model = await loadModel(bad, { threads: 1, tokenizer: `${AJC1}.tokenizer` });
    try {
      expect(model.encode(PROMPTS[AJC1])).toEqual((await referenceOf(AJC1)).ids);
    } finally {
      model.dispose();
    }
    const r = await runCli(['generate', bad, 'Hello', '--tokenizer', `${AJC1}.tokenizer`, '--max-tokens', '2', '--ids', '--threads', '1']);
    expect([r.exitCode, r.stderr]).toEqual([0, '']);
    expect(r.stdout.trim().split(' ')).toHaveLength(2);
  });

  test('an ajc1 .tokenizer with bos/eos = -1 loads (no such token), and is written back so', async () => {
    const bytes = Buffer.from(fs.readFileSync(`${AJC1}.tokenizer`));
    bytes.fill(0xff, 4, 12);
    const file = ajc1Copy(bytes);
    const w = await readWeights(file);
    try {
      expect(w.tokenizer).toMatchObject({ kind: 'scored', style: 'ajc1' });
      expect(w.tokenizer).not.toHaveProperty('bosId');
      expect(w.tokenizer).not.toHaveProperty('eosId');
    } finally {
      closeWeights(w);
    }
    const model = await loadModel(file, { threads: 1 });
    try {
      expect(model.encode(PROMPTS[AJC1])).toEqual((await referenceOf(AJC1)).ids);
    } finally {
      model.dispose();
    }
    const out = target('ajc1').out;
    await convert(file, out, { to: 'ajc1' });
    expect(fs.readFileSync(`${out}.tokenizer`).equals(bytes)).toBe(true);
  });
});
