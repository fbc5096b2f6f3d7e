/** Running llama.cpp's llama-embedding (the reference of the GGUF embedding tests) and comparing vectors. */
import { spawnSync } from 'node:child_process';

export function cosine(a: ArrayLike<number>, b: ArrayLike<number>): number {
  let d = 0;
  let x = 0;
  let y = 0;
  for (let i = 0; i < a.length; i++) {
    d += a[i] * b[i];
    x += a[i] * a[i];
    y += b[i] * b[i];
  }
  return d / Math.sqrt(x * y);
}

/**
 * llama-embedding's vector for `text`. This build sometimes exits 0 with its JSON missing or cut
 * short (seen on the written file's small vocabulary, a few runs in ten): such a run is repeated,
 * up to five times; any other failure throws.
 */
export function llamaCppEmbedding(tool: string, file: string, text: string, context: number): number[] {
  let last = '';
  for (let attempt = 0; attempt < 5; attempt++) {
    const r = spawnSync(tool, ['-m', file, '-p', text, '--embd-normalize', '2', '--embd-output-format', 'json', '-t', '1', '-c', String(context)], { encoding: 'utf8', maxBuffer: 1 << 26 });
    if (r.status !== 0) throw new Error(`llama-embedding on ${JSON.stringify(text)}: exit ${r.status}, ${r.stderr.split('\n').slice(-6).join('\n')}`);
    try {
      return JSON.parse(r.stdout).data[0].embedding;
    } catch {
      last = r.stdout.slice(0, 200);
    }
  }
  throw new Error(`llama-embedding on ${JSON.stringify(text)} gave no JSON in five runs: ${JSON.stringify(last)}`);
}
