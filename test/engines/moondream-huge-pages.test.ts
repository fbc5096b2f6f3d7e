/**
 * The Moondream text engine (phi) loaded over a file that is not in the page cache maps the f16
 * matrices it streams every token by 2 MB page-table entries (native/engines/in_place_pages.h), and
 * leaves the token embedding, looked up a row at a time, in small pages. Read from /proc/self/smaps.
 */
import { MOONDREAM2_CONFIG, moondreamTensorSpecs, type MoondreamConfig } from '../../lib/architectures/moondream';
import { MoondreamEngine } from '../../lib/engines/moondream';
import { closeWeights } from '../../lib/addon/weights';
import { blobWeights, type BlobTensor } from '../formats/synthetic';
import { tempDir } from '../helpers/fixtures';
import { evict, fileMappings, thpUsable } from '../helpers/page-cache';

const MB2 = 2 << 20;

/** Text 512 wide, 2 layers, vocabulary 4096 (4 MB of f16 embedding, 16 MB of text matrices); a tiny vision tower. */
function config(): MoondreamConfig {
  const t = MOONDREAM2_CONFIG.text;
  return {
    architecture: 'moondream',
    text: { ...t, hiddenSize: 512, numLayers: 2, numHeads: 8, headDim: 64, rotaryDim: 32, intermediateSize: 2048, vocabSize: 4096, bosTokenId: 1, eosTokenId: 2 },
    vision: { hiddenSize: 48, numLayers: 1, numHeads: 4, headDim: 12, intermediateSize: 96, patchSize: 14, imageSize: 56, numPatches: 16, layerNormEps: 1e-5, projHidden: 64 },
  };
}

/** Every tensor as f16 0.0039 (0x1c00), the embedding first; vision linears stored [in,out] as MOON stores them. */
function tensors(c: MoondreamConfig): BlobTensor[] {
  return moondreamTensorSpecs(c).map(({ name, shape, visionLinear }) => {
    const bytes = new Uint8Array(shape.reduce((a, b) => a * b, 1) * 2);
    for (let i = 1; i < bytes.length; i += 2) bytes[i] = 0x1c;
    return visionLinear ? { name, dtype: 'f16', shape: [...shape].reverse(), bytes, transposed: true } : { name, dtype: 'f16', shape, bytes };
  });
}

const suite = thpUsable ? describe : describe.skip;

suite('Moondream text engine over a file not in the page cache', () => {
  const tmp = tempDir('weightmap-thp-moon-');
  afterAll(() => tmp.cleanup());

  test('maps the text matrices by 2 MB page-table entries once decoding, the token embedding by small ones', async () => {
    const c = config();
    const weights = blobWeights(tmp.dir, 'model.blob', 'moon', c, tensors(c));
    try {
      evict(weights);
      const source = weights.sources[0];
      expect(source.residentBytes()).toBeLessThan(source.byteLength / 4);
      const wte = weights.tensors[0];
      const embedEnd = wte.byteOffset + wte.byteLength;
      const text = weights.tensors.filter((t) => t.name.startsWith('model.text.') && t.shape.length === 2 && t !== wte);
      const textEnd = Math.max(...text.map((t) => t.byteOffset + t.byteLength));

      const engine = await MoondreamEngine.load(weights, { threads: 2 });
      try {
        const session = engine.createSession();
        await session.eval([1, 5, 9]);
        await session.eval([7]);
        session.dispose();
        const parts = fileMappings(weights.path);
        const base = Math.min(...parts.map((p) => p.start));
        expect(base % MB2).toBe(0);
        // The text matrices' whole 2 MB blocks, less at most one at each end of their run.
        expect(parts.reduce((a, p) => a + p.pmdBytes, 0)).toBeGreaterThanOrEqual(textEnd - embedEnd - 2 * MB2);
        // The embedding's blocks (below its last 2 MB boundary) stay in small pages.
        const embedPmd = parts.filter((p) => p.start - base < embedEnd - MB2).reduce((a, p) => a + p.pmdBytes, 0);
        expect(embedPmd).toBe(0);
      } finally {
        engine.dispose();
      }
    } finally {
      closeWeights(weights);
    }
  });
});
