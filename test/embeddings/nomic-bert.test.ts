/**
 * nomic-bert (nomic-embed-text's encoder: rotary positions, SwiGLU, no biases, fused Wqkv) on the
 * BERT engine, from an HF folder (NomicBertModel) and from the GGUF llama.cpp's converter writes,
 * both made from the same random weights by scripts/interop/nomic-bert-gguf.py (llama.cpp's own
 * gguf-py for the GGUF, MiniLM's WordPiece vocabulary), against llama.cpp's llama-embedding on the
 * GGUF (tokenization included): cosine >= 0.99999 at f32 (folder and GGUF), >= 0.999 at int8.
 * llama-embedding is an on-demand build of the peer cache (scripts/bench/peers/cache.js):
 * skipped, saying so, where it, the clone's gguf-py or python3 with numpy is missing.
 */
import { execFileSync, spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as nodePath from 'node:path';
import { loadEmbedder } from '../../lib/models/embedder';
import { readWeights } from '../../lib/formats';
import { closeWeights } from '../../lib/addon/weights';
import { fixture, tempDir } from '../helpers/fixtures';
import { cosine, llamaCppEmbedding } from './llama-embedding';

const peers = process.env.WEIGHTMAP_PEERS_CACHE ?? nodePath.join(os.homedir(), '.cache', 'weightmap-peers');
const source = nodePath.join(peers, 'llama.cpp');
const tool = nodePath.join(source, 'build', 'bin', 'llama-embedding');
const script = nodePath.join(__dirname, '..', '..', 'scripts', 'interop', 'nomic-bert-gguf.py');
const HAVE = fs.existsSync(tool) && fs.existsSync(nodePath.join(source, 'gguf-py')) && spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;
if (!HAVE) console.warn(`nomic-bert.test.ts: ${tool}, llama.cpp's gguf-py or python3 with numpy not found (scripts/bench/peers/cache.js builds llama-embedding): skipped`);

const TEXTS = [
  'Hello world',
  'search_query: how many people live in Berlin?',
  'Héllo wörld! naïve café-owners count 12345 people.',
  'The quick brown fox jumps over the lazy dog. '.repeat(8),
  'x',
];


(HAVE ? describe : describe.skip)('tiny nomic-bert: HF folder and GGUF vs llama-embedding', () => {
  let tmp: ReturnType<typeof tempDir>;
  let reference: number[][];
  const folder = () => nodePath.join(tmp.dir, 'hf');
  const gguf = () => nodePath.join(tmp.dir, 'nomic-bert.gguf');
  beforeAll(() => {
    tmp = tempDir('weightmap-nomic-');
    execFileSync('python3', [script, source, fixture('tokenizers', 'llama.cpp-vocab', 'ggml-vocab-bert-bge.gguf'), fixture('tokenizers', 'minilm'), tmp.dir], { stdio: 'ignore' });
    reference = TEXTS.map((text) => llamaCppEmbedding(tool, gguf(), text, 128));
  }, 120_000);
  afterAll(() => tmp?.cleanup());

  it('reads both as the same rotary SwiGLU encoder', async () => {
    for (const path of [folder(), gguf()]) {
      const w = await readWeights(path);
      try {
        expect(w.config).toMatchObject({ architecture: 'bert', modelType: 'nomic-bert', hiddenAct: 'swiglu', ropeTheta: 1000, hiddenSize: 64, numLayers: 2 });
        expect(w.tensors.some((t) => t.name.includes('position_embeddings'))).toBe(false);
      } finally {
        closeWeights(w);
      }
    }
  });

  it.each([
    ['HF folder', 'f32', 0.99999],
    ['GGUF', 'f32', 0.99999],
    ['HF folder', 'int8', 0.999],
    ['GGUF', 'int8', 0.999],
  ] as const)('%s %s: cosine to llama.cpp >= %s on every text', async (form, quant, floor) => {
    const embedder = await loadEmbedder(form === 'GGUF' ? gguf() : folder(), { threads: 1, quant: quant === 'f32' ? undefined : quant });
    try {
      const ours = await embedder.embed(TEXTS, { normalize: true, pooling: 'mean' });
      const cosines = ours.map((v, i) => cosine(v, reference[i]));
      console.log(`nomic-bert ${form} ${quant}: min cosine ${Math.min(...cosines).toFixed(8)}`);
      for (const c of cosines) expect(c).toBeGreaterThanOrEqual(floor);
    } finally {
      await embedder.dispose();
    }
  });
});
