/**
 * The pieces of SmolVLM's image split on their own, against closed forms: Pillow's bilinear
 * upscale of two pixels (its pixel-centre convention: [a, ¾a+¼b, ¼a+¾b, b]); a constant image stays
 * constant through Lanczos down- and upscaling (normalized fixed-point weights); the tile grid of
 * HF's Idefics3ImageProcessor formula (longer side to the longest edge, the shorter truncated and
 * made even, both rounded up to whole tiles); the tiles are the refined image's crops row by row;
 * bad sizes are RangeErrors; the worker thread's split is the same as this thread's.
 */
import { resizePillow } from '../../lib/models/pillow-resize';
import { idefics3Grid, idefics3Tiles } from '../../lib/models/image-tiles';
import { idefics3TilesInWorker } from '../../lib/models/tiles-client';

describe('Pillow resampling and the Idefics3 split', () => {
  test('bilinear 2 → 4 px: Pillow’s weights', () => {
    const [a, b] = [40, 200];
    const src = new Uint8Array([a, a, a, b, b, b]);
    const out = resizePillow(src, 2, 1, 4, 1, 'bilinear');
    const want = [a, 0.75 * a + 0.25 * b, 0.25 * a + 0.75 * b, b];
    expect(Array.from(out.filter((_, i) => i % 3 === 0))).toEqual(want.map(Math.round));
  });

  test('a constant image stays constant (Lanczos, down and up, both axes)', () => {
    const src = new Uint8Array(37 * 23 * 3).fill(173);
    for (const [w, h] of [
      [16, 9],
      [80, 51],
      [37, 5],
    ]) {
      const out = resizePillow(src, 37, 23, w, h, 'lanczos');
      expect(out.length).toBe(w * h * 3);
      expect(out.every((v) => v === 173)).toBe(true);
    }
    // The same size: a copy.
    const copy = resizePillow(src, 37, 23, 37, 23, 'lanczos');
    expect(copy).toEqual(src);
    expect(copy).not.toBe(src);
  });

  test('the tile grid', () => {
    expect(idefics3Grid(128, 128, 64, 128)).toEqual({ columns: 2, rows: 2, resized: [128, 128] });
    // 128 / (100/60) = 76.8 → 76
    expect(idefics3Grid(100, 60, 64, 128)).toEqual({ columns: 2, rows: 2, resized: [128, 76] });
    // 128 · 50/90 = 71.1 → 71 → 72 (even)
    expect(idefics3Grid(50, 90, 64, 128)).toEqual({ columns: 2, rows: 2, resized: [72, 128] });
    expect(idefics3Grid(200, 64, 64, 128)).toEqual({ columns: 2, rows: 1, resized: [128, 40] });
    // SmolVLM's 512 px tiles at a 2048 longest edge: 1920×1080 → 2048×1152, 4×3 tiles.
    expect(idefics3Grid(1920, 1080, 512, 2048)).toEqual({ columns: 4, rows: 3, resized: [2048, 1152] });
    expect(() => idefics3Grid(1000, 1, 64, 128)).toThrow(RangeError);
    expect(() => idefics3Grid(1, 1, 1, 8192)).toThrow(/tiles, more than/);
  });

  test('tiles are the refined image cut row by row; the overview a resize of it', () => {
    // Two tiles' worth (no resampling at 128×64): each pixel names its column, row and tile.
    const [w, h, tile] = [128, 64, 64];
    const rgb = new Uint8Array(w * h * 3);
    for (let y = 0; y < h; y++) for (let x = 0; x < w; x++) rgb.set([x, y, (x >> 6) + 2 * (y >> 6)], (y * w + x) * 3);
    const split = idefics3Tiles(rgb, w, h, tile, 128);
    expect([split.columns, split.rows, split.tiles.length]).toEqual([2, 1, 2]);
    for (let t = 0; t < 2; t++) {
      const px = (x: number, y: number) => Array.from(split.tiles[t].subarray((y * tile + x) * 3, (y * tile + x) * 3 + 3));
      expect(px(0, 0)).toEqual([t * 64, 0, t]);
      expect(px(63, 63)).toEqual([t * 64 + 63, 63, t]);
    }
    expect(split.overview).toEqual(resizePillow(rgb, w, h, tile, tile, 'lanczos'));
  });

  test('bad sizes', () => {
    expect(() => resizePillow(new Uint8Array(5), 2, 1, 4, 1, 'lanczos')).toThrow(/needs 6 bytes, got 5/);
    expect(() => resizePillow(new Uint8Array(6), 2, 1, 0, 1, 'lanczos')).toThrow(RangeError);
  });
});

describe('the split off the JS thread', () => {
  test('the worker gives the same tiles; bad sizes are RangeErrors here', async () => {
    const [w, h] = [150, 90];
    const rgb = new Uint8Array(w * h * 3).map((_, i) => (i * 2654435761) >>> 24);
    const here = idefics3Tiles(rgb, w, h, 64, 128);
    const there = await idefics3TilesInWorker(rgb, w, h, 64, 128);
    expect([there.columns, there.rows]).toEqual([here.columns, here.rows]);
    expect(there.tiles).toEqual(here.tiles);
    expect(there.overview).toEqual(here.overview);
    // The caller keeps its pixels.
    expect(rgb.length).toBe(w * h * 3);
    await expect(idefics3TilesInWorker(rgb, w + 1, h, 64, 128)).rejects.toThrow(RangeError);
    await expect(idefics3TilesInWorker(new Uint8Array(3000), 1000, 1, 64, 128)).rejects.toThrow(/no pixels on its short side/);
  });
});
