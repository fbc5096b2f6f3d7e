/**
 * Lets a plain `node` child process require the TypeScript sources (lib/, test/) directly: each
 * .ts file is transpiled on load with the compiler the project already has (types are not
 * checked; `npm run typecheck` does that), like ts-jest's isolatedModules mode. Transpiled text is
 * cached in the OS temp folder by source hash, so the many short fuzz children pay for it once.
 */
'use strict';
const crypto = require('node:crypto');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const cacheDir = path.join(os.tmpdir(), `weightmap-ts-cache-${process.getuid ? process.getuid() : 'user'}`);
fs.mkdirSync(cacheDir, { recursive: true });

require.extensions['.ts'] = (module, filename) => {
  const source = fs.readFileSync(filename, 'utf8');
  const key = crypto.createHash('sha256').update(filename).update(source).digest('hex');
  const cached = path.join(cacheDir, `${key}.js`);
  let output;
  try {
    output = fs.readFileSync(cached, 'utf8');
  } catch {
    // Loaded only on a cache miss: requiring the compiler alone takes a quarter second.
    const ts = require('typescript');
    const compilerOptions = { module: ts.ModuleKind.CommonJS, target: ts.ScriptTarget.ES2022, esModuleInterop: true };
    output = ts.transpileModule(source, { compilerOptions, fileName: filename }).outputText + `\n// ts ${ts.version}`;
    // Written under a unique name then renamed: concurrent children never read a partial file.
    const tmp = `${cached}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, output);
    fs.renameSync(tmp, cached);
  }
  module._compile(output, filename);
};
