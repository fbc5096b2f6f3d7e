/**
 * Moving q/k projection rows between the two RoPE pairings (FORMATS.md §4.2, §7).
 *
 * Meta/llama2.c/GGUF-llama checkpoints rotate pairs (2i, 2i+1) of each head ('interleaved');
 * Hugging Face rotates pairs (i, i+hd/2) ('half'). HF's conversion script permutes the rows of
 * q_proj and k_proj so that both give the same attention: within each head, HF row j·hd/2 + i
 * holds Meta row 2i + j (i < hd/2, j ∈ {0,1}). Writers use these permutations to store a model in
 * the pairing their format implies; v_proj and everything else are untouched.
 */
import { rangeError, UnsupportedError } from '../../base/errors';
import { DECODER_NAMES, type DecoderConfig } from '../../architectures/decoder';
import type { TensorView } from '../../addon/weights';
import { canonicalShape, readF32, transposedF32Chunks } from '../quantization/tensor-data';

export type RopePairing = DecoderConfig['ropePairing'];

/**
 * For a projection of `numHeads` heads of `headDim` rows: `src[r]` = the source row that becomes
 * output row r when converting rows stored for `from` pairing into `to` pairing.
 */
export function ropeRowSources(numHeads: number, headDim: number, from: RopePairing, to: RopePairing): Int32Array {
  if (headDim % 2 !== 0) throw new UnsupportedError(`RoPE needs an even head_dim, got ${headDim}`);
  const src = new Int32Array(numHeads * headDim);
  const half = headDim / 2;
  for (let h = 0; h < numHeads; h++) {
    for (let i = 0; i < half; i++) {
      for (let j = 0; j < 2; j++) {
        const halfRow = h * headDim + j * half + i;
        const interleavedRow = h * headDim + 2 * i + j;
        if (from === to) src[halfRow] = halfRow;
        else if (to === 'half') src[halfRow] = interleavedRow;
        else src[interleavedRow] = halfRow;
      }
    }
  }
  return src;
}

/**
 * The row permutation a writer must apply to tensor `name` when the source stores q/k for
 * `from` and the target wants `to`; undefined when the tensor is not moved.
 */
export function qkRowSources(config: DecoderConfig, name: string, to: RopePairing): Int32Array | undefined {
  if (config.ropePairing === to) return undefined;
  for (let l = 0; l < config.numLayers; l++) {
    if (name === DECODER_NAMES.q(l)) return ropeRowSources(config.numHeads, config.headDim, config.ropePairing, to);
    if (name === DECODER_NAMES.k(l)) return ropeRowSources(config.numKvHeads, config.headDim, config.ropePairing, to);
  }
  return undefined;
}

/**
 * The canonical 2-D tensor `view` ([rows, cols] after undoing any stored transposition) as
 * float32 chunks of whole rows, output row r being source row `src[r]`.
 */
export function* permutedRowChunks(view: TensorView, src: Int32Array, chunkElements = 1 << 20): Generator<Float32Array> {
  const shape = canonicalShape(view);
  if (shape.length !== 2 || shape[0] !== src.length) {
    throw rangeError(`cannot permute the rows of '${view.name}' (shape ${shape.join('x')}) with ${src.length} row indices`);
  }
  const [rows, cols] = shape;
  let readRow: (r: number, out: Float32Array<ArrayBuffer>) => void;
  if (view.transposed) {
    // A stored transpose has no contiguous rows: gather the canonical matrix once (q/k are small).
    const whole = new Float32Array(rows * cols);
    let at = 0;
    for (const chunk of transposedF32Chunks(view, chunkElements)) {
      whole.set(chunk, at);
      at += chunk.length;
    }
    readRow = (r, out) => out.set(whole.subarray(r * cols, (r + 1) * cols));
  } else {
    readRow = (r, out) => readF32(view, r * cols, cols, out);
  }
  const rowsPerChunk = Math.max(1, Math.floor(chunkElements / Math.max(1, cols)));
  const buf = new Float32Array(Math.min(rows, rowsPerChunk) * cols);
  for (let r0 = 0; r0 < rows; r0 += rowsPerChunk) {
    const n = Math.min(rowsPerChunk, rows - r0);
    for (let r = 0; r < n; r++) readRow(src[r0 + r], buf.subarray(r * cols, (r + 1) * cols));
    yield buf.subarray(0, n * cols);
  }
}
