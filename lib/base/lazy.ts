/**
 * A value made on its first use: a dependency required, a schema compiled. Used so that
 * require('weightmap') does not load gRPC, ajv and the like in a process that never uses them
 * (test/package/lazy-dependencies.test.ts; scripts/bench/ttft.js); a dependency's `make` holds
 * the literal require, typed with `typeof import(...)`.
 */
export function lazy<T>(make: () => T): () => T {
  let made: T | undefined;
  return () => (made ??= make());
}

/**
 * Defines each name of `modules` on `target` (a module's `exports`) as an enumerable getter that
 * requires the module `modules[name]` loads on first read and returns its export of that name:
 * an export whose module require('weightmap') does not load until it is used.
 */
export function defineLazyExports(target: object, modules: Record<string, () => object>): void {
  for (const [name, load] of Object.entries(modules)) {
    const value = lazy(() => (load() as Record<string, unknown>)[name]);
    Object.defineProperty(target, name, { enumerable: true, configurable: true, get: value });
  }
}
