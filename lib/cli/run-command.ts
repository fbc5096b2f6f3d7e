/**
 * How every CLI command ends: a WeightFormatError (a bad file) or a usage error (a bad option or
 * argument value, a missing path, an output that is an input) is one line on stderr and exit code
 * 2; any other error is one line and exit code 1. Stack traces only with WEIGHTMAP_DEBUG.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { InvalidArgumentError } from 'commander';
import { NoTokenizerError, OutputIsInputError, WeightFormatError } from '../errors';

export const EXIT_BAD_FILE = 2;
export const EXIT_USAGE = 2;
export const EXIT_FAILURE = 1;

export function reportError(error: unknown): number {
  if (process.env.WEIGHTMAP_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof WeightFormatError) {
    process.stderr.write(`weightmap: ${message}\n`);
    return EXIT_BAD_FILE;
  }
  const errno = error as NodeJS.ErrnoException;
  if (errno?.code === 'ENOENT' && typeof errno.path === 'string') {
    process.stderr.write(`weightmap: no such file or folder: ${errno.path}\n`);
    return EXIT_USAGE;
  }
  if (error instanceof NoTokenizerError) {
    process.stderr.write(`weightmap: ${error.code}: ${error.path} has no tokenizer in or beside it: pass --tokenizer PATH\n`);
    return EXIT_USAGE;
  }
  if (error instanceof InvalidArgumentError) {
    process.stderr.write(`weightmap: ${message}\n`);
    return EXIT_USAGE;
  }
  const code = errno?.code;
  process.stderr.write(`weightmap: ${code && !message.includes(code) ? `${code}: ` : ''}${message}\n`);
  return error instanceof OutputIsInputError ? EXIT_USAGE : EXIT_FAILURE;
}

/** Wraps a command action: runs it, and on failure reports and sets the exit code. */
export function action<A extends unknown[]>(fn: (...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    try {
      await fn(...args);
    } catch (error) {
      process.exitCode = reportError(error);
    }
  };
}

/** Parses a CLI integer option in [min, max]; commander reports a bad value as one line (exit 2). */
export function intOption(min = 0, max = Number.MAX_SAFE_INTEGER): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (value.trim() === '' || !Number.isInteger(n) || n < min || n > max) {
      throw new InvalidArgumentError(max === Number.MAX_SAFE_INTEGER ? `expected an integer >= ${min}` : `expected an integer in [${min}, ${max}]`);
    }
    return n;
  };
}

/** Parses a CLI number option in [min, max] (`above`: min itself excluded). */
export function numberOption(min = -Infinity, max = Infinity, above = false): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    const low = above ? n > min : n >= min;
    if (value.trim() === '' || !Number.isFinite(n) || !low || n > max) {
      const range = min === -Infinity && max === Infinity ? '' : max === Infinity ? ` ${above ? '>' : '>='} ${min}` : ` in [${min}, ${max}]`;
      throw new InvalidArgumentError(`expected a number${range}`);
    }
    return n;
  };
}

/** One of `choices`. */
export function choiceOption<T extends string>(choices: readonly T[]): (value: string) => T {
  return (value: string) => {
    if (!(choices as readonly string[]).includes(value)) throw new InvalidArgumentError(`expected one of ${choices.join(', ')}`);
    return value as T;
  };
}

/** Threads: 1 to the logical cores of this machine. */
export const threadsOption = intOption(1, os.availableParallelism?.() ?? os.cpus().length);

/** A path argument that must exist (a missing one is one line and exit 2, not an ENOENT later). */
export function existingPath(value: string): string {
  if (value === '') throw new InvalidArgumentError('expected a path, got an empty string');
  if (!fs.existsSync(value)) throw new InvalidArgumentError('no such file or folder');
  return value;
}
