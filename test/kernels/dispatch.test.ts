/**
 * Table choice (cpuid/xgetbv, WEIGHTMAP_ISA, setIsa) and the thread pool under concurrent callers.
 */
import { spawnSync } from 'node:child_process';
import * as os from 'node:os';
import { Worker } from 'node:worker_threads';
import { ISAS, addonPath, kernels, thrown } from './reference';

function isaInChild(env: Record<string, string>): { stdout: string; stderr: string } {
  const r = spawnSync(process.execPath, ['-e', `process.stdout.write(require(${JSON.stringify(addonPath())}).kernels.isa())`], {
    env: { ...process.env, ...env },
    encoding: 'utf8',
  });
  return { stdout: r.stdout, stderr: r.stderr };
}

describe('dispatch', () => {
  test('scalar is always available and listed first; the active table is one of the list', () => {
    expect(ISAS[0]).toBe('scalar');
    expect(ISAS).toContain(kernels.isa());
    if (process.arch === 'x64') expect(ISAS.every((i) => ['scalar', 'avx2', 'avx512', 'avx512vnni'].includes(i))).toBe(true);
    if (process.arch === 'arm64') expect(ISAS.every((i) => ['scalar', 'neon'].includes(i))).toBe(true);
  });

  test('WEIGHTMAP_ISA forces an available table; an unknown one warns and keeps the best', () => {
    for (const isa of ISAS) expect(isaInChild({ WEIGHTMAP_ISA: isa }).stdout).toBe(isa);
    const bad = isaInChild({ WEIGHTMAP_ISA: 'no-such-isa' });
    expect(bad.stdout).toBe(ISAS[ISAS.length - 1]);
    expect(bad.stderr).toMatch(/WEIGHTMAP_ISA=no-such-isa is not available/);
  });

  test('every table fills every slot', () => {
    const empty = Object.fromEntries(ISAS.map((isa) => [isa, kernels.emptySlots(isa)]));
    expect(empty).toEqual(Object.fromEntries(ISAS.map((isa) => [isa, []])));
  });

  test('setIsa switches the active table and rejects unknown names', () => {
    const before = kernels.isa();
    try {
      for (const isa of ISAS) {
        kernels.setIsa(isa);
        expect(kernels.isa()).toBe(isa);
      }
      expect(thrown(() => kernels.setIsa('no-such-isa')).code).toBe('ERR_WEIGHTMAP_ISA');
    } finally {
      kernels.setIsa(before);
    }
  });

  test('physicalCores is between 1 and the logical CPU count', () => {
    const cores = kernels.physicalCores();
    expect(Number.isInteger(cores)).toBe(true);
    expect(cores).toBeGreaterThanOrEqual(1);
    expect(cores).toBeLessThanOrEqual(os.cpus().length);
  });
});

describe('thread pool', () => {
  test('ParallelFor hands out disjoint grain-aligned chunks covering [0, n), at most one per thread', () => {
    for (const [n, grain, threads] of [
      [1, 1, 2],
      [7, 1, 2],
      [100, 16, 2],
      [1000, 64, 3],
      [1023, 16, 4],
      [33, 32, 2],
      [5, 8, 2],
      [0, 4, 2],
    ]) {
      const flat = kernels.threadPoolChunks(n, grain, threads);
      const chunks: Array<[number, number]> = [];
      for (let i = 0; i < flat.length; i += 2) chunks.push([flat[i], flat[i + 1]]);
      chunks.sort((x, y) => x[0] - y[0]);
      expect(chunks.length).toBeLessThanOrEqual(threads);
      let next = 0;
      for (const [b, e] of chunks) {
        expect(b).toBe(next);
        expect(e).toBeGreaterThan(b);
        expect(b % grain).toBe(0);
        if (e !== n) expect((e - b) % grain).toBe(0);
        expect(e - b).toBeLessThanOrEqual(32 * grain);
        next = e;
      }
      expect(next).toBe(n);
    }
  });

  test('ParallelRowBlocks covers [0, n) once in grain-aligned blocks; a stalled thread leaves its range to the others', () => {
    for (const [n, grain, threads, delay] of [
      [1, 1, 2, 0],
      [7, 1, 2, 0],
      [100, 16, 2, 0],
      [3072, 16, 2, 0],
      [3072, 16, 2, 30_000_000],
      [1000, 64, 3, 30_000_000],
      [1023, 16, 4, 0],
      [33, 32, 2, 0],
      [5, 8, 2, 0],
      [0, 4, 2, 0],
      [500, 16, 1, 0],
      [151936, 16, 2, 0], // a tied classifier: blocks of at most 32 grains
    ]) {
      const flat = kernels.threadPoolRowBlocks(n, grain, threads, delay);
      const blocks: Array<[number, number, number]> = [];
      for (let i = 0; i < flat.length; i += 3) blocks.push([flat[i], flat[i + 1], flat[i + 2]]);
      blocks.sort((x, y) => x[0] - y[0]);
      let next = 0;
      for (const [b, e] of blocks) {
        expect(b).toBe(next);
        expect(e).toBeGreaterThan(b);
        expect(b % grain).toBe(0);
        if (e !== n) expect((e - b) % grain).toBe(0);
        expect(e - b).toBeLessThanOrEqual(32 * grain);
        next = e;
      }
      expect(next).toBe(n);
      if (delay > 0) {
        // Block 0 stalls its thread until another takes the rest of the first range (rows < n / threads),
        // or 30 s at most: without stealing, the rest of that range would wait for the stalled thread.
        const stalled = blocks[0][2];
        expect(blocks.some(([b, , t]) => b > 0 && b < n / threads && t !== stalled)).toBe(true);
      }
    }
  });
});

// Each worker builds the same deterministic problem, computes it on one thread, then runs it
// many times on the shared 2-thread pool while the other workers do the same: concurrent
// ParallelFor calls on one pool must queue, and every result must equal the one-thread one.
const WORKER_SOURCE = `
const { parentPort, workerData } = require('node:worker_threads');
const k = require(workerData.addon).kernels;
const isa = workerData.isa;
const m = 4, rows = 300, cols = 256, group = 32;
let s = workerData.seed;
const next = () => { s = (s * 1103515245 + 12345) >>> 0; return s >>> 24; };
const wq = Int8Array.from({ length: rows * cols }, () => (next() % 255) - 127);
const xq = Int8Array.from({ length: m * cols }, () => (next() % 255) - 127);
const ws = Float32Array.from({ length: rows * cols / group }, () => next() / 4096);
const xs = Float32Array.from({ length: m * cols / group }, () => next() / 4096);
const one = new Float32Array(m * rows);
k.matmulQ8(isa, wq, ws, xq, xs, one, m, rows, cols, group, 1);
let mismatches = 0;
for (let r = 0; r < workerData.reps; r++) {
  const y = new Float32Array(m * rows);
  k.matmulQ8(isa, wq, ws, xq, xs, y, m, rows, cols, group, 2);
  for (let i = 0; i < y.length; i++) if (y[i] !== one[i]) { mismatches++; break; }
}
parentPort.postMessage(mismatches);
`;

test('concurrent callers of one pool (worker threads) all get the one-thread results', async () => {
  const isa = ISAS[ISAS.length - 1];
  const runs = [1, 2, 3, 4].map(
    (seed) =>
      new Promise<number>((resolve, reject) => {
        const w = new Worker(WORKER_SOURCE, { eval: true, workerData: { addon: addonPath(), isa, seed, reps: 200 } });
        w.once('message', resolve);
        w.once('error', reject);
      }),
  );
  expect(await Promise.all(runs)).toEqual([0, 0, 0, 0]);
});
