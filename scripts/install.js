#!/usr/bin/env node
// npm install hook. Uses a prebuilt addon for this platform when one loads (prebuilds/, made by
// prebuildify, found by node-gyp-build) and otherwise builds from source with cmake-js
// (scripts/build-native.js). `npm install --build-from-source` always builds.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

const root = path.join(__dirname, '..');
const forced = process.env.npm_config_build_from_source === 'true';

function loads() {
  try {
    require('node-gyp-build')(root);
    return true;
  } catch {
    return false;
  }
}

if (!forced && loads()) process.exit(0);
const build = spawnSync(process.execPath, [path.join(__dirname, 'build-native.js')], { stdio: 'inherit', cwd: root });
if (build.status !== 0) {
  console.error(
    `weightmap: building the native addon for ${process.platform}-${process.arch} failed. ` +
      'It needs cmake >= 3.15 and a C++17 compiler (g++ >= 9, clang >= 10 or MSVC 2019).',
  );
  process.exit(build.status ?? 1);
}
if (!loads()) {
  console.error('weightmap: the addon was built but does not load; run `node -e "require(\'weightmap\')"` to see why.');
  process.exit(1);
}
