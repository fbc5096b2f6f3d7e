/**
 * How every CLI command ends: a WeightFormatError (a bad file) or a usage error (an output that is
 * an input) is one line on stderr and exit code 2; any other error is one line and exit code 1.
 * Stack traces only with WEIGHTMAP_DEBUG.
 */
import { OutputIsInputError, WeightFormatError } from '../errors';

export const EXIT_BAD_FILE = 2;
export const EXIT_FAILURE = 1;

export function reportError(error: unknown): number {
  if (process.env.WEIGHTMAP_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  const message = error instanceof Error ? error.message : String(error);
  if (error instanceof WeightFormatError) {
    process.stderr.write(`weightmap: ${message}\n`);
    return EXIT_BAD_FILE;
  }
  const code = (error as { code?: string })?.code;
  process.stderr.write(`weightmap: ${code && !message.includes(code) ? `${code}: ` : ''}${message}\n`);
  return error instanceof OutputIsInputError ? EXIT_BAD_FILE : EXIT_FAILURE;
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

/** Parses a CLI integer option, rejecting junk with a clear message. */
export function intOption(name: string, min = 0): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isInteger(n) || n < min) throw new Error(`--${name} must be an integer >= ${min}, got '${value}'`);
    return n;
  };
}

export function numberOption(name: string): (value: string) => number {
  return (value: string) => {
    const n = Number(value);
    if (!Number.isFinite(n)) throw new Error(`--${name} must be a number, got '${value}'`);
    return n;
  };
}
