/**
 * Pillow's resampler (Image.resize with a filter, no reducing_gap), byte for byte as llama.cpp's
 * mtmd ports it (tools/mtmd/mtmd-image.cpp resize_pillow): per axis, normalized filter weights in
 * 22-bit fixed point, a horizontal pass to 8 bits, then a vertical pass. mtmd resizes SmolVLM's
 * images with it (Lanczos), so weightmap does too where a tile layout must match mtmd's pixels.
 */
import { rangeError } from '../base/errors';

export type PillowFilter = 'bilinear' | 'bicubic' | 'lanczos';

const PRECISION_BITS = 22;
const SUPPORT: Record<PillowFilter, number> = { bilinear: 1, bicubic: 2, lanczos: 3 };

function sinc(v: number): number {
  if (v === 0) return 1;
  const x = v * Math.PI;
  return Math.sin(x) / x;
}

function filterWeight(filter: PillowFilter, x: number): number {
  if (filter === 'lanczos') return -3 <= x && x < 3 ? sinc(x) * sinc(x / 3) : 0;
  x = Math.abs(x);
  if (filter === 'bilinear') return x < 1 ? 1 - x : 0;
  const a = -0.5; // Pillow's bicubic
  if (x < 1) return ((a + 2) * x - (a + 3)) * x * x + 1;
  if (x < 2) return (((x - 5) * x + 8) * x - 4) * a;
  return 0;
}

/** Per output pixel: its first input pixel, how many, and their fixed-point weights (ksize per pixel). */
function weights(inSize: number, outSize: number, filter: PillowFilter): { bounds: Int32Array; kernel: Int32Array; ksize: number } {
  const scale = inSize / outSize;
  const filterScale = Math.max(scale, 1);
  const support = SUPPORT[filter] * filterScale;
  const ksize = Math.ceil(support) * 2 + 1;
  const bounds = new Int32Array(outSize * 2);
  const kernel = new Int32Array(outSize * ksize);
  const pre = new Float64Array(ksize);
  const fixed = 2 ** PRECISION_BITS;
  for (let xx = 0; xx < outSize; xx++) {
    const center = (xx + 0.5) * scale;
    const xmin = Math.max(Math.trunc(center - support + 0.5), 0);
    const count = Math.min(Math.trunc(center + support + 0.5), inSize) - xmin;
    let total = 0;
    for (let x = 0; x < count; x++) {
      pre[x] = filterWeight(filter, (x + xmin - center + 0.5) / filterScale);
      total += pre[x];
    }
    for (let x = 0; x < count; x++) {
      const w = total !== 0 ? pre[x] / total : pre[x];
      kernel[xx * ksize + x] = Math.trunc(w * fixed + (w < 0 ? -0.5 : 0.5));
    }
    bounds[xx * 2] = xmin;
    bounds[xx * 2 + 1] = count;
  }
  return { bounds, kernel, ksize };
}

const clip8 = (v: number) => (v < 0 ? 0 : v > 255 ? 255 : v);

function horizontal(src: Uint8Array, inW: number, h: number, outW: number, filter: PillowFilter): Uint8Array {
  const { bounds, kernel, ksize } = weights(inW, outW, filter);
  const out = new Uint8Array(outW * h * 3);
  for (let y = 0; y < h; y++) {
    for (let xx = 0; xx < outW; xx++) {
      const xmin = bounds[xx * 2];
      const count = bounds[xx * 2 + 1];
      let s0 = 1 << (PRECISION_BITS - 1);
      let s1 = s0;
      let s2 = s0;
      for (let x = 0; x < count; x++) {
        const k = kernel[xx * ksize + x];
        const p = (y * inW + xmin + x) * 3;
        s0 += src[p] * k;
        s1 += src[p + 1] * k;
        s2 += src[p + 2] * k;
      }
      const o = (y * outW + xx) * 3;
      out[o] = clip8(s0 >> PRECISION_BITS);
      out[o + 1] = clip8(s1 >> PRECISION_BITS);
      out[o + 2] = clip8(s2 >> PRECISION_BITS);
    }
  }
  return out;
}

function vertical(src: Uint8Array, w: number, inH: number, outH: number, filter: PillowFilter): Uint8Array {
  const { bounds, kernel, ksize } = weights(inH, outH, filter);
  const row = w * 3;
  const out = new Uint8Array(row * outH);
  for (let yy = 0; yy < outH; yy++) {
    const ymin = bounds[yy * 2];
    const count = bounds[yy * 2 + 1];
    for (let i = 0; i < row; i++) {
      let s = 1 << (PRECISION_BITS - 1);
      for (let y = 0; y < count; y++) s += src[(ymin + y) * row + i] * kernel[yy * ksize + y];
      out[yy * row + i] = clip8(s >> PRECISION_BITS);
    }
  }
  return out;
}

/** RGB [height, width, 3] resized to [outHeight, outWidth, 3] (a copy when the size is the same). */
export function resizePillow(rgb: Uint8Array, width: number, height: number, outWidth: number, outHeight: number, filter: PillowFilter): Uint8Array {
  if (rgb.length !== width * height * 3) throw rangeError(`resizePillow: ${width}x${height} RGB needs ${width * height * 3} bytes, got ${rgb.length}`);
  if (!Number.isInteger(outWidth) || !Number.isInteger(outHeight) || outWidth < 1 || outHeight < 1 || outWidth > 65536 || outHeight > 65536) {
    throw rangeError(`resizePillow: the target ${outWidth}x${outHeight} is out of range (1..65536)`);
  }
  let out = rgb;
  if (outWidth !== width) out = horizontal(out, width, height, outWidth, filter);
  if (outHeight !== height) out = vertical(out, outWidth, height, outHeight, filter);
  return out === rgb ? rgb.slice() : out;
}
