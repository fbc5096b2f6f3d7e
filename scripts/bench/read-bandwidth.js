// The read bandwidth every decode bound in scripts/bench divides by (decoder.js, moondream.js,
// peers.js): `threads` threads of the addon's probe (kernels.readBandwidth: the widest loads of the
// active ISA, one contiguous range per thread, wall clock) streaming `view`, which is the model's
// own mapping where there is one, so the probe reads the same pages through the same page-table
// entries as the decode it bounds. The best of PASSES passes without and PASSES with software
// prefetch 4 KB ahead: other load can only lengthen a pass, and the fastest read we know of this
// memory gives the highest bound, which only lowers every share.
'use strict';
const loadAddon = require('./addon');

const PASSES = 3;
const PREFETCH_BYTES = [0, 4096];

/** Bytes per second; `view` a typed array much larger than the last-level cache. */
function measureReadBandwidth(view, threads) {
  const { kernels } = loadAddon();
  kernels.readBandwidth(view, threads, 1); // faults the pages in, settles the clock
  let best = 0;
  for (const prefetch of PREFETCH_BYTES)
    for (let p = 0; p < PASSES; p++) best = Math.max(best, view.byteLength / kernels.readBandwidth(view, threads, 1, prefetch));
  return best;
}

module.exports = { measureReadBandwidth };
