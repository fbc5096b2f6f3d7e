/**
 * A session's KV cache lies on 2 MB pages (native/mmap/huge_buffer.h): filling a cache of 16 MB
 * grows this process's AnonHugePages (/proc/self/smaps_rollup) by about that much. Linux with
 * transparent huge pages not `never` only.
 */
import * as fs from 'node:fs';
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { DecoderEngine } from '../../lib/engines/decoder';
import { closeWeights } from '../../lib/weights';
import { blobWeights, type BlobTensor } from '../formats/synthetic';
import { tempDir } from '../helpers/fixtures';

const THP = '/sys/kernel/mm/transparent_hugepage/enabled';
const thpUsable = process.platform === 'linux' && fs.existsSync(THP) && !fs.readFileSync(THP, 'utf8').includes('[never]');

const DIM = 512;
const CONTEXT = 2048;

function config(): DecoderConfig {
  return {
    architecture: 'llama',
    hiddenSize: DIM,
    intermediateSize: 512,
    numLayers: 2,
    numHeads: 8,
    numKvHeads: 8,
    headDim: 64,
    vocabSize: 256,
    maxSeqLen: CONTEXT,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropePairing: 'half',
    tieWordEmbeddings: false,
    qkNorm: false,
  };
}

function tensors(): BlobTensor[] {
  const f32 = (name: string, shape: number[]): BlobTensor => {
    const values = new Float32Array(shape.reduce((a, b) => a * b, 1));
    for (let i = 0; i < values.length; i++) values[i] = ((i * 2654435761) % 1000) / 1e4 - 0.05;
    return { name, dtype: 'f32', shape, bytes: new Uint8Array(values.buffer) };
  };
  const out = [f32('model.embed_tokens.weight', [256, DIM])];
  for (let l = 0; l < 2; l++) {
    const p = `model.layers.${l}.`;
    out.push(f32(`${p}input_layernorm.weight`, [DIM]), f32(`${p}post_attention_layernorm.weight`, [DIM]));
    for (const m of ['q', 'k', 'v', 'o']) out.push(f32(`${p}self_attn.${m}_proj.weight`, [DIM, DIM]));
    out.push(f32(`${p}mlp.gate_proj.weight`, [512, DIM]), f32(`${p}mlp.up_proj.weight`, [512, DIM]));
    out.push(f32(`${p}mlp.down_proj.weight`, [DIM, 512]));
  }
  out.push(f32('model.norm.weight', [DIM]), f32('lm_head.weight', [256, DIM]));
  return out;
}

function anonHugeBytes(): number {
  const line = fs.readFileSync('/proc/self/smaps_rollup', 'utf8').split('\n').find((l) => l.startsWith('AnonHugePages:'));
  return line ? Number(line.split(/\s+/)[1]) * 1024 : 0;
}

const suite = thpUsable ? describe : describe.skip;

suite('decoder KV cache', () => {
  const tmp = tempDir('weightmap-kv-thp-');
  afterAll(() => tmp.cleanup());

  test('fills 2 MB pages', async () => {
    const weights = blobWeights(tmp.dir, 'model.blob', 'npy', config(), tensors());
    const engine = await DecoderEngine.load(weights, { threads: 1 });
    try {
      const before = anonHugeBytes();
      const session = engine.createSession({ contextLength: CONTEXT, kvCache: 'f32' });
      try {
        // keys and values: 2 layers · 8 kv heads · 2048 positions · 64 · 4 bytes = 8 MB each
        expect(session.cacheBytes).toBe(16 << 20);
        await session.eval(Int32Array.from({ length: CONTEXT }, (_, i) => (i * 31) % 256));
        // Every whole 2 MB block of both caches (a fault may fall back to small pages when the
        // kernel finds no free huge page: allow one block per cache).
        expect(anonHugeBytes() - before).toBeGreaterThanOrEqual(session.cacheBytes - 2 * (2 << 20));
      } finally {
        session.dispose();
      }
    } finally {
      engine.dispose();
      closeWeights(weights);
    }
  });
});
