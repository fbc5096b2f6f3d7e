/**
 * matvec_q8_rows of every table against the same table's matvec_q8, one activation row at a time:
 * the contract is BITWISE equality per row (batched decode must give the tokens of single steps),
 * so the results are compared as bit patterns. Odd shapes: 1, 3 and 17 weight rows (17 crosses a
 * 16-row block), 1 to 5 groups (odd and even counts of units against the two accumulator chains),
 * groups of 32 (AVX-512: two groups per zmm, an odd count's last group in a half-zero zmm), 64 (zmm), 96
 * (an odd multiple of 32), 16 and 8 (the fallbacks), m = 1..9 (9 splits into tiles of 8 and 1),
 * full and partial row ranges; rows 288 and 800 wide (9 and 25 groups of 32: pairs of zmm units, then
 * one lone group); and the split form (q8_rows_prepare once, matvec_q8_prepared over two
 * blocks of the range), which a batched step runs, against the same.
 */
import { ISAS, kernels, rng, uniform } from './reference';

function randomInts(n: number, rand: () => number, lo: number, hi: number): Int8Array {
  const a = new Int8Array(n);
  for (let i = 0; i < n; i++) a[i] = lo + Math.floor(rand() * (hi - lo + 1));
  return a;
}

const bits = (y: Float32Array) => Array.from(new Uint32Array(y.buffer, y.byteOffset, y.length));
const SENTINEL = 12345.5;

