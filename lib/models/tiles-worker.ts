/**
 * The image-split worker thread: SmolVLM's tiles and overview (image-tiles.ts) resampled off the
 * JS thread, one request at a time; tiles-client.ts starts and ends it.
 */
import { parentPort } from 'node:worker_threads';
import { idefics3Tiles } from './image-tiles';
import type { TilesReply, TilesRequest } from './tiles-protocol';

parentPort!.on('message', (r: TilesRequest) => {
  let reply: TilesReply;
  try {
    const split = idefics3Tiles(r.rgb, r.width, r.height, r.tile, r.longestEdge);
    reply = { id: r.id, split };
    parentPort!.postMessage(reply, [...split.tiles, split.overview].map((t) => t.buffer as ArrayBuffer));
  } catch (error) {
    reply = { id: r.id, error: (error as Error)?.message ?? String(error) };
    parentPort!.postMessage(reply);
  }
});
