/** Runs the weightmap CLI in-process, capturing stdout, stderr and the exit code. */
import { main } from '../../lib/cli/main';

export interface CliResult {
  stdout: string;
  stderr: string;
  exitCode: number;
}

export async function runCli(args: string[], stdin?: string): Promise<CliResult> {
  const out: string[] = [];
  const err: string[] = [];
  const origOut = process.stdout.write.bind(process.stdout);
  const origErr = process.stderr.write.bind(process.stderr);
  const previousExitCode = process.exitCode;
  process.exitCode = 0;
  process.stdout.write = ((chunk: string | Uint8Array) => (out.push(chunk.toString()), true)) as typeof process.stdout.write;
  process.stderr.write = ((chunk: string | Uint8Array) => (err.push(chunk.toString()), true)) as typeof process.stderr.write;
  const stdinDescriptor = Object.getOwnPropertyDescriptor(process, 'stdin');
  if (stdin !== undefined) {
    const { Readable } = await import('node:stream');
    Object.defineProperty(process, 'stdin', { value: Readable.from([stdin]), configurable: true });
  }
  try {
    await main(['node', 'weightmap', ...args]);
  } finally {
    process.stdout.write = origOut;
    process.stderr.write = origErr;
    if (stdinDescriptor) Object.defineProperty(process, 'stdin', stdinDescriptor);
  }
  const exitCode = Number(process.exitCode ?? 0);
  process.exitCode = previousExitCode;
  return { stdout: out.join(''), stderr: err.join(''), exitCode };
}
