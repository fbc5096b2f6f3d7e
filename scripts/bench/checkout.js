// Which checkout a benchmark measures: `--root DIR` (another worktree of weightmap, built), else
// this one. Everything the measurement loads from the package comes from its dist/cjs (and through
// that, its addon); the probes (read-bandwidth.js, peak.js) stay this checkout's, so two checkouts
// measured in turns share one bound. ttft.js takes --root its own way (several, alternated).
'use strict';
const path = require('node:path');

const i = process.argv.indexOf('--root');
const ROOT = path.resolve(i >= 0 ? process.argv[i + 1] : path.join(__dirname, '..', '..'));

/** The path of `rel` under the measured checkout's dist/cjs. */
const dist = (rel) => path.join(ROOT, 'dist', 'cjs', rel);

module.exports = { ROOT, dist };
