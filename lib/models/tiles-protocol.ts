/** The messages between tiles-client.ts and tiles-worker.ts. */
import type { ImageTiles } from './image-tiles';

export interface TilesRequest {
  id: number;
  rgb: Uint8Array;
  width: number;
  height: number;
  tile: number;
  longestEdge: number;
}

export type TilesReply = { id: number; split: ImageTiles } | { id: number; error: string };
