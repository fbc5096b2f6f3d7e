/**
 * Row kernels (one implementation for every CPU) against closed forms. Budgets are stated per
 * test in units of the f32 roundoff U = 2^-24.
 */
import { U, kernels, rng, thrown, uniform } from './reference';

const f = Math.fround;

function norm(x: ArrayLike<number>): number {
  let s = 0;
  for (let i = 0; i < x.length; i++) s += x[i] * x[i];
  return Math.sqrt(s);
}

describe('rmsnorm', () => {
  test('a constant vector c gives w·c/√(c²+eps); eps = 0 gives w·sign(c)', () => {
    for (const n of [1, 3, 7, 31, 1023]) {
      const w = uniform(n, rng(n), 0.5, 2);
      for (const c of [3, -0.25, 1e-3]) {
        const x = new Float32Array(n).fill(c);
        const y = new Float32Array(n);
        kernels.rmsnorm(x, w, y, 1e-6);
        const k = c / Math.sqrt(c * c + f(1e-6));
        for (let i = 0; i < n; i++) expect(Math.abs(y[i] - w[i] * k)).toBeLessThanOrEqual(4 * U * Math.abs(w[i] * k));
        kernels.rmsnorm(x, w, y, 0);
        for (let i = 0; i < n; i++) expect(Math.abs(y[i] - w[i] * Math.sign(c))).toBeLessThanOrEqual(4 * U * w[i]);
      }
    }
  });

  test('unit weights give a vector of root-mean-square 1 (eps = 0)', () => {
    const x = uniform(1000, rng(5), -10, 10);
    const y = new Float32Array(1000);
    kernels.rmsnorm(x, new Float32Array(1000).fill(1), y, 0);
    expect(Math.abs(norm(y) / Math.sqrt(1000) - 1)).toBeLessThan(1e-6);
  });
});

describe('layernorm', () => {
  test('output has mean 0 and variance 1 (then g·+b); b may be null', () => {
    const n = 384;
    const x = uniform(n, rng(6), -3, 5);
    const g = new Float32Array(n).fill(1);
    const y = new Float32Array(n);
    kernels.layernorm(x, g, null, y, 0);
    const mean = y.reduce((a, v) => a + v, 0) / n;
    const variance = y.reduce((a, v) => a + (v - mean) ** 2, 0) / n;
    expect(Math.abs(mean)).toBeLessThan(1e-6);
    expect(Math.abs(variance - 1)).toBeLessThan(1e-5);
    const g2 = new Float32Array(n).fill(2);
    const b = new Float32Array(n).fill(0.5);
    const y2 = new Float32Array(n);
    kernels.layernorm(x, g2, b, y2, 0);
    for (let i = 0; i < n; i++) expect(Math.abs(y2[i] - (2 * y[i] + 0.5))).toBeLessThanOrEqual(8 * U * (2 * Math.abs(y[i]) + 0.5));
  });

  test('a constant vector maps to b', () => {
    const x = new Float32Array(10).fill(7);
    const y = new Float32Array(10);
    kernels.layernorm(x, new Float32Array(10).fill(3), new Float32Array(10).fill(-1), y, 1e-5);
    expect(Array.from(y)).toEqual(new Array(10).fill(-1));
  });
});

describe('softmax', () => {
  test('sums to 1 within n·U, ignores a shift, and does not overflow', () => {
    for (const n of [1, 3, 7, 31, 33, 127, 1023]) {
      const x = uniform(n, rng(n + 100), -20, 20);
      const shifted = Float32Array.from(x, (v) => v + 1000);
      kernels.softmax(x);
      kernels.softmax(shifted);
      const sum = x.reduce((a, v) => a + v, 0);
      expect(Math.abs(sum - 1)).toBeLessThanOrEqual((n + 4) * U);
      for (let i = 0; i < n; i++) {
        expect(x[i]).toBeGreaterThanOrEqual(0);
        expect(Math.abs(shifted[i] - x[i])).toBeLessThanOrEqual(2e-4 * x[i] + 1e-30); // the shift loses x's low bits
      }
    }
  });

  test('known values: [0, ln 2] -> [1/3, 2/3]; one element -> 1; equal entries -> 1/n', () => {
    const x = Float32Array.from([0, Math.LN2]);
    kernels.softmax(x);
    expect(Math.abs(x[0] - 1 / 3)).toBeLessThan(4 * U);
    expect(Math.abs(x[1] - 2 / 3)).toBeLessThan(4 * U);
    const one = Float32Array.from([-123]);
    kernels.softmax(one);
    expect(one[0]).toBe(1);
    const eq = new Float32Array(5).fill(4);
    kernels.softmax(eq);
    for (const v of eq) expect(v).toBe(f(1 / 5));
    kernels.softmax(new Float32Array(0)); // nothing to do, no crash
  });
});

