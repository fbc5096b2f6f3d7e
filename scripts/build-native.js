#!/usr/bin/env node
// Builds the addon from source with cmake-js (Node-API headers come from the node-api-headers
// package, so nothing is downloaded). WEIGHTMAP_BUILD_DIR builds elsewhere than ./build, so that
// two checkouts or two developers can build side by side; the loader finds it via WEIGHTMAP_ADDON.
'use strict';
require('./args').scriptArgs('build-native.js (no options; WEIGHTMAP_BUILD_DIR builds elsewhere than ./build)');
const { spawnSync } = require('node:child_process');
const os = require('node:os');
const path = require('node:path');

const root = path.join(__dirname, '..');
const cli = require.resolve('cmake-js/bin/cmake-js');
const parallel = Math.max(1, (os.availableParallelism ? os.availableParallelism() : os.cpus().length));
const args = [cli, 'compile', '--directory', root, '--parallel', String(parallel), '--log-level', 'warn'];
if (process.env.WEIGHTMAP_BUILD_DIR) args.push('--out', path.resolve(process.env.WEIGHTMAP_BUILD_DIR));
if (process.env.WEIGHTMAP_DEBUG_BUILD) args.push('--debug');
const result = spawnSync(process.execPath, args, { stdio: 'inherit', cwd: root });
process.exit(result.status === null ? 1 : result.status);
