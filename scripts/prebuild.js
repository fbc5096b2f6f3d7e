#!/usr/bin/env node
// Builds the addons that ship in the npm tarball, where node-gyp-build finds them:
// prebuilds/<platform>-<arch>/weightmap.napi[.glibc].node (one binary per target; the kernel set is
// chosen at run time). Runs as `prepack` and in .github/workflows/prebuilds.yml (macOS, Windows).
//
// Targets: WEIGHTMAP_PREBUILD_ARCHS="x64,arm64" builds exactly those and fails if one cannot be
// built; without it, this machine's arch, plus linux-arm64 on linux-x64 when the cross compiler
// (Debian's g++-aarch64-linux-gnu) is on PATH. Each target builds incrementally in
// build-prebuild/<platform>-<arch>: Release and stripped (WEIGHTMAP_PREBUILD in
// CMakeLists.txt). Only the targets built are replaced under prebuilds/; nothing else is deleted.
'use strict';
require('./args').scriptArgs('prebuild.js (no options; WEIGHTMAP_PREBUILD_ARCHS=x64,arm64 picks the targets)');
const { spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const onPath = require('./on-path');

const root = path.join(__dirname, '..');
const platform = process.platform;
const host = process.arch;
// Above this a change has added something that does not belong in a prebuild (debug info, a
// static library): each binary is about 1 MB today.
const SIZE_BUDGET = 3 * 1024 * 1024;
// Cross builds this script knows, by host then target: the toolchain file and its compiler.
const CROSS = {
  'linux-x64': { arm64: { toolchain: 'cmake/aarch64-linux-gnu.cmake', compiler: 'aarch64-linux-gnu-g++' } },
};
const crossTargets = CROSS[`${platform}-${host}`] || {};
const ELF_MACHINE = { x64: 62, arm64: 183 };

function fail(message) {
  console.error(`weightmap prebuild: ${message}`);
  process.exit(1);
}

function targets() {
  const requested = process.env.WEIGHTMAP_PREBUILD_ARCHS;
  if (requested) return requested.split(',').map((a) => a.trim()).filter(Boolean);
  const archs = [host];
  for (const [arch, cross] of Object.entries(crossTargets)) {
    if (onPath(cross.compiler)) archs.push(arch);
    else console.error(`weightmap prebuild: skipping ${platform}-${arch}: ${cross.compiler} is not on PATH`);
  }
  return archs;
}

function build(arch) {
  const cross = arch === host ? undefined : crossTargets[arch];
  if (arch !== host && !cross) fail(`cannot build ${platform}-${arch} on ${platform}-${host} (no cross toolchain known)`);
  if (cross && !onPath(cross.compiler)) fail(`${platform}-${arch} needs ${cross.compiler} on PATH (Debian: apt-get install g++-aarch64-linux-gnu)`);

  const out = path.join(root, 'build-prebuild', `${platform}-${arch}`);
  const parallel = os.availableParallelism ? os.availableParallelism() : os.cpus().length;
  // configure every time, so that the options below apply to a build folder made before them;
  // then build, incrementally.
  const cmakeJs = require.resolve('cmake-js/bin/cmake-js');
  const options = ['--directory', root, '--out', out, '--arch', arch, '--log-level', 'warn', '--CDWEIGHTMAP_PREBUILD=ON'];
  if (cross) options.push(`--CDCMAKE_TOOLCHAIN_FILE=${path.join(root, cross.toolchain)}`);
  for (const command of [['configure'], ['build', '--parallel', String(parallel)]]) {
    const result = spawnSync(process.execPath, [cmakeJs, ...command, ...options], { stdio: 'inherit', cwd: root });
    if (result.status !== 0) fail(`building ${platform}-${arch} failed (cmake-js ${command[0]} exited with ${result.status ?? result.signal})`);
  }

  const built = path.join(out, 'Release', 'weightmap.node');
  if (!fs.existsSync(built)) fail(`cmake-js finished but ${built} is missing`);
  const binary = fs.readFileSync(built);
  if (platform === 'linux' && binary.readUInt16LE(18) !== ELF_MACHINE[arch]) {
    fail(`${built} is not an ELF binary for ${arch} (e_machine ${binary.readUInt16LE(18)})`);
  }
  if (binary.length > SIZE_BUDGET) fail(`${built} is ${binary.length} bytes, over the ${SIZE_BUDGET}-byte budget`);

  const dir = path.join(root, 'prebuilds', `${platform}-${arch}`);
  fs.rmSync(dir, { recursive: true, force: true });
  fs.mkdirSync(dir, { recursive: true });
  // glibc-tagged on Linux so that node-gyp-build does not offer it to musl (Alpine), which builds from source.
  const file = path.join(dir, platform === 'linux' ? 'weightmap.napi.glibc.node' : 'weightmap.napi.node');
  fs.copyFileSync(built, file);
  if (arch === host) {
    const load = spawnSync(process.execPath, ['-e', 'require(process.argv[1])', file], { stdio: 'inherit' });
    if (load.status !== 0) fail(`${file} was built but does not load`);
  }
  console.log(`${path.relative(root, file)}: ${binary.length} bytes`);
}

for (const arch of targets()) build(arch);
