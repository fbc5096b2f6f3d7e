// The command line of every script under scripts/: scriptArgs() parses process.argv with
// node:util parseArgs. --help (-h) prints the usage on stdout and exits 0 before any work; an
// unknown flag, a flag-looking positional argument, a flag without its value, or a number of
// positional arguments outside [min, max] prints the problem and the usage on stderr and exits 2.
//   const { values, positionals } = scriptArgs('make-gguf.js OUT --type T [--seed N] [--vocab]',
//     { options: { type: 'string', seed: 'string', vocab: 'boolean' }, positionals: [1, 1] });
'use strict';
const { parseArgs } = require('node:util');

/** `spec.options`: name -> 'string' | 'boolean' | parseArgs option; `spec.positionals`: [min, max]; `spec.rest`: arguments after `--` allowed. */
function scriptArgs(usage, spec = {}) {
  const [min, max] = spec.positionals ?? [0, 0];
  const options = { help: { type: 'boolean', short: 'h' } };
  for (const [name, option] of Object.entries(spec.options ?? {})) options[name] = typeof option === 'string' ? { type: option } : option;
  const fail = (problem) => {
    process.stderr.write(`${problem}\nusage: ${usage}\n`);
    process.exit(2);
  };
  let parsed;
  try {
    parsed = parseArgs({ args: process.argv.slice(2), options, allowPositionals: true, strict: true, tokens: true });
  } catch (error) {
    const name = /'([^']+)'/.exec(error.message)?.[1];
    return fail(error.code === 'ERR_PARSE_ARGS_UNKNOWN_OPTION' && name ? `unknown option '${name}'` : error.message);
  }
  if (parsed.values.help) {
    process.stdout.write(`usage: ${usage}\n`);
    process.exit(0);
  }
  const terminator = parsed.tokens.findIndex((t) => t.kind === 'option-terminator');
  const before = parsed.tokens.filter((t, i) => t.kind === 'positional' && (terminator < 0 || i < terminator)).map((t) => t.value);
  const after = terminator < 0 ? [] : parsed.tokens.slice(terminator + 1).map((t) => t.value);
  if (after.length > 0 && !spec.rest) fail(`unexpected arguments after --: ${after.join(' ')}`);
  const flagLike = before.find((p) => /^-./.test(p));
  if (flagLike !== undefined) fail(`unknown option '${flagLike}'`);
  if (before.length < min) fail(`expected ${min === max ? min : `at least ${min}`} argument${min === 1 ? '' : 's'}, got ${before.length}`);
  if (before.length > max) fail(`expected ${max === 0 ? 'no arguments' : `at most ${max}`}, got ${before.length}: ${before.join(' ')}`);
  return { values: parsed.values, positionals: before, rest: after };
}

module.exports = { scriptArgs };
