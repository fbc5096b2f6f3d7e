/**
 * The packed tarball as a user gets it. Runs when WEIGHTMAP_PACKED_TARBALL names the file of
 * `npm pack` (.ci/run sets it) and is skipped otherwise. The tarball is installed into an empty
 * project with a PATH that holds node and sh only, so no cmake and no C++ compiler: it must
 * install from its prebuild without a word of its own, generate stories260K's golden greedy text
 * through `import` and through `require`, and its declarations must type-check as the README uses
 * them, strict and with skipLibCheck false, for module nodenext and commonjs.
 */
import { spawnSync, type SpawnSyncReturns } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { fixture, tempDir } from '../helpers/fixtures';

const tarball = process.env.WEIGHTMAP_PACKED_TARBALL;
const repo = path.join(__dirname, '..', '..');
const stories = fixture('llama-stories260k', 'stories260K.bin');
const golden = fs.readFileSync(fixture('llama-stories260k', 'expected_greedy_200steps.txt'), 'utf8');

/** npm's own CLI script, run by node, so that PATH needs no npm. */
function npmCli(): string {
  if (process.env.npm_execpath?.endsWith('.js')) return process.env.npm_execpath;
  const found = (process.env.PATH ?? '').split(path.delimiter).map((dir) => path.join(dir, 'npm')).find((p) => fs.existsSync(p));
  if (!found) throw new Error('npm is not on PATH');
  return path.join(path.dirname(fs.realpathSync(found)), 'npm-cli.js');
}

const README_USE = `import { loadModel, loadEmbedder, similarity, WeightFormatError, type GeneratedPiece } from 'weightmap';

export async function use(modelPath: string, embedderPath: string, signal: AbortSignal): Promise<number> {
  await using model = await loadModel(modelPath, { threads: 2, contextLength: 4096 });
  const pieces: GeneratedPiece[] = [];
  for await (const piece of model.generate('Once upon a time', { maxTokens: 64, temperature: 0.7, topP: 0.9, seed: 1, signal })) {
    process.stdout.write(piece.text);
    pieces.push(piece);
  }
  const logits: Float32Array = await model.logits(model.tokenizer.encode('Hello'));
  const embedder = await loadEmbedder(embedderPath, { quant: 'int8' });
  const [a, b] = await embedder.embed(['first sentence', 'second one']);
  embedder.dispose();
  return similarity(a, b) + logits[0] + pieces.length;
}

export function isFormatError(error: unknown): boolean {
  return error instanceof WeightFormatError && typeof error.code === 'string';
}
`;

const GENERATE = (load: string) => `${load}
const model = await loadModel(process.argv[2], { threads: 1 });
process.stdout.write(await model.generate('', { maxTokens: 48 }).text());
model.dispose();
`;

(tarball ? describe : describe.skip)('the packed tarball, installed without cmake or a C++ compiler', () => {
  let project: { dir: string; cleanup: () => void };
  let env: NodeJS.ProcessEnv;
  let install: SpawnSyncReturns<string>;

  const run = (args: string[], timeout = 120_000) =>
    spawnSync(process.execPath, args, { cwd: project.dir, env, encoding: 'utf8', timeout });
  const output = (r: SpawnSyncReturns<string>) => `exit ${r.status}${r.error ? ` (${r.error.message})` : ''}\n${r.stdout}${r.stderr}`;

  beforeAll(() => {
    project = tempDir('weightmap-package-');
    const bin = path.join(project.dir, '.bin');
    fs.mkdirSync(bin);
    fs.symlinkSync(process.execPath, path.join(bin, 'node'));
    fs.symlinkSync('/bin/sh', path.join(bin, 'sh'));
    // The outer npm's settings (npm_config_*) stay out: the project installs as a user's would.
    env = Object.fromEntries(Object.entries(process.env).filter(([k]) => !/^npm_/i.test(k)));
    env.PATH = bin;
    // allowScripts: npm 11.19+ asks for it before running a dependency's install script (keyed,
    // for a tarball, by its file: spec, as `npm install-scripts approve` writes it).
    const manifest = { name: 'consumer', private: true, allowScripts: { [`file:${path.resolve(tarball!)}`]: true } };
    fs.writeFileSync(path.join(project.dir, 'package.json'), JSON.stringify(manifest));
    // --foreground-scripts: whatever the install script prints reaches the output checked below.
    install = run([npmCli(), 'install', path.resolve(tarball!), '--omit=optional', '--foreground-scripts',
      '--prefer-offline', '--no-audit', '--no-fund'], 300_000);
  }, 320_000);

  afterAll(() => project?.cleanup());

  test('installs from its prebuild, printing nothing of its own', () => {
    const tools = spawnSync('/bin/sh', ['-c', 'command -v cmake c++ g++ gcc cc clang clang++'], { env, encoding: 'utf8' });
    expect(tools.stdout).toBe('');
    expect(install.status).toBe(0);
    // npm's own lines: the script's header ("> weightmap@0.1.0 install"), its summary and warnings.
    const own = output(install).split('\n').slice(1)
      .filter((line) => line.trim() !== '' && !/^> |^added \d+ packages? in |^npm (warn|notice) /.test(line));
    expect(own).toEqual([]);
    expect(install.stdout).toMatch(/^> weightmap@[^ ]+ install$/m); // the install script did run
    const installed = path.join(project.dir, 'node_modules', 'weightmap');
    expect(fs.existsSync(path.join(installed, 'prebuilds', `${process.platform}-${process.arch}`))).toBe(true);
    expect(fs.existsSync(path.join(installed, 'build'))).toBe(false);
    expect(fs.existsSync(path.join(project.dir, 'node_modules', 'sharp'))).toBe(false); // optional, and omitted here
  });

  test.each([
    ['import', 'esm.mjs', "import { loadModel } from 'weightmap';"],
    ['require', 'cjs.cjs', "const { loadModel } = require('weightmap');\n(async () => {"],
  ])('%s generates the golden text', (_, file, load) => {
    const body = GENERATE(load) + (file.endsWith('.cjs') ? '})();\n' : '');
    fs.writeFileSync(path.join(project.dir, file), body);
    const result = run([file, stories]);
    expect(result.status).toBe(0);
    expect(result.stderr).toBe('');
    expect(result.stdout.length).toBeGreaterThan(100);
    expect(golden.startsWith(result.stdout)).toBe(true);
  });

  test.each([
    ['nodenext', ['use.mts', 'use.cts']],
    ['commonjs', ['use.ts']],
  ])('the declarations type-check as the README uses them: module %s, strict, skipLibCheck false', (module, files) => {
    for (const file of files) fs.writeFileSync(path.join(project.dir, file), README_USE);
    const compilerOptions = {
      strict: true,
      skipLibCheck: false,
      noEmit: true,
      target: 'es2022',
      lib: ['es2022', 'esnext.disposable'],
      module,
      moduleResolution: module === 'nodenext' ? 'nodenext' : 'node10',
      types: ['node'],
      typeRoots: [path.join(repo, 'node_modules', '@types')],
    };
    const config = `tsconfig.${module}.json`;
    fs.writeFileSync(path.join(project.dir, config), JSON.stringify({ compilerOptions, files }));
    const tsc = run([path.join(repo, 'node_modules', 'typescript', 'bin', 'tsc'), '-p', config]);
    expect(output(tsc)).toBe('exit 0\n');
  });
});
