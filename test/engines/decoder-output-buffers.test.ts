/**
 * eval()'s output buffers are recycled once JavaScript lets go of them (native/napi/output_buffers.h):
 * an array still held is never handed out again, and a recycled buffer is written whole (two
 * tokens' logits alternating through recycled buffers each equal their first evaluation).
 */
import type { DecoderConfig } from '../../lib/architectures/decoder';
import { DecoderEngine } from '../../lib/engines/decoder';
import { closeWeights } from '../../lib/addon/weights';
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
    maxSeqLen: 16,
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

describe('decoder eval output buffers', () => {
  const tmp = tempDir('weightmap-outbuf-');
  afterAll(() => tmp.cleanup());

  test('are recycled only once collected, and written whole', async () => {
    const weights = blobWeights(tmp.dir, 'model.blob', 'npy', config(), tensors());
    const engine = await DecoderEngine.load(weights, { threads: 1 });
    try {
      const session = engine.createSession({ contextLength: 16 });
      const held = await session.eval(Int32Array.of(3, 1, 4));
      const heldCopy = Float32Array.from(held);
      const want = new Map<number, Float32Array>();
      for (const t of [5, 7]) {
        session.truncate(0);
        want.set(t, Float32Array.from(await session.eval(Int32Array.of(t))));
      }
      expect(Array.from(want.get(5)!)).not.toEqual(Array.from(want.get(7)!));
      for (let i = 0; i < 400; i++) {
        const t = i % 2 ? 7 : 5;
        session.truncate(0);
        const got = await session.eval(Int32Array.of(t));
        if (!got.every((v, j) => v === want.get(t)![j])) throw new Error(`eval ${i} (token ${t}) differs`);
        // young garbage, so that scavenges collect the dropped outputs and their buffers come back
        if (i % 8 === 0) Array.from({ length: 50000 }, (_, j) => ({ j }));
      }
      expect(Array.from(held)).toEqual(Array.from(heldCopy));
      session.dispose();
    } finally {
      engine.dispose();
      closeWeights(weights);
    }
  });
});
