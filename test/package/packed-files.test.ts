/**
 * The scripts package.json's `files` packs (the install hook and what it runs) require only
 * node built-ins, dependencies, and files that are packed too: a relative require of an unpacked
 * file breaks every install from the registry (the tarball test catches it only where a tarball
 * is packed; this reads the manifest alone). The files lib reads beside its code at run time
 * (the pipeline's proto, the chat page) are in what `npm pack` would pack.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { CHAT_PAGE_DIR, CHAT_PAGE_FILES } from '../../lib/server/chat-page';
import { PROTO_PATH } from '../../lib/pipeline/schema';

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

test('the files lib reads at run time from the package root are packed', () => {
  // --ignore-scripts: list the files without prepack's prebuilds.
  const listed = spawnSync('npm', ['pack', '--dry-run', '--json', '--ignore-scripts'], { cwd: ROOT, encoding: 'utf8', timeout: 60_000 });
  expect(listed.status).toBe(0);
  const packed = new Set((JSON.parse(listed.stdout) as { files: { path: string }[] }[])[0].files.map((f) => f.path));
  const needed = [PROTO_PATH, ...Object.values(CHAT_PAGE_FILES).map(({ file }) => path.join(CHAT_PAGE_DIR, file))];
  for (const file of needed) {
    const relative = path.relative(ROOT, file).split(path.sep).join('/');
    expect({ relative, exists: fs.existsSync(file), packed: packed.has(relative) }).toEqual({ relative, exists: true, packed: true });
  }
});
