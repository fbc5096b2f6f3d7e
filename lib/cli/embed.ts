/**
 * `weightmap embed MODEL [TEXT ...]`: sentence embeddings as JSON Lines, one vector (a JSON array)
 * per text in input order. Without TEXT arguments every line of stdin is one text.
 */
import * as readline from 'node:readline';
import type { Command } from 'commander';
import { EMBEDDER_QUANTS, type EmbedderQuant } from '../engines/bert';
import { loadEmbedder, type Embedder, type EmbedOptions } from '../embedder';
import { action, intOption } from './run-command';

/** The shortest decimal that reads back to the same float32 (as the fixtures write them). */
export function float32Text(x: number): string {
  if (!Number.isFinite(x)) return 'null';
  for (let digits = 1; digits < 9; digits++) {
    const s = Number(x.toPrecision(digits));
    if (Math.fround(s) === x) return String(s);
  }
  return String(Number(x.toPrecision(9)));
}

function vectorLine(v: Float32Array): string {
  let line = '[';
  for (let i = 0; i < v.length; i++) line += (i ? ',' : '') + float32Text(v[i]);
  return `${line}]\n`;
}

async function embedAndPrint(embedder: Embedder, texts: string[], options: EmbedOptions): Promise<void> {
  const vectors = await embedder.embed(texts, options);
  process.stdout.write(vectors.map(vectorLine).join(''));
}

export function registerEmbed(program: Command): void {
  program
    .command('embed')
    .description('sentence embeddings (BERT/MiniLM): one JSON array per text, one per line')
    .argument('<model>', 'EMBD file or sentence-transformers folder')
    .argument('[text...]', 'texts to embed (default: one per line of stdin)')
    .option('--batch-size <n>', 'texts per native batch (default 32)')
    .option('--threads <n>', 'encoder threads (default: physical cores)')
    .option('--quant <type>', `linear layers: ${EMBEDDER_QUANTS.join(', ')} (default f32; int8 is the fastest)`)
    .option('--pooling <mode>', 'mean, cls or max (default: the model\'s)')
    .option('--no-normalize', 'skip the L2 normalization')
    .option('--max-seq-length <n>', 'truncate texts to n tokens')
    .action(
      action(async (model: string, texts: string[], opts: Record<string, unknown>) => {
        // Checked here (not by commander) so that a bad value is one line on stderr and exit code 1.
        const int = (flag: string, key: string, min: number) =>
          opts[key] === undefined ? undefined : intOption(flag, min)(String(opts[key]));
        const batchSize = int('batch-size', 'batchSize', 1) ?? 32;
        const threads = int('threads', 'threads', 1);
        const maxSeqLength = int('max-seq-length', 'maxSeqLength', 2);
        if (opts.quant !== undefined && !EMBEDDER_QUANTS.includes(opts.quant as EmbedderQuant)) {
          throw new RangeError(`--quant must be one of ${EMBEDDER_QUANTS.join(', ')}, got '${opts.quant}'`);
        }
        if (opts.pooling !== undefined && !['mean', 'cls', 'max'].includes(opts.pooling as string)) {
          throw new RangeError(`--pooling must be mean, cls or max, got '${opts.pooling}'`);
        }
        const embedder = await loadEmbedder(model, {
          threads,
          quant: opts.quant as EmbedderQuant | undefined,
          maxSeqLength,
        });
        try {
          const options: EmbedOptions = {
            batchSize,
            pooling: opts.pooling as EmbedOptions['pooling'],
            // commander sets normalize=false for --no-normalize, true otherwise: keep the model's default then.
            normalize: opts.normalize === false ? false : undefined,
          };
          if (texts.length > 0) {
            await embedAndPrint(embedder, texts, options);
            return;
          }
          // stdin: embed and print in chunks, so long inputs stream.
          const chunk = Math.max(256, 8 * batchSize);
          let pending: string[] = [];
          const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
          for await (const line of lines) {
            pending.push(line);
            if (pending.length >= chunk) {
              await embedAndPrint(embedder, pending, options);
              pending = [];
            }
          }
          if (pending.length > 0) await embedAndPrint(embedder, pending, options);
        } finally {
          embedder.dispose();
        }
      }),
    );
}
