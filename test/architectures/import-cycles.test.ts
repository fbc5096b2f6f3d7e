/**
 * The layering of ARCHITECTURE.md holds: no import cycle in lib/, between files or between folders
 * (scripts/import-cycles.js reads every import, type-only ones and require() included).
 */
import { spawnSync } from 'node:child_process';
import * as path from 'node:path';

test('lib/ has no import cycle between files or folders', () => {
  const script = path.join(__dirname, '..', '..', 'scripts', 'import-cycles.js');
  const run = spawnSync(process.execPath, [script], { encoding: 'utf8' });
  expect(run.stdout).toMatch(/file level: 0 cycle\(s\)/);
  expect(run.stdout).toMatch(/folder level: 0 cycle\(s\)/);
  expect(run.status).toBe(0);
});
