/**
 * A conversion that SIGINT or SIGTERM interrupts mid-write exits 130 or 143, says so in one line,
 * and leaves no temporary beside its destination; the source and a destination that existed stay
 * as they were. A temporary that a killed process left (its pid no longer runs, unmodified for a
 * minute) is removed by the next write to that folder; one of a running process stays.
 */
import { spawn, spawnSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { convert } from '../../lib/formats/writing/convert';
import { fixture } from '../helpers/fixtures';
import { testWorkspace } from '../helpers/workspace';
import { CLI, spawnCli, until } from '../cli/signals';

const TLLM = fixture('tllm-tiny', 'model.tllm');
const TEMPORARY = /^\..+\.\d+-[0-9a-f]{8}\.tmp$/;
const { fresh } = testWorkspace('weightmap-interrupt-');

const digest = (file: string) => createHash('sha256').update(fs.readFileSync(file)).digest('hex');

/** A stories15M-shaped HF folder in f16 (about 30 MB), from the benchmark's generator. */
let hf: string;
beforeAll(() => {
  expect(fs.existsSync(CLI)).toBe(true); // npm run build:ts
  hf = fresh('stories15m-hf');
  const made = spawnSync(process.execPath, [path.join(__dirname, '..', '..', 'scripts', 'bench', 'make-hf-model.js'), 'stories15m', hf, '--dtype', 'f16'], { encoding: 'utf8' });
  expect(made.status).toBe(0);
}, 120_000);

describe('convert interrupted mid-write', () => {
  test.each([
    ['SIGINT', 130],
    ['SIGTERM', 143],
  ] as const)('%s: exit code %d, no temporary, the source and the old destination intact', async (signal, code) => {
    const dir = fresh('out');
    fs.mkdirSync(dir);
    const out = path.join(dir, 'model.gguf');
    fs.writeFileSync(out, 'the destination before the conversion\n');
    const before = { out: digest(out), source: digest(path.join(hf, 'model.safetensors')), config: digest(path.join(hf, 'config.json')) };
    // slow-disk.js delays each write by 25 ms, so the write is still going when the temporary is seen.
    const child = spawnCli(['convert', hf, out, '--to', 'gguf', '--no-progress'], ['-r', path.join(__dirname, 'slow-disk.js')]);
    await until(() => fs.readdirSync(dir).some((n) => TEMPORARY.test(n)), 'the temporary');
    child.process.kill(signal);
    expect(await child.exit).toEqual({ code, signal: null });
    expect(child.stderr()).toBe(`weightmap: interrupted by ${signal}\n`);
    expect(fs.readdirSync(dir)).toEqual(['model.gguf']);
    expect({ out: digest(out), source: digest(path.join(hf, 'model.safetensors')), config: digest(path.join(hf, 'config.json')) }).toEqual(before);
  }, 120_000);
});

describe('stale temporaries', () => {
  test('one of a process that no longer runs is removed by the next write to its folder; one of a running process, or modified within the minute, stays', async () => {
    const dir = fresh('stale');
    fs.mkdirSync(dir);
    // A pid that ran and has exited (and been reaped): no process has it now, barring reuse.
    const dead = spawnSync(process.execPath, ['-e', '']).pid!;
    const live = spawn(process.execPath, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
    try {
      const staleFile = path.join(dir, `.model.gguf.${dead}-0123abcd.tmp`);
      const staleFolder = path.join(dir, `.tree.${dead}-89abcdef.tmp`);
      const running = path.join(dir, `.other.gguf.${live.pid}-deadbeef.tmp`);
      const notOurs = path.join(dir, '.model.gguf.notes.tmp');
      fs.writeFileSync(staleFile, 'left by a killed conversion');
      fs.mkdirSync(staleFolder);
      fs.writeFileSync(path.join(staleFolder, 'part.npy'), 'x');
      fs.writeFileSync(running, 'being written');
      fs.writeFileSync(notOurs, 'a file of the user named like a temporary, without a pid');
      // A dead pid's temporary modified within the last minute may be a live writer's elsewhere (another PID namespace): it stays.
      const recent = path.join(dir, `.recent.gguf.${dead}-00112233.tmp`);
      fs.writeFileSync(recent, 'written a moment ago');
      const anHourAgo = new Date(Date.now() - 3600_000);
      for (const p of [staleFile, staleFolder, running, notOurs]) fs.utimesSync(p, anHourAgo, anHourAgo);
      await convert(TLLM, path.join(dir, 'copy.tllm'), { to: 'tllm' });
      expect(fs.readdirSync(dir).sort()).toEqual([path.basename(notOurs), path.basename(running), path.basename(recent), 'copy.tllm'].sort());
    } finally {
      live.kill();
    }
  });
});
