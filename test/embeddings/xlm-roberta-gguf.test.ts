/**
 * XLM-RoBERTa in GGUF as llama.cpp's converter writes it (general.architecture "bert" with a UGM
 * "t5" vocabulary, the position table cut to the rows from padding_idx + 1): a random-weight tiny
 * model written by llama.cpp's own gguf-py (scripts/interop/xlmr-gguf.py) with XLM-R's real 250k
 * vocabulary (llama.cpp's models/ggml-vocab-nomic-bert-moe.gguf), embedded by weightmap and by
 * llama.cpp's llama-embedding on the same file (tokenization included): cosine >= 0.99999 at f32,
 * >= 0.999 at int8, for mean and CLS pooling. llama-embedding is an on-demand build of the peer
 * cache (scripts/bench/peers/cache.js): skipped, saying so, where it, the clone's gguf-py or
 * python3 with numpy is missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { loadEmbedder } from '../../lib/models/embedder';
import { readWeights, writeWeights } from '../../lib/formats';
import { closeWeights } from '../../lib/addon/weights';
import { bertTensorSpecs } from '../../lib/architectures/bert';
import { bertConfigFromHfJson } from '../../lib/architectures/bert/config-json';
import { writeSafetensors } from '../convert/helpers';
import { tempDir } from '../helpers/fixtures';
import { mulberry32 } from '../helpers/rng';
import { unigramTokenizerJson } from '../tokenizers/unigram-generator';
import { cosine, llamaCppEmbedding } from './llama-embedding';

const peers = process.env.WEIGHTMAP_PEERS_CACHE ?? nodePath.join(os.homedir(), '.cache', 'weightmap-peers');
const source = nodePath.join(peers, 'llama.cpp');
const tool = nodePath.join(source, 'build', 'bin', 'llama-embedding');
const vocab = nodePath.join(source, 'models', 'ggml-vocab-nomic-bert-moe.gguf');
const script = nodePath.join(__dirname, '..', '..', 'scripts', 'interop', 'xlmr-gguf.py');
const HAVE = fs.existsSync(tool) && fs.existsSync(vocab) && fs.existsSync(nodePath.join(source, 'gguf-py')) && spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;
if (!HAVE) console.warn(`xlm-roberta-gguf.test.ts: ${tool}, ${vocab} or python3 with numpy not found (scripts/bench/peers/cache.js builds llama-embedding): skipped`);

const TEXTS = [
  'Hello world, naïve café — ①② ﬁne',
  '日本語のテキストと中文句子，还有한국어 문장。',
  'مرحبا بالعالم',
  'नमस्ते दुनिया',
  '🦙🔥 emoji 👍🏽 and   spaces\tand\ttabs',
  'a <mask> b',
  'x',
  'The quick brown fox jumps over the lazy dog. '.repeat(3),
];



(HAVE ? describe.each(['mean', 'cls'] as const) : describe.skip.each(['mean', 'cls'] as const))('tiny XLM-R GGUF (%s pooling) vs llama-embedding', (pooling) => {
  let tmp: ReturnType<typeof tempDir>;
  let file = '';
  let reference: number[][];
  beforeAll(() => {
    tmp = tempDir('weightmap-xlmr-gguf-');
    file = nodePath.join(tmp.dir, 'xlmr.gguf');
    execFileSync('python3', [script, source, vocab, file, '--pooling', pooling, '--seed', pooling === 'mean' ? '1' : '2'], { stdio: 'ignore' });
    reference = TEXTS.map((t) => llamaCppEmbedding(tool, file, t, 64));
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  it.each([
    ['f32', 0.99999],
    ['int8', 0.999],
  ] as const)('%s: cosine to llama.cpp >= %s on every text', async (quant, floor) => {
    const embedder = await loadEmbedder(file, { threads: 1, quant: quant === 'f32' ? undefined : quant });
    try {
      const ours = await embedder.embed(TEXTS);
      const cosines = ours.map((v, i) => cosine(v, reference[i]));
      console.log(`${pooling} ${quant}: min cosine ${Math.min(...cosines).toFixed(8)}`);
      expect(ours[0].length).toBe(32);
      for (const c of cosines) expect(c).toBeGreaterThanOrEqual(floor);
    } finally {
      await embedder.dispose();
    }
  });
});

/**
 * weightmap's own GGUF writer on an XLM-RoBERTa HF folder (random weights, a seeded Unigram
 * tokenizer.json with a charsmap and RoBERTa's post-processor): the position table cut from row
 * padding_idx + 1 and the UGM vocabulary as llama.cpp's converter writes them, so that the file
 * embeds in llama.cpp as in weightmap (the folder's ids through both, then llama-embedding's own
 * tokenization of text against weightmap's of the GGUF).
 */
