#!/usr/bin/env node
// npm install hook. Silent when a prebuilt addon for this platform loads (prebuilds/, found by
// node-gyp-build). Otherwise builds from source with cmake-js (scripts/build-native.js) when cmake
// and a C++ compiler are there, and else says in one message what is missing.
// `npm install --build-from-source` always builds.
'use strict';
require('./args').scriptArgs('install.js (no options; the npm install hook)');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const onPath = require('./on-path');

const root = path.join(__dirname, '..');
const target = `${process.platform}-${process.arch}`;
const forced = process.env.npm_config_build_from_source === 'true';

/** Why the addon does not load, or undefined when it does. */
function loadError() {
  try {
    require('node-gyp-build')(root);
    return undefined;
  } catch (error) {
    return error;
  }
}

/** What a source build needs and this machine lacks (MSVC is found by cmake-js, not on PATH). */
function missingTools() {
  const missing = [];
  if (!onPath('cmake')) missing.push('cmake >= 3.15');
  if (process.platform !== 'win32' && !process.env.CXX && !['c++', 'g++', 'clang++'].some(onPath)) {
    missing.push('a C++17 compiler (c++, g++ or clang++ on PATH, or $CXX)');
  }
  return missing;
}

const before = forced ? undefined : loadError();
if (!forced && !before) process.exit(0);

const why = forced ? '--build-from-source was given' : `no prebuilt addon for ${target} loads here (${before.message.split('\n')[0]})`;
const missing = missingTools();
if (missing.length > 0) {
  console.error(
    `weightmap: ${why}, and building it from source needs ${missing.join(' and ')}, which this machine lacks. ` +
      'Install them, then run `npm rebuild weightmap`.',
  );
  process.exit(1);
}
const build = spawnSync(process.execPath, [path.join(__dirname, 'build-native.js')], { stdio: 'inherit', cwd: root });
if (build.status !== 0) {
  console.error(`weightmap: ${why}, and building it from source with cmake-js failed (output above).`);
  process.exit(build.status ?? 1);
}
const after = loadError();
if (after) {
  console.error(`weightmap: the addon was built from source but does not load: ${after.message}`);
  process.exit(1);
}
