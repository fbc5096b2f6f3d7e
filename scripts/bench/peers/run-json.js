// Runs a benchmark side in its own process and parses what it prints: the JSON value that starts at
// the first line beginning with '[' or '{' (llama-bench prints an array over several lines).
// env: variables added to the child's environment. With timeoutSeconds, a run that takes longer is killed and throws an error with timedOut: true.
'use strict';
const { spawnSync } = require('node:child_process');
const path = require('node:path');

function runJson(command, argv, timeoutSeconds, env) {
  const r = spawnSync(command, argv.map(String), { encoding: 'utf8', maxBuffer: 64 << 20, ...(timeoutSeconds ? { timeout: timeoutSeconds * 1000 } : {}), ...(env ? { env: { ...process.env, ...env } } : {}) });
  if (r.error?.code === 'ETIMEDOUT') throw Object.assign(new Error(`${path.basename(command)} ran past ${timeoutSeconds} s`), { timedOut: true });
  if (r.status !== 0) throw new Error(`${path.basename(command)} ${argv.join(' ')} failed (${r.status}):\n${r.stderr.slice(-2000)}`);
  const lines = r.stdout.trim().split('\n');
  return JSON.parse(lines.slice(lines.findIndex((l) => l.startsWith('[') || l.startsWith('{'))).join('\n'));
}

module.exports = { runJson };
