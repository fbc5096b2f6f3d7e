/**
 * Images for vision encoders: RGB bytes at the encoder's size. Raw pixels already at that size
 * are used as they are; anything else (an image file, encoded bytes, raw pixels of another size
 * or channel count) is decoded and resized with sharp (an optional dependency), stretched to
 * the square without keeping the aspect ratio (moondream-zig's single 378×378 view).
 */
import * as fs from 'node:fs';
import { rangeError, UnsupportedError } from '../base/errors';

/** Uncompressed pixels, row-major, `channels` bytes per pixel (1 grey, 3 RGB, 4 RGBA). */
export interface RawImage {
  data: Uint8Array;
  width: number;
  height: number;
  channels: 1 | 3 | 4;
}

/** A file path, encoded image bytes (JPEG, PNG, WebP, GIF, TIFF, AVIF, SVG), or raw pixels. */
export type ImageInput = string | Uint8Array | RawImage;

/**
 * How an image of another size becomes the encoder's square: stretched (the default, with sharp's
 * lanczos3), or `letterbox`: scaled to fit (sides rounded up) with `kernel`, centred on a black
 * square (llama.cpp's PAD_CEIL with its pad offsets rounded down).
 */
export interface ResizeSpec {
  fit: 'stretch' | 'letterbox';
  kernel?: 'linear' | 'cubic' | 'lanczos3';
}

type Sharp = typeof import('sharp');
let sharpModule: Sharp | undefined;

/**
 * sharp is an optional dependency (about 17 MB of libvips): loaded on the first image that needs
 * decoding or resizing, never for raw RGB at the encoder size.
 */
function loadSharp(why: string): Sharp {
  if (sharpModule) return sharpModule;
  try {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    sharpModule = require('sharp') as Sharp;
    return sharpModule;
  } catch (cause) {
    throw new UnsupportedError(
      `${why} needs the optional package 'sharp', which could not be loaded (${(cause as Error).message.split('\n')[0]}): ` +
        'install it with `npm install sharp`, or pass raw RGB pixels at the encoder size',
    );
  }
}

function isRawImage(image: ImageInput): image is RawImage {
  return typeof image === 'object' && !ArrayBuffer.isView(image) && 'data' in image;
}

function checkedRaw(image: RawImage): RawImage {
  const { data, width, height, channels } = image;
  if (![1, 3, 4].includes(channels) || !Number.isInteger(width) || !Number.isInteger(height) || width < 1 || height < 1) {
    throw rangeError(`raw image: width and height must be positive integers and channels 1, 3 or 4`);
  }
  if (data.length !== width * height * channels) {
    throw rangeError(`raw image: ${width}x${height}x${channels} needs ${width * height * channels} bytes, got ${data.length}`);
  }
  return image;
}

/** A sharp pipeline over an image file or encoded bytes. */
function filePipeline(image: string | Uint8Array): import('sharp').Sharp {
  if (typeof image !== 'string' && !ArrayBuffer.isView(image)) {
    throw new TypeError('image must be a file path, encoded image bytes, or { data, width, height, channels }');
  }
  if (typeof image === 'string') fs.accessSync(image, fs.constants.R_OK); // ENOENT / EACCES as Node reports them
  const sharp = loadSharp('decoding an image file');
  try {
    return sharp(typeof image === 'string' ? image : Buffer.from(image.buffer, image.byteOffset, image.byteLength));
  } catch (cause) {
    throw new UnsupportedError(`cannot decode the image: ${(cause as Error).message}`);
  }
}

/** RGB bytes [size, size, 3] of `image` (resized as `resize` says when it is not RGB at that size). */
export async function imageToRgb(image: ImageInput, size: number, resize: ResizeSpec = { fit: 'stretch' }): Promise<Uint8Array> {
  if (isRawImage(image)) {
    const { data, width, height, channels } = checkedRaw(image);
    if (width === size && height === size && channels === 3) return data;
    const sharp = loadSharp(`resizing a ${width}x${height}x${channels} image to ${size}x${size} RGB`);
    return toRgb(sharp(data, { raw: { width, height, channels } }), size, resize);
  }
  return toRgb(filePipeline(image), size, resize);
}

/** RGB bytes [height, width, 3] of `image` at its own size (raw RGB as it is; anything else decoded by sharp). */
export async function decodeRgb(image: ImageInput): Promise<{ data: Uint8Array; width: number; height: number }> {
  let pipeline;
  if (isRawImage(image)) {
    const { data, width, height, channels } = checkedRaw(image);
    if (channels === 3) return { data, width, height };
    pipeline = loadSharp(`converting a ${width}x${height}x${channels} image to RGB`)(data, { raw: { width, height, channels } });
  } else pipeline = filePipeline(image);
  try {
    const { data, info } = await pipeline.removeAlpha().toColourspace('srgb').raw().toBuffer({ resolveWithObject: true });
    if (info.channels !== 3) throw new Error(`decoded to ${info.channels} channels`);
    return { data: new Uint8Array(data.buffer, data.byteOffset, data.byteLength), width: info.width, height: info.height };
  } catch (cause) {
    throw new UnsupportedError(`cannot decode the image: ${(cause as Error).message}`);
  }
}

async function toRgb(pipeline: import('sharp').Sharp, size: number, resize: ResizeSpec): Promise<Uint8Array> {
  try {
    let rgb = pipeline.removeAlpha().toColourspace('srgb');
    if (resize.fit === 'letterbox') {
      // Decoded first (for its size), then fitted and padded.
      const { data: decoded, info: raw } = await rgb.raw().toBuffer({ resolveWithObject: true });
      const scale = Math.min(size / raw.width, size / raw.height);
      const w = Math.min(Math.ceil(raw.width * scale), size);
      const h = Math.min(Math.ceil(raw.height * scale), size);
      const left = Math.floor((size - w) / 2);
      const top = Math.floor((size - h) / 2);
      const sharp = loadSharp('resizing an image');
      rgb = sharp(decoded, { raw: { width: raw.width, height: raw.height, channels: raw.channels } })
        .resize(w, h, { fit: 'fill', kernel: resize.kernel ?? 'lanczos3' })
        .extend({ left, top, right: size - w - left, bottom: size - h - top, background: { r: 0, g: 0, b: 0 } });
    } else {
      rgb = rgb.resize(size, size, { fit: 'fill', kernel: resize.kernel ?? 'lanczos3' });
    }
    const { data, info } = await rgb.raw().toBuffer({ resolveWithObject: true });
    if (info.channels !== 3 || info.width !== size || info.height !== size) {
      throw new Error(`decoded to ${info.width}x${info.height}x${info.channels}`);
    }
    return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  } catch (cause) {
    throw new UnsupportedError(`cannot decode the image: ${(cause as Error).message}`);
  }
}
