/**
 * Helpers for the tests of the formats users already hold (npy, sepweight, safetensors, GGUF,
 * llama2.c): raw bytes of views, the llama2.c checkpoint layout written out from the spec, HF's
 * q/k permutation written from its definition, and error expectations.
 */
import * as fs from 'node:fs';
import * as path from 'node:path';
import { WeightFormatError, type WeightFormatErrorCode } from '../../lib/base/errors';
import type { TensorView } from '../../lib/addon/weights';
import { fixture } from '../helpers/fixtures';

export const STORIES = fixture('llama-stories260k');
export const STORIES_BIN = fixture('llama-stories260k', 'stories260K.bin');
export const STORIES_GGUF = fixture('llama-stories260k', 'stories260K.gguf');
export const STORIES_TREE = fixture('llama-stories260k', 'sepweight');
export const TOK512 = fixture('llama-stories260k', 'tok512.bin');

/** stories260K's hyperparameters as the fixture README states them. */
export const STORIES_CONFIG = { dim: 64, hidden: 172, layers: 5, heads: 8, kvHeads: 4, vocab: 512, seqLen: 512, headDim: 8 };

/** The bytes a view points at (zero-copy). */
export function bytesOf(view: TensorView): Buffer {
  return view.source.bytes.subarray(view.byteOffset, view.byteOffset + view.byteLength);
}

/** A float32 view's values (copied). */
export function f32Of(view: TensorView): Float32Array {
  if (view.dtype !== 'f32') throw new Error(`${view.name} is ${view.dtype}`);
  const b = Buffer.from(bytesOf(view));
  return new Float32Array(b.buffer, b.byteOffset, b.length / 4);
}

export function f32Bytes(values: Float32Array): Buffer {
  return Buffer.from(values.buffer, values.byteOffset, values.byteLength);
}

/**
 * Byte ranges of each canonical tensor inside stories260K.bin, computed from llama2.c's
 * legacy_export order (7 x i32 header; embedding, rms_att, wq, wk, wv, wo, rms_ffn, w1, w2, w3,
 * rms_final, freq_cis real/imag; shared classifier).
 */
export function storiesBinLayout(): { ranges: Map<string, [number, number]>; freqCis: [number, number] } {
  const { dim, hidden, layers, heads, kvHeads, vocab, seqLen } = STORIES_CONFIG;
  const hs = dim / heads;
  const ranges = new Map<string, [number, number]>();
  let at = 28;
  const put = (name: string, count: number) => {
    ranges.set(name, [at, at + count * 4]);
    at += count * 4;
  };
  put('model.embed_tokens.weight', vocab * dim);
  const each = (suffix: string, count: number) => {
    for (let l = 0; l < layers; l++) put(`model.layers.${l}.${suffix}`, count);
  };
  each('input_layernorm.weight', dim);
  each('self_attn.q_proj.weight', dim * heads * hs);
  each('self_attn.k_proj.weight', dim * kvHeads * hs);
  each('self_attn.v_proj.weight', dim * kvHeads * hs);
  each('self_attn.o_proj.weight', heads * hs * dim);
  each('post_attention_layernorm.weight', dim);
  each('mlp.gate_proj.weight', dim * hidden);
  each('mlp.down_proj.weight', hidden * dim);
  each('mlp.up_proj.weight', dim * hidden);
  put('model.norm.weight', dim);
  const freqCis: [number, number] = [at, at + seqLen * (hs / 2) * 4 * 2];
  return { ranges, freqCis };
}

/** The bytes of a canonical tensor in stories260K.bin. */
export function storiesBinTensor(name: string): Buffer {
  const range = storiesBinLayout().ranges.get(name);
  if (!range) throw new Error(`no ${name} in stories260K.bin`);
  return fs.readFileSync(STORIES_BIN).subarray(range[0], range[1]);
}

/**
 * HF's convert_llama_weights_to_hf permute(): w.view(n_heads, hd/2, 2, cols).transpose(1, 2),
 * i.e. HF row (h, j, i) = Meta row (h, i, j). Rows of `cols` float32 values.
 */
export function metaToHf(meta: Float32Array, nHeads: number, headDim: number, cols: number): Float32Array {
  const out = new Float32Array(meta.length);
  const half = headDim / 2;
  for (let h = 0; h < nHeads; h++) {
    for (let j = 0; j < 2; j++) {
      for (let i = 0; i < half; i++) {
        const hfRow = h * headDim + j * half + i;
        const metaRow = h * headDim + i * 2 + j;
        out.set(meta.subarray(metaRow * cols, (metaRow + 1) * cols), hfRow * cols);
      }
    }
  }
  return out;
}

export function bufferToF32(b: Buffer): Float32Array {
  const copy = Buffer.from(b);
  return new Float32Array(copy.buffer, copy.byteOffset, copy.length / 4);
}

/** Awaits `p` and checks it fails with a WeightFormatError of `code`; returns the error. */
export async function expectFormatError(p: Promise<unknown> | (() => unknown), code: WeightFormatErrorCode): Promise<WeightFormatError> {
  let error: unknown;
  try {
    await (typeof p === 'function' ? p() : p);
  } catch (e) {
    error = e;
  }
  if (!(error instanceof WeightFormatError)) {
    throw new Error(`expected WeightFormatError ${code}, got ${error === undefined ? 'success' : String((error as Error)?.stack ?? error)}`);
  }
  if (error.code !== code) throw new Error(`expected ${code}, got ${error.code}: ${error.message}`);
  return error;
}

/** Every file under `dir`, relative to it, sorted. */
export function listFiles(dir: string): string[] {
  const out: string[] = [];
  const walk = (d: string) => {
    for (const e of fs.readdirSync(d, { withFileTypes: true })) {
      const p = path.join(d, e.name);
      if (e.isDirectory()) walk(p);
      else out.push(path.relative(dir, p));
    }
  };
  walk(dir);
  return out.sort();
}

/** A copy of `src` at `dst` with `edit` applied to its bytes. */
export function writeEdited(src: string, dst: string, edit: (b: Buffer) => Buffer | void): string {
  const b = Buffer.from(fs.readFileSync(src));
  const out = edit(b) ?? b;
  fs.writeFileSync(dst, out);
  return dst;
}
