/**
 * The scripts package.json's `files` packs (the install hook and what it runs) require only
 * node built-ins, dependencies, and files that are packed too: a relative require of an unpacked
 * file breaks every install from the registry (the tarball test catches it only where a tarball
 * is packed; this reads the manifest alone).
 */
import * as fs from 'node:fs';
import * as path from 'node:path';

const ROOT = path.resolve(__dirname, '..', '..');
const manifest = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')) as { files: string[] };
const packedScripts = manifest.files.filter((f) => /^scripts\/[^*]+\.js$/.test(f));

test('the install hook and the scripts it runs are packed', () => {
  expect(packedScripts).toEqual(expect.arrayContaining(['scripts/install.js', 'scripts/build-native.js']));
});

test.each(packedScripts)('%s requires only packed files', (script) => {
  const source = fs.readFileSync(path.join(ROOT, script), 'utf8');
  const relative = [...source.matchAll(/require(?:\.resolve)?\(\s*['"](\.{1,2}\/[^'"]+)['"]\s*\)/g)].map((m) => m[1]);
  for (const spec of relative) {
    const target = path.posix.normalize(path.posix.join(path.posix.dirname(script), spec.endsWith('.js') ? spec : `${spec}.js`));
    expect({ script, requires: target, packed: manifest.files.includes(target) }).toEqual({ script, requires: target, packed: true });
  }
});
