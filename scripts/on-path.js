// Whether `program` is an executable file in a folder of PATH (with Windows' extensions there).
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const extensions = process.platform === 'win32' ? ['.exe', '.cmd', '.bat', ''] : [''];

module.exports = function onPath(program) {
  return (process.env.PATH || '').split(path.delimiter).some(
    (dir) => dir && extensions.some((ext) => fs.existsSync(path.join(dir, program + ext))),
  );
};
