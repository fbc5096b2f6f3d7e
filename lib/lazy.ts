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
