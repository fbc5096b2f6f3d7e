/**
 * SmolVLM's image split (image-tiles.ts) off the JS thread: one worker per process
 * (tiles-worker.ts), started on the first image and ended after a few idle seconds, never keeping
 * the process alive. Sizes are checked here first, so a bad one is this thread's RangeError.
 */
import * as nodePath from 'node:path';
import type { Worker } from 'node:worker_threads';
import { rangeError } from '../base/errors';
import { startModuleWorker } from '../base/worker-boot';
import { idefics3Grid, type ImageTiles } from './image-tiles';
import type { TilesReply, TilesRequest } from './tiles-protocol';

const IDLE_MS = 5000;

let worker: Worker | undefined;
let idle: NodeJS.Timeout | undefined;
let nextId = 1;
const pending = new Map<number, { resolve: (t: ImageTiles) => void; reject: (e: Error) => void }>();

function failAll(error: Error): void {
  for (const job of pending.values()) job.reject(error);
  pending.clear();
}

function running(): Worker {
  if (worker) return worker;
  const started = startModuleWorker(__dirname, 'tiles-worker', nodePath.extname(__filename), { stdout: false, stderr: false });
  started.on('message', (reply: TilesReply) => {
    const job = pending.get(reply.id);
    if (!job) return;
    pending.delete(reply.id);
    if ('error' in reply) job.reject(new Error(`image split: ${reply.error}`));
    else job.resolve(reply.split);
    if (pending.size === 0) rest(started);
  });
  const end = (error: Error) => {
    if (worker !== started) return;
    worker = undefined;
    void started.terminate();
    failAll(error);
  };
  started.on('error', (error: Error) => end(new Error(`the image split worker failed: ${error.message}`)));
  started.on('exit', (code) => end(new Error(`the image split worker exited with code ${code}`)));
  worker = started;
  return started;
}

function rest(w: Worker): void {
  w.unref();
  clearTimeout(idle);
  idle = setTimeout(() => {
    if (worker !== w || pending.size > 0) return;
    worker = undefined;
    void w.terminate();
  }, IDLE_MS).unref();
}

/** idefics3Tiles(rgb, …) computed in the worker (`rgb` is copied: the caller keeps it). */
export function idefics3TilesInWorker(rgb: Uint8Array, width: number, height: number, tile: number, longestEdge: number): Promise<ImageTiles> {
  try {
    if (rgb.length !== width * height * 3) throw rangeError(`image split: ${width}x${height} RGB needs ${width * height * 3} bytes, got ${rgb.length}`);
    idefics3Grid(width, height, tile, longestEdge);
  } catch (error) {
    return Promise.reject(error);
  }
  const w = running();
  clearTimeout(idle);
  w.ref();
  const id = nextId++;
  return new Promise<ImageTiles>((resolve, reject) => {
    pending.set(id, { resolve, reject });
    // Exactly the image's bytes (a view's whole buffer would be cloned), moved to the worker.
    const copy = rgb.slice();
    const request: TilesRequest = { id, rgb: copy, width, height, tile, longestEdge };
    w.postMessage(request, [copy.buffer]);
  });
}
