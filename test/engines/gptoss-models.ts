/**
 * The tiny random-weight gpt-oss GGUF files (scripts/interop/gptoss-gguf.py, written by llama.cpp's
 * own gguf-py; f32 and MXFP4 experts), generated into a test's folder. Needs the benchmarks' peer
 * cache (scripts/bench/peers/cache.js: WEIGHTMAP_PEERS_CACHE, default ~/.cache/weightmap-peers) with
 * llama.cpp's gguf-py, and python3 with numpy: `gptossUsable` says whether they are there.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as os from 'node:os';
import * as path from 'node:path';

export const PEERS = process.env.WEIGHTMAP_PEERS_CACHE ?? path.join(os.homedir(), '.cache', 'weightmap-peers');
export const LLAMA_CPP = path.join(PEERS, 'llama.cpp');
export const gptossUsable = fs.existsSync(path.join(LLAMA_CPP, 'gguf-py', 'gguf', 'quants.py')) && spawnSync('python3', ['-c', 'import numpy'], { stdio: 'ignore' }).status === 0;

/** Writes gptoss-f32.gguf and gptoss-mxfp4.gguf into `dir` (created); their paths. */
export function gptossFiles(dir: string): { f32: string; mxfp4: string } {
  fs.mkdirSync(dir, { recursive: true });
  const run = spawnSync('python3', [path.join(__dirname, '..', '..', 'scripts', 'interop', 'gptoss-gguf.py'), LLAMA_CPP, dir], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`gptoss-gguf.py failed: ${run.stderr}`);
  return { f32: path.join(dir, 'gptoss-f32.gguf'), mxfp4: path.join(dir, 'gptoss-mxfp4.gguf') };
}
