#!/usr/bin/env node
// Copies binding.d.ts (the native addon's types) to dist/binding.d.ts. lib/ imports it as
// '../binding' (or '../../binding' from a subfolder), and dist/cjs/ sits where lib/ does one level
// down, so the same relative imports in the emitted declarations resolve inside the package.
'use strict';
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
fs.copyFileSync(path.join(root, 'binding.d.ts'), path.join(root, 'dist', 'binding.d.ts'));