describe.each(ISAS)('matvec_q8_rows (%s)', (isa) => {
  test.each([32, 64, 96, 16, 8])('group %d: every row bitwise equals matvec_q8 of that row', (group) => {
    const rand = rng(group);
    for (const rows of [1, 3, 17]) {
      for (let groups = 1; groups <= 5; groups++) {
        const cols = groups * group;
        const wq = randomInts(rows * cols, rand, -128, 127);
        const ws = uniform(rows * groups, rand, 0.001, 0.05);
        const ranges: Array<[number, number]> = rows > 2 ? [[0, rows], [1, rows - 1]] : [[0, rows]];
        for (let m = 1; m <= 9; m++) {
          const xq = randomInts(m * cols, rand, -127, 127);
          const xs = uniform(m * groups, rand, 0.001, 0.05);
          const expected = new Float32Array(m * rows);
          for (let i = 0; i < m; i++) {
            const yi = expected.subarray(i * rows, (i + 1) * rows);
            kernels.matvecQ8(isa, wq, ws, xq.subarray(i * cols, (i + 1) * cols), xs.subarray(i * groups, (i + 1) * groups), yi, rows, cols, group, 1);
          }
          for (const [r0, r1] of ranges) {
            const y = new Float32Array(m * rows).fill(SENTINEL);
            kernels.matvecQ8Rows(isa, wq, ws, xq, xs, y, m, rows, cols, group, r0, r1);
            const want = new Float32Array(m * rows).fill(SENTINEL);
            for (let i = 0; i < m; i++)
              for (let r = r0; r < r1; r++) want[i * rows + r] = expected[i * rows + r];
            expect({ rows, groups, m, r0, r1, y: bits(y) }).toEqual({ rows, groups, m, r0, r1, y: bits(want) });
            // the split form (prepared once, the range in two blocks) as a batched step runs it
            const split = new Float32Array(m * rows).fill(SENTINEL);
            kernels.matvecQ8Prepared(isa, wq, ws, xq, xs, split, m, rows, cols, group, r0, r1);
            expect({ rows, groups, m, r0, r1, split: bits(split) }).toEqual({ rows, groups, m, r0, r1, split: bits(want) });
          }
        }
      }
    }
  });

  test.each([32, 96, 288, 800])(
    'group 32, rows %d wide (an odd multiple of 32: AVX-512 pairs and a last lone group): bitwise matvec_q8',
    (cols) => {
      const rand = rng(cols);
      const group = 32;
      const groups = cols / group;
      for (const rows of [1, 17]) {
        const wq = randomInts(rows * cols, rand, -128, 127);
        const ws = uniform(rows * groups, rand, 0.001, 0.05);
        const ranges: Array<[number, number]> = rows > 2 ? [[0, rows], [1, rows - 1]] : [[0, rows]];
        for (const m of [1, 2, 7, 8, 9]) {
          const xq = randomInts(m * cols, rand, -127, 127);
          const xs = uniform(m * groups, rand, 0.001, 0.05);
          const expected = new Float32Array(m * rows);
          for (let i = 0; i < m; i++)
            kernels.matvecQ8(isa, wq, ws, xq.subarray(i * cols, (i + 1) * cols), xs.subarray(i * groups, (i + 1) * groups), expected.subarray(i * rows, (i + 1) * rows), rows, cols, group, 1);
          for (const [r0, r1] of ranges) {
            const want = new Float32Array(m * rows).fill(SENTINEL);
            for (let i = 0; i < m; i++)
              for (let r = r0; r < r1; r++) want[i * rows + r] = expected[i * rows + r];
            const y = new Float32Array(m * rows).fill(SENTINEL);
            kernels.matvecQ8Rows(isa, wq, ws, xq, xs, y, m, rows, cols, group, r0, r1);
            expect({ rows, m, r0, r1, y: bits(y) }).toEqual({ rows, m, r0, r1, y: bits(want) });
            const split = new Float32Array(m * rows).fill(SENTINEL);
            kernels.matvecQ8Prepared(isa, wq, ws, xq, xs, split, m, rows, cols, group, r0, r1);
            expect({ rows, m, r0, r1, split: bits(split) }).toEqual({ rows, m, r0, r1, split: bits(want) });
          }
        }
      }
    },
  );

  test.each([32, 64])('group %d, rows of 4096: tiles of fewer activation rows, still bitwise matvec_q8', (group) => {
    // 4096 columns make a prepared tile of 8 rows larger than the kernels keep in L1 (AVX-512, NEON),
    // so they split it.
    const rand = rng(group + 1);
    const rows = 3;
    const cols = 4096;
    const groups = cols / group;
    const wq = randomInts(rows * cols, rand, -128, 127);
    const ws = uniform(rows * groups, rand, 0.001, 0.05);
    for (const m of [1, 4, 5, 8, 9]) {
      const xq = randomInts(m * cols, rand, -127, 127);
      const xs = uniform(m * groups, rand, 0.001, 0.05);
      const want = new Float32Array(m * rows);
      for (let i = 0; i < m; i++)
        kernels.matvecQ8(isa, wq, ws, xq.subarray(i * cols, (i + 1) * cols), xs.subarray(i * groups, (i + 1) * groups), want.subarray(i * rows, (i + 1) * rows), rows, cols, group, 1);
      const y = new Float32Array(m * rows);
      kernels.matvecQ8Rows(isa, wq, ws, xq, xs, y, m, rows, cols, group, 0, rows);
      expect({ m, y: bits(y) }).toEqual({ m, y: bits(want) });
      const split = new Float32Array(m * rows);
      kernels.matvecQ8Prepared(isa, wq, ws, xq, xs, split, m, rows, cols, group, 0, rows);
      expect({ m, split: bits(split) }).toEqual({ m, split: bits(want) });
    }
  });

  test.each([
    [64, 3],
    [32, 4],
    [32, 9],
    [32, 25],
  ])('extreme values: int32 group sums exact (all scales 1; group %d, %d groups)', (group, groups) => {
    // `group` products of -128 · -127 per group: y = groups · group · 16256 exactly, for every m
    const cols = group * groups;
    const m = 5;
    const wq = new Int8Array(2 * cols).fill(-128);
    const ws = new Float32Array(2 * groups).fill(1);
    const xq = new Int8Array(m * cols).fill(-127);
    const xs = new Float32Array(m * groups).fill(1);
    const y = new Float32Array(m * 2);
    kernels.matvecQ8Rows(isa, wq, ws, xq, xs, y, m, 2, cols, group, 0, 2);
    expect(Array.from(y)).toEqual(new Array(m * 2).fill(groups * group * 16256));
  });
});
