/**
 * The tiny random-weight Gemma 3 vision pair (scripts/interop/gemma3-vision-gguf.py, written by
 * llama.cpp's own gguf-py: the language model and its mmproj), generated into a test's folder.
 * Needs the peer cache's gguf-py (test/engines/gptoss-models.ts: PEERS) and python3 with numpy:
 * `visionPairUsable` says whether they are there.
 */
import { spawnSync } from 'node:child_process';
import * as fs from 'node:fs';
import * as path from 'node:path';
import { LLAMA_CPP, gptossUsable } from './gptoss-models';

export const visionPairUsable = gptossUsable;

/**
 * Writes gemma3-lm.gguf and gemma3-mmproj.gguf (its encoder matrices `mmDtype`), idefics3-mmproj.gguf
 * (the same encoder, SmolVLM's projector and preprocessor) and idefics3-lm.gguf (a SmolVLM-shaped
 * llama with its image tokens), into `dir` (created); their paths.
 */
export function gemma3VisionPair(dir: string, mmDtype: 'f16' | 'f32' | 'q8_0' = 'f16'): { lm: string; mmproj: string; idefics3: string; idefics3Lm: string } {
  fs.mkdirSync(dir, { recursive: true });
  const script = path.join(__dirname, '..', '..', 'scripts', 'interop', 'gemma3-vision-gguf.py');
  const run = spawnSync('python3', [script, LLAMA_CPP, dir, mmDtype], { encoding: 'utf8' });
  if (run.status !== 0) throw new Error(`gemma3-vision-gguf.py failed: ${run.stderr}`);
  return { lm: path.join(dir, 'gemma3-lm.gguf'), mmproj: path.join(dir, 'gemma3-mmproj.gguf'), idefics3: path.join(dir, 'idefics3-mmproj.gguf'), idefics3Lm: path.join(dir, 'idefics3-lm.gguf') };
}
