/**
 * The BPE merge loop over one word: repeatedly merge the adjacent pair of lowest rank, leftmost
 * first on ties (the order of HF's priority queue of (rank, position)). Short words use a plain
 * scan with cached pair ranks; long ones a linked list with a binary heap, so a pathological
 * 100k-byte word stays O(n log n).
 */
import type { MergeTable } from './merge-table';

const SCAN_LIMIT = 64;
/** Heap keys pack rank * 2^31 + position into one double (exact below 2^53). */
const POS_SPAN = 2 ** 31;

let rankBuf = new Int32Array(SCAN_LIMIT);

/** Merges `ids[0..n)` in place; returns the new length. */
export function mergeWord(ids: Int32Array, n: number, table: MergeTable): number {
  if (n < 2) return n;
  return n <= SCAN_LIMIT ? mergeByScan(ids, n, table) : mergeByHeap(ids, n, table);
}

function mergeByScan(ids: Int32Array, n: number, table: MergeTable): number {
  const ranks = rankBuf.length >= n ? rankBuf : (rankBuf = new Int32Array(n));
  // ranks[i]: rank of pair (i, i+1), -1 when it is no merge
  for (let i = 0; i + 1 < n; i++) ranks[i] = table.rank(ids[i], ids[i + 1]);
  for (;;) {
    let best = -1;
    let at = -1;
    for (let i = 0; i + 1 < n; i++) {
      const r = ranks[i];
      if (r >= 0 && (best < 0 || r < best)) {
        best = r;
        at = i;
      }
    }
    if (at < 0) return n;
    ids[at] = table.mergedId(ids[at], ids[at + 1]);
    for (let i = at + 1; i + 1 < n; i++) {
      ids[i] = ids[i + 1];
      ranks[i] = ranks[i + 1];
    }
    n--;
    if (at > 0) ranks[at - 1] = table.rank(ids[at - 1], ids[at]);
    if (at + 1 < n) ranks[at] = table.rank(ids[at], ids[at + 1]);
  }
}

function mergeByHeap(ids: Int32Array, n: number, table: MergeTable): number {
  const next = new Int32Array(n);
  const prev = new Int32Array(n);
  for (let i = 0; i < n; i++) {
    next[i] = i + 1 < n ? i + 1 : -1;
    prev[i] = i - 1;
  }
  let heap = new Float64Array(n);
  let size = 0;
  const push = (key: number) => {
    if (size === heap.length) {
      const bigger = new Float64Array(heap.length * 2);
      bigger.set(heap);
      heap = bigger;
    }
    let i = size++;
    while (i > 0) {
      const parent = (i - 1) >> 1;
      if (heap[parent] <= key) break;
      heap[i] = heap[parent];
      i = parent;
    }
    heap[i] = key;
  };
  const pop = (): number => {
    const top = heap[0];
    const last = heap[--size];
    let i = 0;
    for (;;) {
      let child = 2 * i + 1;
      if (child >= size) break;
      if (child + 1 < size && heap[child + 1] < heap[child]) child++;
      if (heap[child] >= last) break;
      heap[i] = heap[child];
      i = child;
    }
    heap[i] = last;
    return top;
  };
  for (let i = 0; i + 1 < n; i++) {
    const r = table.rank(ids[i], ids[i + 1]);
    if (r >= 0) push(r * POS_SPAN + i);
  }
  while (size > 0) {
    const key = pop();
    const rank = Math.floor(key / POS_SPAN);
    const pos = key - rank * POS_SPAN;
    if (ids[pos] < 0) continue;
    const right = next[pos];
    if (right < 0 || table.rank(ids[pos], ids[right]) !== rank) continue; // stale entry
    ids[pos] = table.mergedId(ids[pos], ids[right]);
    ids[right] = -1;
    const after = next[right];
    next[pos] = after;
    if (after >= 0) prev[after] = pos;
    const before = prev[pos];
    if (before >= 0) {
      const r = table.rank(ids[before], ids[pos]);
      if (r >= 0) push(r * POS_SPAN + before);
    }
    if (after >= 0) {
      const r = table.rank(ids[pos], ids[after]);
      if (r >= 0) push(r * POS_SPAN + pos);
    }
  }
  let m = 0;
  for (let i = 0; i < n; i++) if (ids[i] >= 0) ids[m++] = ids[i];
  return m;
}
