/**
 * The built package loads both ways: require('weightmap') and import { ... } from 'weightmap'
 * (resolved through package.json "exports" by self-reference), exposing the same objects.
 * Needs `npm run build:ts` (CI runs it before the tests).
 */
import { execFileSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

const root = path.join(__dirname, '..', '..');

describe('package entry points', () => {
  beforeAll(() => {
    if (!fs.existsSync(path.join(root, 'dist', 'cjs', 'index.js')) || !fs.existsSync(path.join(root, 'dist', 'esm', 'index.mjs'))) {
      throw new Error('dist/ is missing: run `npm run build:ts` first');
    }
  });

  const run = (args: string[]) => execFileSync(process.execPath, args, { cwd: root, encoding: 'utf8' }).trim();

  test('require() and import give the same API', () => {
    const cjs = run(['-e', "const w = require('weightmap'); console.log(typeof w.readWeights, typeof w.WeightFormatError, typeof w.convert)"]);
    expect(cjs).toBe('function function function');
    const esm = run([
      '--input-type=module',
      '-e',
      "import { readWeights, WeightFormatError } from 'weightmap'; import { createRequire } from 'node:module'; const r = createRequire(import.meta.url)('weightmap'); console.log(readWeights === r.readWeights, WeightFormatError === r.WeightFormatError)",
    ]);
    expect(esm).toBe('true true');
  });

  test('the bin runs', () => {
    expect(run([path.join(root, 'dist', 'cjs', 'cli', 'main.js'), '--version'])).toMatch(/^\d+\.\d+\.\d+$/);
  });
});
