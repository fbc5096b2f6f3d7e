#!/usr/bin/env node
// Writes dist/binding.d.ts, the native addon's types, for the published declarations. lib/ imports
// binding.d.ts as '../binding' (or '../../binding' from a subfolder), and dist/cjs/ sits where lib/
// does one level down, so the same relative imports in the emitted declarations resolve to
// dist/binding.d.ts; its own imports of './lib/...' become './cjs/...'.
'use strict';
require('./args').scriptArgs('copy-binding-types.js (no options; part of npm run build:ts)');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const source = fs.readFileSync(path.join(root, 'binding.d.ts'), 'utf8');
const stray = source.match(/from '\.\.?\/(?!lib\/)[^']*'/);
if (stray) throw new Error(`binding.d.ts: ${stray[0]} has no counterpart under dist/`);
fs.writeFileSync(path.join(root, 'dist', 'binding.d.ts'), source.replace(/from '\.\/lib\//g, "from './cjs/"));
