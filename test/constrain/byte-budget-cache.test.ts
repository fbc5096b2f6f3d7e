/** The grammar caches' LRU by bytes (lib/constrain/byte-budget-cache.ts) against a list kept by hand. */
import { ByteBudgetCache } from '../../lib/constrain/byte-budget-cache';
import { mulberry32 } from '../helpers/rng';

describe('ByteBudgetCache', () => {
  it('keeps the most recently used entries that fit the budget, drops one alone past it', () => {
    const cache = new ByteBudgetCache<string, number>(100, (v) => v);
    cache.set('a', 40);
    cache.set('b', 40);
    expect(cache.get('a')).toBe(40); // a is now the most recent
    cache.set('c', 30); // 110 > 100: b, the least recently used, goes
    expect([cache.get('a'), cache.get('b'), cache.get('c'), cache.bytes]).toEqual([40, undefined, 30, 70]);
    cache.set('huge', 101);
    expect([cache.get('huge'), cache.bytes]).toEqual([undefined, 70]);
    cache.set('a', 10); // replacing counts the new size only
    expect(cache.bytes).toBe(40);
  });

  it('matches a reference LRU over random operations', () => {
    const rand = mulberry32(11);
    const budget = 1000;
    const cache = new ByteBudgetCache<number, number>(budget, (v) => v);
    let reference: [number, number][] = []; // least recently used first
    for (let i = 0; i < 5000; i++) {
      const key = Math.floor(rand() * 40);
      if (rand() < 0.5) {
        const found = reference.find(([k]) => k === key);
        if (found) reference = [...reference.filter(([k]) => k !== key), found];
        expect(cache.get(key)).toBe(found?.[1]);
      } else {
        const size = Math.floor(rand() * 300);
        cache.set(key, size);
        reference = reference.filter(([k]) => k !== key);
        if (size <= budget) {
          while (reference.reduce((n, [, v]) => n + v, 0) + size > budget) reference.shift();
          reference.push([key, size]);
        }
      }
      expect(cache.bytes).toBe(reference.reduce((n, [, v]) => n + v, 0));
    }
  });
});
