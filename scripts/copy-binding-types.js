#!/usr/bin/env node
// Writes dist/cjs/addon/binding.d.ts, the native addon's types, for the published declarations: tsc
// emits no .d.ts it was given, and lib/ imports lib/addon/binding.d.ts as '../addon/binding' (from a
// subfolder), which the emitted declarations under dist/cjs/ keep; its own relative imports stay
// valid there because dist/cjs/ mirrors lib/.
'use strict';
require('./args').scriptArgs('copy-binding-types.js (no options; part of npm run build:ts)');
const fs = require('node:fs');
const path = require('node:path');

const root = path.join(__dirname, '..');
const target = path.join(root, 'dist', 'cjs', 'addon', 'binding.d.ts');
fs.mkdirSync(path.dirname(target), { recursive: true });
fs.copyFileSync(path.join(root, 'lib', 'addon', 'binding.d.ts'), target);
