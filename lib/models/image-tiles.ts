/**
 * SmolVLM's (Idefics3's) image split as llama.cpp's mtmd does it (tools/mtmd/mtmd-image.cpp
 * mtmd_image_preprocessor_idefics3, the clip.vision.preproc_image_size branch, itself HF's
 * Idefics3ImageProcessor): the image resized, aspect kept, so that its longer side is the
 * preprocessor's longest edge (the shorter one truncated, then rounded up to even); resized again,
 * aspect not kept, to whole tiles of the encoder's size (sides rounded up); cut into those tiles
 * row by row; and the whole refined image resized to one tile, the overview. Every resize is
 * Pillow's Lanczos (lib/models/pillow-resize.ts), none where the size is already right.
 */
import { rangeError } from '../base/errors';
import { resizePillow } from './pillow-resize';

export interface ImageTiles {
  /** Tiles per row and rows of tiles. */
  columns: number;
  rows: number;
  /** RGB [tile, tile, 3] each, row by row. */
  tiles: Uint8Array[];
  /** The whole image as one tile. */
  overview: Uint8Array;
}

/** The most tiles one image may give (SmolVLM at its 2048 longest edge over 512 px tiles: 16). */
const MAX_TILES = 1024;

/** The tile grid (columns, rows) and the aspect-kept size of a `width`×`height` image. */
export function idefics3Grid(width: number, height: number, tile: number, longestEdge: number): { columns: number; rows: number; resized: [number, number] } {
  const aspect = width / height;
  let w: number;
  let h: number;
  if (width >= height) {
    w = longestEdge;
    h = Math.trunc(longestEdge / aspect);
    h += h % 2;
  } else {
    h = longestEdge;
    w = Math.trunc(longestEdge * aspect);
    w += w % 2;
  }
  if (w < 1 || h < 1) throw rangeError(`image: a ${width}x${height} image resized to a ${longestEdge} px longest edge has no pixels on its short side`);
  const columns = Math.ceil(w / tile);
  const rows = Math.ceil(h / tile);
  if (columns * rows > MAX_TILES) throw rangeError(`image: ${columns}x${rows} tiles, more than ${MAX_TILES}`);
  return { columns, rows, resized: [w, h] };
}

/** The tiles and overview of RGB [height, width, 3]. */
export function idefics3Tiles(rgb: Uint8Array, width: number, height: number, tile: number, longestEdge: number): ImageTiles {
  const { columns, rows, resized } = idefics3Grid(width, height, tile, longestEdge);
  const first = resizePillow(rgb, width, height, resized[0], resized[1], 'lanczos');
  const [rw, rh] = [columns * tile, rows * tile];
  const refined = resizePillow(first, resized[0], resized[1], rw, rh, 'lanczos');
  const tiles: Uint8Array[] = [];
  for (let ty = 0; ty < rows; ty++) {
    for (let tx = 0; tx < columns; tx++) {
      const out = new Uint8Array(tile * tile * 3);
      for (let y = 0; y < tile; y++) {
        const from = ((ty * tile + y) * rw + tx * tile) * 3;
        out.set(refined.subarray(from, from + tile * 3), y * tile * 3);
      }
      tiles.push(out);
    }
  }
  return { columns, rows, tiles, overview: resizePillow(refined, rw, rh, tile, tile, 'lanczos') };
}