describe('vectorized exp (softmax, silu_mul)', () => {
  // The kernels use a polynomial e^x with relative error <= 1.72·2^-24 (exhaustively checked in
  // f32); here through the two kernels, against Math.exp in double, on a dense grid.
  const grid = Float32Array.from({ length: 4001 }, (_, i) => -80 + i * 0.04);
  test('silu(g) = g / (1 + e^-g) within 6·2^-24 relative for g in [-80, 80]', () => {
    const y = new Float32Array(grid.length);
    kernels.siluMul(grid, new Float32Array(grid.length).fill(1), y);
    let worst = 0;
    grid.forEach((g, i) => {
      const want = g / (1 + Math.exp(-g));
      if (want !== 0) worst = Math.max(worst, Math.abs(y[i] - want) / Math.abs(want));
      else expect(y[i]).toBe(0);
    });
    expect(worst).toBeLessThanOrEqual(6 * U);
  });
  test('softmax([0, d]) = [1, e^d] / (1 + e^d) within 6·2^-24 relative for d in [-80, 80]', () => {
    let worst = 0;
    for (const d of grid) {
      const x = Float32Array.from([0, d]);
      kernels.softmax(x);
      const e = Math.exp(d);
      const want = [1 / (1 + e), e / (1 + e)];
      for (let j = 0; j < 2; j++) worst = Math.max(worst, Math.abs(x[j] - want[j]) / want[j]);
    }
    expect(worst).toBeLessThanOrEqual(6 * U);
  });
  test('extremes: e^x below 2.4e-38 is 0, NaN stays NaN', () => {
    const x = Float32Array.from([0, -100]);
    kernels.softmax(x);
    expect(Array.from(x)).toEqual([1, 0]);
    const y = new Float32Array(3);
    kernels.siluMul(Float32Array.from([NaN, 100, -100]), Float32Array.from([1, 1, 1]), y);
    expect(y[0]).toBeNaN();
    expect(y[1]).toBe(100);
    expect(Math.abs(y[2])).toBeLessThan(1e-30);
  });
});

describe('activations', () => {
  test('silu(g)·u, gelu (erf and tanh forms) at known points', () => {
    const g = Float32Array.from([0, 1, -1, 20, -20, 2]);
    const u = Float32Array.from([5, 1, 1, 1, 1, 0.5]);
    const y = new Float32Array(6);
    kernels.siluMul(g, u, y);
    const silu = (v: number) => v / (1 + Math.exp(-v));
    for (let i = 0; i < 6; i++) expect(Math.abs(y[i] - silu(g[i]) * u[i])).toBeLessThanOrEqual(8 * U * Math.abs(g[i] * u[i]) + 1e-30);
    expect(Math.abs(y[1] - 0.7310585786300049)).toBeLessThan(8 * U);

    // Φ(1) = 0.8413447460685429, so gelu_erf(1) = Φ(1) and gelu_erf(-1) = -(1 - Φ(1))
    const e = Float32Array.from([0, 1, -1, 3, -10]);
    kernels.geluErf(e);
    expect(e[0]).toBe(0);
    expect(Math.abs(e[1] - 0.8413447460685429)).toBeLessThan(8 * U);
    expect(Math.abs(e[2] + 0.15865525393145707)).toBeLessThan(8 * U);
    expect(Math.abs(e[3] - 3 * 0.9986501019683699)).toBeLessThan(3 * 8 * U);
    expect(Math.abs(e[4])).toBeLessThan(1e-20);

    // erf form against a float64 erf (Maclaurin series for |z| <= 3, erfc continued fraction
    // beyond) on a dense grid of [-8, 8]: the vectorized erf (A&S 7.1.26 on f32) is within 6.5e-7.
    const erf64 = (z: number): number => {
      const a = Math.abs(z);
      let r: number;
      if (a <= 3) {
        let term = a, sum = a;
        for (let n = 1; n < 200; n++) {
          term *= (-a * a) / n;
          sum += term / (2 * n + 1);
        }
        r = (2 / Math.sqrt(Math.PI)) * sum;
      } else {
        let cf = a;
        for (let n = 80; n >= 1; n--) cf = a + n / 2 / cf;
        r = 1 - Math.exp(-a * a) / Math.sqrt(Math.PI) / cf;
      }
      return z < 0 ? -r : r;
    };
    expect(Math.abs(erf64(1) - 0.8427007929497149)).toBeLessThan(1e-15);
    const grid = Float32Array.from({ length: 16001 }, (_, i) => f(-8 + i / 1000));
    const dense = Float32Array.from(grid);
    kernels.geluErf(dense);
    for (let i = 0; i < grid.length; i++) {
      const v = grid[i];
      expect(Math.abs(dense[i] - 0.5 * v * (1 + erf64(v / Math.SQRT2)))).toBeLessThanOrEqual(0.5 * Math.abs(v) * 6.5e-7);
    }

    // tanh form: 0.5·x·(1 + tanh(√(2/π)(x + 0.044715x³)))
    const t = Float32Array.from([0, 1, -1, 2]);
    kernels.geluTanh(t);
    const gt = (v: number) => 0.5 * v * (1 + Math.tanh(Math.sqrt(2 / Math.PI) * (v + 0.044715 * v ** 3)));
    expect(t[0]).toBe(0);
    for (let i = 1; i < 4; i++) expect(Math.abs(t[i] - gt([0, 1, -1, 2][i]))).toBeLessThan(16 * U * 2);
    expect(Math.abs(t[1] - 0.8411919906082768)).toBeLessThan(16 * U);
    // dense grid against the float64 formula (the kernel computes x / (1 + e^(-2z)) in f32):
    // measured worst 1.9·U·|x|
    const tgrid = Float32Array.from({ length: 24001 }, (_, i) => f(-12 + i / 1000));
    const tdense = Float32Array.from(tgrid);
    kernels.geluTanh(tdense);
    for (let i = 0; i < tgrid.length; i++) expect(Math.abs(tdense[i] - gt(tgrid[i]))).toBeLessThanOrEqual(4 * U * Math.abs(tgrid[i]));
    const ends = Float32Array.from([1e30, -1e30, Infinity, NaN]);
    kernels.geluTanh(ends);
    expect(Array.from(ends)).toEqual([1e30, -0, Infinity, NaN].map(f));
  });
});

