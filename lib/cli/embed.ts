/**
 * `weightmap embed MODEL [TEXT ...]`: sentence embeddings as JSON Lines, one vector (a JSON array)
 * per text in input order. Without TEXT arguments every line of stdin is one text.
 */
import * as readline from 'node:readline';
import type { Command } from 'commander';
import { EMBEDDER_QUANTS, type EmbedderQuant } from '../engines/bert';
import { loadEmbedder, type Embedder, type EmbedOptions } from '../models/embedder';
import { choiceOption, existingPath, interruptible, intOption, threadsOption, whenInterrupted } from './run-command';

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
    .argument('<model>', 'EMBD file or sentence-transformers folder', existingPath)
    .argument('[text...]', 'texts to embed (default: one per line of stdin)')
    .option('--batch-size <n>', 'texts per native batch (default 32)', intOption(1))
    .option('--threads <n>', 'encoder threads, 1 to the logical cores (default: physical cores)', threadsOption)
    .option('--quant <type>', `linear layers: ${EMBEDDER_QUANTS.join(', ')} (default f32; int8 is the fastest)`, choiceOption(EMBEDDER_QUANTS))
    .option('--pooling <mode>', 'mean, cls or max (default: the model\'s)', choiceOption(['mean', 'cls', 'max'] as const))
    .option('--no-normalize', 'skip the L2 normalization')
    .option('--dimensions <n>', 'keep the first n components of each vector (Matryoshka), normalized again', intOption(1))
    .option('--max-seq-length <n>', 'truncate texts to n tokens', intOption(2))
    .action(
      interruptible(async (signal, model: string, texts: string[], opts: Record<string, unknown>) => {
        const batchSize = (opts.batchSize as number | undefined) ?? 32;
        const threads = opts.threads as number | undefined;
        const maxSeqLength = opts.maxSeqLength as number | undefined;
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
            dimensions: opts.dimensions as number | undefined,
            signal,
          };
          if (texts.length > 0) {
            await embedAndPrint(embedder, texts, options);
            return;
          }
          // stdin: embed and print in chunks, so long inputs stream.
          const chunk = Math.max(256, 8 * batchSize);
          let pending: string[] = [];
          const lines = readline.createInterface({ input: process.stdin, crlfDelay: Infinity });
          // Closing stdin too: a readline closed alone would keep the process waiting on it.
          whenInterrupted(signal, () => {
            lines.close();
            process.stdin.destroy();
          });
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
