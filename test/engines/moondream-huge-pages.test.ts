/**
 * The Moondream text engine (phi) advises huge pages over the text matrices it streams per token,
 * as the decoder does (test/engines/decoder-huge-pages.test.ts): loaded over a file that is not in
 * the page cache and run for a token, those matrices are mapped by 2 MB entries, the token
 * embedding (looked up a row at a time) by small ones. Linux with THP not `never` only.
 */
import * as fs from 'node:fs';
import { moondreamTensorSpecs, type MoondreamConfig } from '../../lib/architectures/moondream';
import { MoondreamEngine } from '../../lib/engines/moondream';
import { closeWeights, type ModelWeights } from '../../lib/weights';
import { blobWeights, type BlobTensor } from '../formats/synthetic';
import { tempDir } from '../helpers/fixtures';

const THP = '/sys/kernel/mm/transparent_hugepage/enabled';
const thpUsable = process.platform === 'linux' && fs.existsSync(THP) && !fs.readFileSync(THP, 'utf8').includes('[never]');

interface MappedPart {
  start: number;
  end: number;
  pmdBytes: number;
}

/** This process's mappings of `file` (one per VMA), with their FilePmdMapped bytes. */
function mappings(file: string): MappedPart[] {
  const real = fs.realpathSync(file);
  const parts: MappedPart[] = [];
  let current: MappedPart | undefined;
  for (const line of fs.readFileSync('/proc/self/smaps', 'utf8').split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) /.exec(line);
    if (head) {
      current = line.trimEnd().endsWith(` ${real}`) ? { start: parseInt(head[1], 16), end: parseInt(head[2], 16), pmdBytes: 0 } : undefined;
      if (current) parts.push(current);
    } else if (current && line.startsWith('FilePmdMapped:')) current.pmdBytes = Number(line.split(/\s+/)[1]) * 1024;
  }
  return parts;
}

const CONFIG: MoondreamConfig = {
  architecture: 'moondream',
  text: {
    hiddenSize: 512,
    numLayers: 2,
    numHeads: 8,
    headDim: 64,
    rotaryDim: 32,
    ropeTheta: 10000,
    intermediateSize: 2048,
    vocabSize: 2048,
    maxSeqLen: 64,
    layerNormEps: 1e-5,
    bosTokenId: 0,
    eosTokenId: 0,
  },
  vision: {
    hiddenSize: 64,
    numLayers: 1,
    numHeads: 2,
    headDim: 32,
    intermediateSize: 128,
    patchSize: 14,
    imageSize: 28,
    numPatches: 4,
    layerNormEps: 1e-5,
    projHidden: 128,
  },
};

/** f16 tensors of small values (0x2c00: 0.0625), the vision linears stored [in, out]; the embedding first. */
function tensors(): BlobTensor[] {
  return moondreamTensorSpecs(CONFIG).map((s) => {
    const count = s.shape.reduce((a, b) => a * b, 1);
    const bytes = new Uint8Array(new Uint16Array(count).fill(0x2c00).buffer);
    return s.visionLinear
      ? { name: s.name, dtype: 'f16' as const, shape: [...s.shape].reverse(), bytes, transposed: true }
      : { name: s.name, dtype: 'f16' as const, shape: s.shape, bytes };
  });
}

/** Drops the file's page cache: written back, mapped here page by page, then paged out (MADV_PAGEOUT). */
function evict(weights: ModelWeights): void {
  const source = weights.sources[0];
  const fd = fs.openSync(weights.path, 'r');
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  let sink = 0;
  for (let i = 0; i < source.bytes.length; i += 4096) sink ^= source.bytes[i];
  expect(sink).toBeGreaterThanOrEqual(0);
  source.file.advise(0, source.byteLength, 'pageout');
}

const suite = thpUsable ? describe : describe.skip;

suite('moondream text engine over a file not in the page cache', () => {
  const tmp = tempDir('weightmap-moon-thp-');
  afterAll(() => tmp.cleanup());

  test('maps the text matrices by 2 MB page-table entries, the embedding by small ones', async () => {
    const weights = blobWeights(tmp.dir, 'model.blob', 'npy', CONFIG, tensors());
    try {
      evict(weights);
      const source = weights.sources[0];
      expect(source.residentBytes()).toBeLessThan(source.byteLength / 4);
      const embedEnd = weights.tensors[0].byteOffset + weights.tensors[0].byteLength;
      const lm = weights.tensors.find((t) => t.name === 'model.text.lm_head.weight')!;
      const textEnd = lm.byteOffset + lm.byteLength;
      const engine = await MoondreamEngine.load(weights, { threads: 1 });
      try {
        const session = engine.createSession();
        await session.eval([1, 2]);
        session.dispose();
        const parts = mappings(weights.path);
        const base = Math.min(...parts.map((p) => p.start));
        const pmd = parts.reduce((a, p) => a + p.pmdBytes, 0);
        // The text matrices' whole 2 MB blocks, less at most one at each end of their run.
        expect(pmd).toBeGreaterThanOrEqual(textEnd - embedEnd - 2 * (2 << 20));
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
