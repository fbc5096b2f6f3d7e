/**
 * How every CLI command ends. Exit codes, one rule for every command (README "Command line"):
 *   0    done
 *   1    a runtime failure: an I/O error (a full disk, a permission), an internal error
 *   2    bad input or usage: a bad option or argument, a missing path, a bad or unsupported file
 *        (WeightFormatError of any code, UnsupportedError), an output that is an input or would
 *        replace another model's file, a listener or pipeline its options make insecure or incomplete
 *   130  interrupted by SIGINT, 143 by SIGTERM (generate, chat, embed, answer, bench, convert)
 * Each error is one line on stderr; stack traces only with WEIGHTMAP_DEBUG.
 */
import * as fs from 'node:fs';
import * as os from 'node:os';
import { CommanderError, InvalidArgumentError } from 'commander';
import { AbortError, ConstraintError, NoTokenizerError, OutputIsInputError, SidecarConflictError, UnsupportedError, WeightFormatError } from '../base/errors';
import { removeTemporariesSync } from '../formats/writing/output-files';

export const EXIT_FAILURE = 1;
export const EXIT_USAGE = 2;
/** 128 + the signal's number, as a shell reports a process the signal ended. */
export const EXIT_SIGNAL = { SIGINT: 130, SIGTERM: 143 } as const;

/** Error codes of a path argument that is wrong (absent, a file where a folder is needed, ...). */
const PATH_USAGE_CODES = new Set(['ENOENT', 'ENOTDIR', 'EISDIR', 'ENAMETOOLONG']);
/** Codes of a value or a combination of options a call does not accept (Node's, and weightmap's refusals). */
const VALUE_USAGE_CODES = new Set([
  'ERR_OUT_OF_RANGE',
  'ERR_INVALID_ARG_VALUE',
  'ERR_INVALID_ARG_TYPE',
  'ERR_WEIGHTMAP_INSECURE_LISTEN', // a stage off loopback without TLS or a caller check
  'ERR_WEIGHTMAP_PIPELINE_CONFIG', // stages whose layers do not cover the model once, a remote stage without TLS
]);

/** The exit code of a command that failed with `error` (the table above). */
export function exitCodeOf(error: unknown): number {
  if (
    error instanceof WeightFormatError ||
    error instanceof UnsupportedError ||
    (error instanceof ConstraintError && error.code !== 'TOKEN_REJECTED') || // a schema or bias the user gave
    error instanceof OutputIsInputError ||
    error instanceof SidecarConflictError ||
    error instanceof NoTokenizerError ||
    error instanceof InvalidArgumentError ||
    error instanceof CommanderError
  ) {
    return EXIT_USAGE;
  }
  const errno = error as NodeJS.ErrnoException | undefined;
  const code = typeof errno?.code === 'string' ? errno.code : undefined;
  if (code !== undefined && PATH_USAGE_CODES.has(code) && typeof errno?.path === 'string') return EXIT_USAGE;
  if (code !== undefined && VALUE_USAGE_CODES.has(code)) return EXIT_USAGE;
  return EXIT_FAILURE;
}

/** The one line that reports `error` on stderr. */
function errorLine(error: unknown): string {
  const message = typeof (error as Error | undefined)?.message === 'string' ? (error as Error).message : String(error);
  if (error instanceof WeightFormatError || error instanceof InvalidArgumentError) return message;
  const errno = error as NodeJS.ErrnoException;
  if (errno?.code === 'ENOENT' && typeof errno.path === 'string') return `no such file or folder: ${errno.path}`;
  if (error instanceof NoTokenizerError) return `${error.code}: ${error.path} has no tokenizer in or beside it: pass --tokenizer PATH`;
  const code = errno?.code;
  return `${typeof code === 'string' && !message.includes(code) ? `${code}: ` : ''}${message}`;
}

export function reportError(error: unknown): number {
  if (process.env.WEIGHTMAP_DEBUG && error instanceof Error) process.stderr.write(`${error.stack}\n`);
  process.stderr.write(`weightmap: ${errorLine(error).replace(/\r?\n/g, ' ')}\n`);
  return exitCodeOf(error);
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

/** Runs `stop` when `signal` fires, or now if it already has; returns the remover of the listener. */
export function whenInterrupted(signal: AbortSignal, stop: () => void): () => void {
  if (signal.aborted) {
    stop();
    return () => undefined;
  }
  signal.addEventListener('abort', stop, { once: true });
  return () => signal.removeEventListener('abort', stop);
}

/** An AbortError, ours or the platform's (a DOMException named so). */
function isAbort(error: unknown): boolean {
  return error instanceof AbortError || (error instanceof Error && error.name === 'AbortError');
}

/**
 * A command action that SIGINT and SIGTERM interrupt: `fn` gets an AbortSignal they fire, stops
 * (a write removes its temporaries), and the command exits with 130 or 143 however `fn` ended. A
 * second signal before it has stopped removes this process's temporaries and exits at once.
 */
export function interruptible<A extends unknown[]>(fn: (signal: AbortSignal, ...args: A) => Promise<void>): (...args: A) => Promise<void> {
  return async (...args: A) => {
    const controller = new AbortController();
    let received: keyof typeof EXIT_SIGNAL | undefined;
    const onSignal = (name: keyof typeof EXIT_SIGNAL) => {
      if (received !== undefined) {
        removeTemporariesSync();
        process.exit(EXIT_SIGNAL[received]);
      }
      received = name;
      // Set now: a command whose wait the interruption ends may leave nothing for the event loop to run.
      process.exitCode = EXIT_SIGNAL[name];
      process.stderr.write(`weightmap: interrupted by ${name}\n`);
      controller.abort(new AbortError(`interrupted by ${name}`));
    };
    process.on('SIGINT', onSignal);
    process.on('SIGTERM', onSignal);
    try {
      await fn(controller.signal, ...args);
    } catch (error) {
      // The interruption's own AbortError needs no line of its own; another failure still gets one.
      if (received === undefined || !isAbort(error)) process.exitCode = reportError(error);
    } finally {
      process.removeListener('SIGINT', onSignal);
      process.removeListener('SIGTERM', onSignal);
    }
    if (received !== undefined) process.exitCode = EXIT_SIGNAL[received];
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
