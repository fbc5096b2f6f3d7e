// The native addon for the benchmarks: WEIGHTMAP_ADDON (an explicit .node path) or the package's
// own build (node-gyp-build: prebuilds/, build/Release).
'use strict';
const path = require('node:path');

module.exports = function loadAddon() {
  const explicit = process.env.WEIGHTMAP_ADDON;
  if (explicit) return require(path.resolve(explicit));
  return require('node-gyp-build')(path.join(__dirname, '..', '..'));
};
