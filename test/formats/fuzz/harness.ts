/**
 * The parent side of the fuzz: runs cases in child processes under a heap limit
 * (--max-old-space-size) and an inactivity limit, many cases per child. A child that aborts, is
 * killed or stops answering fails the case it had started, and a fresh child goes on with the next.
 */
import { spawn } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import type { CaseResult } from './child';
import type { FuzzCase } from './edits';

export type Outcome = CaseResult['outcome'] | 'crash' | 'hang';

export interface Result extends Omit<CaseResult, 'outcome'> {
  outcome: Outcome;
}

export interface HarnessOptions {
  /** V8 heap limit of a child, MiB. */
  heapMb?: number;
  /** A case that runs longer than this is a hang, ms. */
  caseTimeoutMs?: number;
  /** Extra environment (WEIGHTMAP_ADDON, LD_PRELOAD, ASAN_OPTIONS for the ASan run). */
  env?: NodeJS.ProcessEnv;
}

const CHILD = path.join(__dirname, 'child.ts');
const REGISTER = path.join(__dirname, 'register-ts.js');

/** Runs one child from case `first` until it ends; returns the results it reported and how it ended. */
function runChild(casesFile: string, first: number, workdir: string, o: Required<HarnessOptions>): Promise<{ results: CaseResult[]; started?: number; exit: string; stderr: string; timedOut: boolean }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [`--max-old-space-size=${o.heapMb}`, '-r', REGISTER, CHILD, casesFile, String(first), workdir], {
      env: { ...process.env, ...o.env },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    const results: CaseResult[] = [];
    let started: number | undefined;
    let pending = '';
    let stderr = '';
    let timedOut = false;
    let timer: NodeJS.Timeout | undefined;
    // The first case also pays for starting node and loading the library.
    const arm = (ms: number) => {
      if (timer) clearTimeout(timer);
      timer = setTimeout(() => {
        timedOut = true;
        child.kill('SIGKILL');
      }, ms);
    };
    arm(o.caseTimeoutMs + 20000);
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      pending += chunk;
      let nl: number;
      while ((nl = pending.indexOf('\n')) >= 0) {
        const line = pending.slice(0, nl);
        pending = pending.slice(nl + 1);
        if (line.startsWith('start ')) {
          started = Number(line.slice(6));
          arm(o.caseTimeoutMs);
        } else if (line.startsWith('result ')) {
          results.push(JSON.parse(line.slice(7)) as CaseResult);
          started = undefined;
        }
      }
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      stderr = (stderr + chunk).slice(-4000);
    });
    child.on('close', (code, signal) => {
      if (timer) clearTimeout(timer);
      resolve({ results, started, exit: signal ? `signal ${signal}` : `exit code ${code}`, stderr, timedOut });
    });
  });
}

/** Every case's result, in order. */
export async function runCases(cases: FuzzCase[], workdir: string, options: HarnessOptions = {}): Promise<Result[]> {
  const o: Required<HarnessOptions> = { heapMb: 512, caseTimeoutMs: 15000, env: {}, ...options };
  fs.mkdirSync(workdir, { recursive: true });
  const casesFile = path.join(workdir, 'cases.json');
  fs.writeFileSync(casesFile, JSON.stringify(cases));
  const results: Result[] = [];
  let next = 0;
  while (next < cases.length) {
    const run = await runChild(casesFile, next, workdir, o);
    results.push(...run.results);
    next += run.results.length;
    if (next >= cases.length) break;
    // The child ended early: the case it had started (or the next one, if it died between cases) failed.
    const failed = run.started ?? next;
    results.push({
      index: failed,
      outcome: run.timedOut ? 'hang' : 'crash',
      message: `${run.timedOut ? `no answer within ${o.caseTimeoutMs} ms` : run.exit}${run.stderr ? `\n${run.stderr}` : ''}`,
    });
    next = failed + 1;
  }
  return results;
}