describe('rope', () => {
  test('position 0 is the identity, both pairings', () => {
    for (const interleaved of [false, true]) {
      const x = uniform(64, rng(9));
      const y = Float32Array.from(x);
      kernels.rope(y, 64, 0, 10000, interleaved);
      expect(Array.from(y)).toEqual(Array.from(x));
    }
  });

  test('rotations preserve every pair norm and leave dims past rotDim alone', () => {
    for (const interleaved of [false, true]) {
      const x = uniform(80, rng(10));
      const y = Float32Array.from(x);
      kernels.rope(y, 64, 12345, 1e6, interleaved);
      for (let i = 0; i < 32; i++) {
        const [a, b] = interleaved ? [2 * i, 2 * i + 1] : [i, i + 32];
        expect(Math.abs(Math.hypot(y[a], y[b]) - Math.hypot(x[a], x[b]))).toBeLessThanOrEqual(8 * U * Math.hypot(x[a], x[b]));
      }
      expect(Array.from(y.subarray(64))).toEqual(Array.from(x.subarray(64)));
      expect(Math.abs(norm(y) - norm(x))).toBeLessThan(1e-5 * norm(x));
    }
  });

  test('the first pair turns by pos radians; pair i by pos·theta^(-2i/d)', () => {
    const d = 8;
    const pos = 3;
    const theta = 100;
    const half = Float32Array.from({ length: d }, (_, i) => (i < d / 2 ? 1 : 0)); // (1, 0) in every pair
    kernels.rope(half, d, pos, theta, false);
    const inter = Float32Array.from({ length: d }, (_, i) => (i % 2 === 0 ? 1 : 0));
    kernels.rope(inter, d, pos, theta, true);
    for (let i = 0; i < d / 2; i++) {
      const angle = f(pos * f(1 / f(Math.pow(theta, f((2 * i) / d)))));
      expect(Math.abs(half[i] - Math.cos(angle))).toBeLessThan(1e-6);
      expect(Math.abs(half[i + d / 2] - Math.sin(angle))).toBeLessThan(1e-6);
      expect(inter[2 * i]).toBe(half[i]); // the two pairings agree up to the permutation
      expect(inter[2 * i + 1]).toBe(half[i + d / 2]);
    }
    expect(Math.abs(half[0] - Math.cos(3))).toBeLessThan(1e-7);
  });

  test('every pair turns by the closed form pos·theta^(-2i/d)/factor_i at a long position, both pairings', () => {
    const d = 128;
    const pos = 100_000;
    const theta = 500000;
    const factors = Float32Array.from({ length: d / 2 }, (_, i) => 1 + (i % 7) / 2); // Llama 3 style
    const x = uniform(d, rng(11));
    for (const interleaved of [false, true]) {
      const y = Float32Array.from(x);
      kernels.rope(y, d, pos, theta, interleaved, factors);
      for (let i = 0; i < d / 2; i++) {
        const angle = (pos * Math.pow(theta, (-2 * i) / d)) / factors[i];
        const [a, b] = interleaved ? [2 * i, 2 * i + 1] : [i, i + d / 2];
        const ya = x[a] * Math.cos(angle) - x[b] * Math.sin(angle);
        const yb = x[a] * Math.sin(angle) + x[b] * Math.cos(angle);
        // cos and sin rounded to f32 once, then two f32 products and a sum: a few ulps of the pair norm.
        const bound = 6 * U * Math.hypot(x[a], x[b]);
        expect(Math.abs(y[a] - ya)).toBeLessThanOrEqual(bound);
        expect(Math.abs(y[b] - yb)).toBeLessThanOrEqual(bound);
      }
    }
  });

  test('rope validates its arguments', () => {
    const x = new Float32Array(8);
    expect(thrown(() => kernels.rope(x, 7, 0, 10000, false)).name).toBe('RangeError');
    expect(thrown(() => kernels.rope(x, 10, 0, 10000, false)).name).toBe('RangeError');
    expect(thrown(() => kernels.rope(x, 8, -1, 10000, false)).name).toBe('RangeError');
    expect(thrown(() => kernels.rope(x, 8, 0, 0, false)).name).toBe('RangeError');
  });
});
