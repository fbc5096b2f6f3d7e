// Preloaded (node -r) into a CLI child by interrupt.test.ts: every write to an opened file waits
// 25 ms first, as on a slow disk, so that a conversion of a few tens of MB is still writing when
// the test has seen its temporary and sends the signal. Nothing else changes.
'use strict';
const fsp = require('node:fs/promises');

const open = fsp.open;
fsp.open = async (...args) => {
  const handle = await open(...args);
  const write = handle.write.bind(handle);
  handle.write = async (...writeArgs) => {
    await new Promise((resolve) => setTimeout(resolve, 25));
    return write(...writeArgs);
  };
  return handle;
};
