/**
 * Every script under scripts/ and scripts/bench/ answers --help with its usage on stdout and exit
 * code 0, doing no work (it writes nothing); an unknown flag or a flag-looking argument is refused
 * with exit code 2, before any work. (The modules there that scripts require are not scripts.)
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { tempDir } from '../helpers/fixtures';

const ROOT = path.resolve(__dirname, '..', '..');
/** Required by scripts, never run: they parse no command line. */
const MODULES = new Set(['args.js', 'on-path.js', 'bench/addon.js', 'bench/checkout.js', 'bench/decoder-work.js', 'bench/machine.js', 'bench/read-bandwidth.js']);

const scripts = ['scripts', path.join('scripts', 'bench')]
  .flatMap((dir) => fs.readdirSync(path.join(ROOT, dir)).filter((n) => /\.(js|sh)$/.test(n)).map((n) => path.join(dir, n)))
  .filter((p) => !MODULES.has(path.relative('scripts', p)));

const tmp = tempDir('weightmap-scripts-help-');
afterAll(() => tmp.cleanup());

function run(script: string, args: string[]): { status: number | null; stdout: string; stderr: string; wrote: string[] } {
  const cwd = fs.mkdtempSync(path.join(tmp.dir, 'cwd-'));
  const command = script.endsWith('.sh') ? 'bash' : process.execPath;
  const r = spawnSync(command, [path.join(ROOT, script), ...args], { cwd, encoding: 'utf8', timeout: 30_000 });
  return { status: r.status, stdout: r.stdout, stderr: r.stderr, wrote: fs.readdirSync(cwd) };
}

test('the scripts are found', () => {
  expect(scripts.length).toBeGreaterThan(30);
  expect(scripts).toContain(path.join('scripts', 'bench', 'make-gguf.js'));
});

describe.each(scripts)('%s', (script) => {
  test('--help: usage, exit 0, nothing written', () => {
    const r = run(script, ['--help']);
    expect({ status: r.status, wrote: r.wrote, stderr: r.stderr }).toEqual({ status: 0, wrote: [], stderr: '' });
    expect(r.stdout.trim().length).toBeGreaterThan(0);
    if (script.endsWith('.js')) expect(r.stdout).toMatch(new RegExp(`^usage: ${path.basename(script).replace('.', '\\.')}`));
  });

  if (script.endsWith('.js')) {
    test('an unknown flag and a flag-looking argument: exit 2, nothing written', () => {
      const unknown = run(script, ['--no-such-flag']);
      expect({ status: unknown.status, wrote: unknown.wrote }).toEqual({ status: 2, wrote: [] });
      expect(unknown.stderr).toMatch(/^unknown option '--no-such-flag'\nusage: /);
      const dashed = run(script, ['-q']);
      expect({ status: dashed.status, wrote: dashed.wrote }).toEqual({ status: 2, wrote: [] });
    });
  }
});

test('make-gguf.js --help writes no model named --help (the reproduction)', () => {
  const r = run(path.join('scripts', 'bench', 'make-gguf.js'), ['--help', '--type', 'q8_0']);
  expect({ status: r.status, wrote: r.wrote }).toEqual({ status: 0, wrote: [] });
  const positional = run(path.join('scripts', 'bench', 'make-gguf.js'), ['--type', 'q8_0', '--', '--help']);
  expect({ status: positional.status, wrote: positional.wrote }).toEqual({ status: 2, wrote: [] });
});