(HAVE ? describe : describe.skip)('XLM-R HF folder -> weightmap GGUF writer -> llama-embedding', () => {
  let tmp: ReturnType<typeof tempDir>;
  const folder = () => nodePath.join(tmp.dir, 'hf');
  const gguf = () => nodePath.join(tmp.dir, 'written.gguf');
  const H = 32;
  beforeAll(async () => {
    tmp = tempDir('weightmap-xlmr-writer-');
    fs.mkdirSync(folder());
    const tokenizer = unigramTokenizerJson({ seed: 5, postProcessor: 'roberta' });
    // The generator lists '▁the' twice (an HF corner case); llama.cpp holds each token once.
    const pieces: [string, number][] = tokenizer.model.vocab;
    const twice = pieces.findIndex(([p], i) => pieces.findIndex(([q]) => q === p) !== i);
    pieces[twice][0] = '▁the_';
    fs.writeFileSync(nodePath.join(folder(), 'tokenizer.json'), JSON.stringify(tokenizer));
    fs.writeFileSync(nodePath.join(folder(), 'tokenizer_config.json'), JSON.stringify({ bos_token: '<s>', eos_token: '</s>', unk_token: '<unk>', sep_token: '</s>', pad_token: '<pad>', cls_token: '<s>', mask_token: '<mask>', clean_up_tokenization_spaces: true }));
    const config = {
      architectures: ['XLMRobertaModel'], model_type: 'xlm-roberta', hidden_size: H, num_hidden_layers: 2, num_attention_heads: 4, intermediate_size: 64,
      vocab_size: tokenizer.model.vocab.length, max_position_embeddings: 66, type_vocab_size: 1, layer_norm_eps: 1e-5, hidden_act: 'gelu', pad_token_id: 1, bos_token_id: 0, eos_token_id: 2,
    };
    fs.writeFileSync(nodePath.join(folder(), 'config.json'), JSON.stringify(config));
    const random = mulberry32(11);
    const specs = bertTensorSpecs(bertConfigFromHfJson(config));
    writeSafetensors(
      nodePath.join(folder(), 'model.safetensors'),
      specs.filter((s) => !s.optional).map((s) => {
        const n = s.shape.reduce((a, b) => a * b, 1);
        const norm = s.name.endsWith('LayerNorm.weight');
        const scale = s.shape.length === 2 ? 1 / Math.sqrt(s.shape[1]) : 0.5;
        const values = Float32Array.from({ length: n }, () => (norm ? 1 : 0) + (random() * 2 - 1) * (norm ? 0.1 : s.name.includes('embeddings') ? 0.5 : scale));
        return { name: s.name, dtype: 'F32' as const, shape: s.shape, data: new Uint8Array(values.buffer) };
      }),
    );
    const read = await readWeights(folder());
    try {
      await writeWeights(read, gguf(), { format: 'gguf' });
    } finally {
      closeWeights(read);
    }
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  it('refuses a tokenizer.json that lists a token twice (llama.cpp cannot load it)', async () => {
    const dir = nodePath.join(tmp.dir, 'twice');
    fs.cpSync(folder(), dir, { recursive: true });
    const json = JSON.parse(fs.readFileSync(nodePath.join(dir, 'tokenizer.json'), 'utf8'));
    json.model.vocab[10][0] = json.model.vocab[11][0];
    fs.writeFileSync(nodePath.join(dir, 'tokenizer.json'), JSON.stringify(json));
    const read = await readWeights(dir);
    try {
      await expect(writeWeights(read, nodePath.join(dir, 'x.gguf'), { format: 'gguf' })).rejects.toThrow(/listed at ids 10 and 11/);
    } finally {
      closeWeights(read);
    }
  });

  it('writes the cut position table, context_length and the UGM vocabulary llama.cpp reads', async () => {
    const w = await readWeights(gguf());
    try {
      expect(w.config).toMatchObject({ architecture: 'bert', maxPositionEmbeddings: 64, typeVocabSize: 1 });
      expect(w.tensors.find((t) => t.name === 'embeddings.position_embeddings.weight')?.shape).toEqual([64, H]);
      expect(w.tokenizer).toMatchObject({ kind: 'gguf', model: 't5', addBos: true, addEos: true, addSpacePrefix: true, removeExtraWhitespaces: true, bosId: 0, eosId: 2, unkId: 3, padId: 1 });
    } finally {
      closeWeights(w);
    }
  });

  it('the GGUF embeds the folder\'s ids as the folder does, and text as llama.cpp does', async () => {
    const fromFolder = await loadEmbedder(folder(), { threads: 1 });
    const fromGguf = await loadEmbedder(gguf(), { threads: 1 });
    try {
      const ids = TEXTS.map((t) => fromFolder.tokenizer.encode(t));
      const a = await fromFolder.embedTokens(ids, { normalize: true });
      const b = await fromGguf.embedTokens(ids, { normalize: true });
      a.forEach((v, i) => expect(cosine(v, b[i])).toBeGreaterThanOrEqual(0.99999));
      const ours = await fromGguf.embed(TEXTS, { normalize: true, pooling: 'mean' });
      const cosines = TEXTS.map((t, i) => cosine(ours[i], llamaCppEmbedding(tool, gguf(), t, 64)));
      console.log(`weightmap-written XLM-R GGUF: min cosine to llama.cpp ${Math.min(...cosines).toFixed(8)}`);
      for (const c of cosines) expect(c).toBeGreaterThanOrEqual(0.99999);
    } finally {
      await fromFolder.dispose();
      await fromGguf.dispose();
    }
  });
});
