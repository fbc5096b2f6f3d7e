#!/usr/bin/env node
// README.md's code samples are the files in examples/, included verbatim: each
// `<!-- example: examples/NAME.mjs -->` line is followed by a ```js block holding that file.
// This rewrites those blocks from the files (--check: exit 1 and name the stale ones instead).
// test/examples/readme-samples.test.ts runs the check; test/examples/examples.test.ts runs the files.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const MARKER = /^<!-- example: (examples\/[\w.-]+\.mjs) -->\n```js\n[\s\S]*?\n?```$/gm;

function synced(readme) {
  const stale = [];
  const text = readme.replace(MARKER, (block, file) => {
    const source = fs.readFileSync(path.join(root, file), 'utf8').replace(/\n$/, '');
    const fresh = `<!-- example: ${file} -->\n\`\`\`js\n${source}\n\`\`\``;
    if (fresh !== block) stale.push(file);
    return fresh;
  });
  return { text, stale };
}

module.exports = { synced, MARKER };

if (require.main === module) {
  const { values } = require('./args').scriptArgs('sync-readme-examples.js [--check]', { options: { check: 'boolean' } });
  const readmePath = path.join(root, 'README.md');
  const { text, stale } = synced(fs.readFileSync(readmePath, 'utf8'));
  if (values.check) {
    if (stale.length > 0) {
      console.error(`README.md is stale for ${stale.join(', ')}: run node scripts/sync-readme-examples.js`);
      process.exit(1);
    }
  } else if (stale.length > 0) {
    fs.writeFileSync(readmePath, text);
    console.log(`README.md: updated ${stale.join(', ')}`);
  }
}
