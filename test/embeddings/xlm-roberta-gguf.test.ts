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
import { tempDir } from '../helpers/fixtures';

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

function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  let x = 0;
  let y = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i] * b[i];
    x += a[i] * a[i];
    y += b[i] * b[i];
  }
  return d / Math.sqrt(x * y);
}

function llamaCppEmbedding(file: string, text: string): number[] {
  const out = execFileSync(tool, ['-m', file, '-p', text, '--embd-normalize', '2', '--embd-output-format', 'json', '-t', '1', '-c', '64'], { stdio: ['ignore', 'pipe', 'ignore'] }).toString('utf8');
  return JSON.parse(out).data[0].embedding;
}

(HAVE ? describe.each(['mean', 'cls'] as const) : describe.skip.each(['mean', 'cls'] as const))('tiny XLM-R GGUF (%s pooling) vs llama-embedding', (pooling) => {
  let tmp: ReturnType<typeof tempDir>;
  let file = '';
  let reference: number[][];
  beforeAll(() => {
    tmp = tempDir('weightmap-xlmr-gguf-');
    file = nodePath.join(tmp.dir, 'xlmr.gguf');
    execFileSync('python3', [script, source, vocab, file, '--pooling', pooling, '--seed', pooling === 'mean' ? '1' : '2'], { stdio: 'ignore' });
    reference = TEXTS.map((t) => llamaCppEmbedding(file, t));
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
