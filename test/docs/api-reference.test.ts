/**
 * The API reference (`npm run docs:api`, typedoc over scripts/api-reference.ts) documents exactly
 * what lib/index.ts exports, and builds without a warning: typedoc's validation (typedoc.json) warns
 * for every exported function, class, interface, type or variable without a doc comment, every
 * type the public API refers to that is not exported, and every broken link; warnings are errors.
 */
import { execFile } from 'node:child_process';
import * as path from 'node:path';
import { promisify } from 'node:util';

const root = path.join(__dirname, '..', '..');

describe('API reference', () => {
  test('its entry point exports the same objects as lib/index.ts (the lazy ones included)', () => {
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const index = require('../../lib/index') as Record<string, unknown>;
    // eslint-disable-next-line @typescript-eslint/no-require-imports
    const reference = require('../../scripts/api-reference') as Record<string, unknown>;
    const names = Object.keys(index).filter((n) => n !== '__esModule').sort();
    expect(Object.keys(reference).filter((n) => n !== '__esModule').sort()).toEqual(names);
    for (const name of names) expect({ name, same: reference[name] === index[name] }).toEqual({ name, same: true });
  });

  test('typedoc builds it with every public export documented and no warning', async () => {
    const typedoc = path.join(root, 'node_modules', 'typedoc', 'bin', 'typedoc');
    const run = promisify(execFile)(process.execPath, [typedoc, '--treatWarningsAsErrors', '--emit', 'none'], { cwd: root, encoding: 'utf8', timeout: 240_000 });
    const { stdout, stderr } = await run.catch((error: { stdout: string; stderr: string }) => {
      throw new Error(`typedoc failed:\n${error.stdout}\n${error.stderr}`);
    });
    expect(`${stdout}${stderr}`).not.toMatch(/warning|error/i);
  }, 300_000);
});
