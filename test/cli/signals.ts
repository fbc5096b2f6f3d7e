/** Spawning the built CLI (dist/) and signalling it once it is ready: for the tests of SIGINT and SIGTERM. */
import { spawn, type ChildProcess } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';

export const CLI = path.resolve(__dirname, '..', '..', 'dist', 'cjs', 'cli', 'main.js');

export interface Child {
  process: ChildProcess;
  stdout: () => string;
  stderr: () => string;
  /** The exit code (null when a signal ended it) and that signal. */
  exit: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

export function spawnCli(args: string[], nodeArgs: string[] = []): Child {
  const child = spawn(process.execPath, [...nodeArgs, CLI, ...args], { stdio: ['pipe', 'pipe', 'pipe'], env: { ...process.env, WEIGHTMAP_DEBUG: '' } });
  let out = '';
  let err = '';
  child.stdout!.on('data', (d: Buffer) => (out += d.toString()));
  child.stderr!.on('data', (d: Buffer) => (err += d.toString()));
  const exit = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  return { process: child, stdout: () => out, stderr: () => err, exit };
}

/** Polls `check` every 10 ms until it holds; fails after `limitMs` (a bound, not a timing the test relies on). */
export async function until(check: () => boolean, what: string, limitMs = 60_000): Promise<void> {
  const start = Date.now();
  while (!check()) {
    if (Date.now() - start > limitMs) throw new Error(`gave up waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

/** Whether process `pid` has `file` mapped (Linux: /proc/PID/maps): it has loaded the model, its signal handlers are in place. */
export function mapsFile(pid: number, file: string): boolean {
  try {
    return fs.readFileSync(`/proc/${pid}/maps`, 'utf8').includes(fs.realpathSync(file));
  } catch {
    return false;
  }
}
