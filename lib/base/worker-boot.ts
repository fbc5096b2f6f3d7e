/**
 * Starts one of weightmap's worker threads from its entry module beside the caller (`name` +
 * the caller's extension). Run from the TypeScript sources (the test suite), the worker's modules
 * are transpiled as they load, with the typescript package; the built package runs the .js as it is.
 */
import * as nodePath from 'node:path';
import type { Worker, WorkerOptions } from 'node:worker_threads';

const TS_BOOT = `
const { workerData } = require('node:worker_threads');
const fs = require('node:fs');
const ts = require(workerData.typescript);
require.extensions['.ts'] = (module, file) => {
  const out = ts.transpileModule(fs.readFileSync(file, 'utf8'), {
    fileName: file,
    compilerOptions: { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true },
  });
  module._compile(out.outputText, file);
};
require(workerData.entry);
`;

/** A worker running `${dir}/${name}${ext}` (ext: the caller's own, .ts or .js). */
export function startModuleWorker(dir: string, name: string, ext: string, options: Omit<WorkerOptions, 'eval' | 'workerData'> = {}): Worker {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { Worker } = require('node:worker_threads') as typeof import('node:worker_threads');
  const entry = nodePath.join(dir, `${name}${ext}`);
  if (ext !== '.ts') return new Worker(entry, options);
  return new Worker(TS_BOOT, { ...options, eval: true, workerData: { entry, typescript: require.resolve('typescript') } });
}
