/**
 * A decoder loaded over a file that is not in the page cache reads the matrices it uses in place
 * into 2 MB folios mapped by PMD (native/mmap/huge_pages.h), and leaves an untied token embedding,
 * looked up a row at a time, in small pages. Read from /proc/self/smaps (FilePmdMapped of each of
 * this process's mappings of the file). Linux with transparent huge pages not `never` only.
 */
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { DecoderEngine } from '../../lib/engines/decoder';
import { closeWeights } from '../../lib/addon/weights';
import { blobWeights, type BlobTensor } from '../formats/synthetic';
import { tempDir } from '../helpers/fixtures';
import { evict, fileMappings, thpUsable } from '../helpers/page-cache';

const DIM = 512;
const HIDDEN = 2048;
const VOCAB = 4096;

function config(): DecoderConfig {
  return {
    architecture: 'llama',
    hiddenSize: DIM,
    intermediateSize: HIDDEN,
    numLayers: 2,
    numHeads: 8,
    numKvHeads: 8,
    headDim: DIM / 8,
    vocabSize: VOCAB,
    maxSeqLen: 64,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropePairing: 'half',
    tieWordEmbeddings: false,
    qkNorm: false,
  };
}

/** An untied f32 Llama of ~48 MB, the embedding first: 8 MB of embedding, 40 MB of matrices. */
function tensors(): BlobTensor[] {
  const f32 = (name: string, shape: number[]): BlobTensor => ({
    name,
    dtype: 'f32',
    shape,
    bytes: new Uint8Array(shape.reduce((a, b) => a * b, 1) * 4).fill(0x3c),
  });
  const out = [f32('model.embed_tokens.weight', [VOCAB, DIM])];
  for (let l = 0; l < 2; l++) {
    const p = `model.layers.${l}.`;
    out.push(f32(`${p}input_layernorm.weight`, [DIM]), f32(`${p}post_attention_layernorm.weight`, [DIM]));
    for (const m of ['q', 'k', 'v', 'o']) out.push(f32(`${p}self_attn.${m}_proj.weight`, [DIM, DIM]));
    out.push(f32(`${p}mlp.gate_proj.weight`, [HIDDEN, DIM]), f32(`${p}mlp.up_proj.weight`, [HIDDEN, DIM]));
    out.push(f32(`${p}mlp.down_proj.weight`, [DIM, HIDDEN]));
  }
  out.push(f32('model.norm.weight', [DIM]), f32('lm_head.weight', [VOCAB, DIM]));
  return out;
}

const suite = thpUsable ? describe : describe.skip;

suite('decoder load over a file not in the page cache', () => {
  const tmp = tempDir('weightmap-thp-');
  afterAll(() => tmp.cleanup());

  test('maps the matrices it streams by 2 MB page-table entries, the untied embedding by small ones', async () => {
    const weights = blobWeights(tmp.dir, 'model.blob', 'npy', config(), tensors());
    try {
      evict(weights);
      const source = weights.sources[0];
      // Evicted, or the test would measure the page cache as written.
      expect(source.residentBytes()).toBeLessThan(source.byteLength / 4);
      const embedEnd = weights.tensors[0].byteOffset + weights.tensors[0].byteLength;
      const matrixBytes = source.byteLength - embedEnd;

      const engine = await DecoderEngine.load(weights, { threads: 2 });
      try {
        const parts = fileMappings(weights.path);
        const base = Math.min(...parts.map((p) => p.start));
        expect(base % (2 << 20)).toBe(0); // the mapping starts on a 2 MB boundary
        const pmd = parts.reduce((a, p) => a + p.pmdBytes, 0);
        // Every whole 2 MB block of the matrices, less at most one at each end of their run.
        expect(pmd).toBeGreaterThanOrEqual(matrixBytes - 2 * (2 << 20));
        // The embedding's blocks (below its last 2 MB boundary) stay in small pages.
        const embedPmd = parts.filter((p) => p.start - base < embedEnd - (2 << 20)).reduce((a, p) => a + p.pmdBytes, 0);
        expect(embedPmd).toBe(0);
      } finally {
        engine.dispose();
      }
    } finally {
      closeWeights(weights);
    }
  });
});
