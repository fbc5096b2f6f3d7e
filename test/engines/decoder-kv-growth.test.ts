/**
 * A session's KV cache grows as positions fill (native/engines/decoder_kv.cc: 256 positions per kv
 * head, doubled): decoding one token at a time through the growths (positions 256 and 512, the
 * rows so far copied) gives the logits, bit for bit, of a session whose cache was already large
 * enough (grown by a long prompt first, then truncated), for each cache type.
 */
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { DecoderEngine } from '../../lib/engines/decoder';
import { closeWeights } from '../../lib/weights';
import { blobWeights, type BlobTensor } from '../formats/synthetic';
import { tempDir } from '../helpers/fixtures';

const DIM = 64;
const VOCAB = 512;

function config(): DecoderConfig {
  return {
    architecture: 'llama',
    hiddenSize: DIM,
    intermediateSize: 128,
    numLayers: 1,
    numHeads: 4,
    numKvHeads: 2,
    headDim: 16,
    vocabSize: VOCAB,
    maxSeqLen: 640,
    rmsNormEps: 1e-5,
    ropeTheta: 10000,
    ropePairing: 'half',
    tieWordEmbeddings: false,
    qkNorm: false,
  };
}

function tensors(): BlobTensor[] {
  let seed = 7;
  const f32 = (name: string, shape: number[]): BlobTensor => {
    const values = Float32Array.from({ length: shape.reduce((a, b) => a * b, 1) }, () => {
      seed = (seed * 1103515245 + 12345) % 2147483648;
      return seed / 2147483648 - 0.5;
    });
    return { name, dtype: 'f32', shape, bytes: new Uint8Array(values.buffer) };
  };
  const p = 'model.layers.0.';
  return [
    f32('model.embed_tokens.weight', [VOCAB, DIM]),
    f32(`${p}input_layernorm.weight`, [DIM]),
    f32(`${p}post_attention_layernorm.weight`, [DIM]),
    f32(`${p}self_attn.q_proj.weight`, [DIM, DIM]),
    f32(`${p}self_attn.k_proj.weight`, [32, DIM]),
    f32(`${p}self_attn.v_proj.weight`, [32, DIM]),
    f32(`${p}self_attn.o_proj.weight`, [DIM, DIM]),
    f32(`${p}mlp.gate_proj.weight`, [128, DIM]),
    f32(`${p}mlp.up_proj.weight`, [128, DIM]),
    f32(`${p}mlp.down_proj.weight`, [DIM, 128]),
    f32('model.norm.weight', [DIM]),
    f32('lm_head.weight', [VOCAB, DIM]),
  ];
}

const STEPS = 560;

async function stepLogits(session: { eval(ids: Int32Array): Promise<Float32Array> }): Promise<Float32Array[]> {
  const out: Float32Array[] = [];
  for (let i = 0; i < STEPS; i++) out.push(Float32Array.from(await session.eval(Int32Array.of((i * 37 + 11) % VOCAB))));
  return out;
}

describe('decoder KV cache growth', () => {
  const tmp = tempDir('weightmap-kvgrow-');
  afterAll(() => tmp.cleanup());

  test.each(['f32', 'f16', 'q8_0'] as const)('keeps every position (%s)', async (kvCache) => {
    const weights = blobWeights(tmp.dir, `model-${kvCache}.blob`, 'npy', config(), tensors());
    const engine = await DecoderEngine.load(weights, { threads: 2 });
    try {
      const growing = engine.createSession({ contextLength: 600, kvCache });
      const got = await stepLogits(growing);
      growing.dispose();
      const grown = engine.createSession({ contextLength: 600, kvCache });
      await grown.eval(Int32Array.from({ length: 600 }, (_, i) => i % VOCAB)); // capacity 600 at once
      grown.truncate(0);
      const want = await stepLogits(grown);
      grown.dispose();
      for (let i = 0; i < STEPS; i++)
        if (!got[i].every((v, j) => v === want[i][j])) throw new Error(`step ${i}: logits differ`);
    } finally {
      engine.dispose();
      closeWeights(weights);
    }
  });
});
