/**
 * `weightmap convert IN OUT --to FORMAT [--quant q8_0] [--group-size N] [--force]` with a progress
 * bar. OUT/ (or an existing folder) is a folder to write the format's file into. SIGINT or SIGTERM
 * stops the write, removes its temporaries and exits 130 or 143.
 */
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { convert } from '../formats/writing/convert';
import { FORMATS } from '../formats';
import type { WriteProgress } from '../formats/types';
import type { FormatName } from '../addon/weights';
import { choiceOption, existingPath, interruptible, intOption } from './run-command';

const READABLE: FormatName[] = FORMATS.map((f) => f.name);
const WRITABLE: FormatName[] = FORMATS.filter((f) => f.write).map((f) => f.name);
const QUANT_TYPES = [...new Set(FORMATS.flatMap((f) => f.quantTypes ?? []))];

export function registerConvert(program: Command): void {
  program
    .command('convert')
    .description('convert weights between formats (any reader + any writer)')
    .argument('<input>', 'weight file or folder', existingPath)
    .argument('<output>', "file or folder to write (OUT/ or an existing folder: the format's file inside it, e.g. model.gguf)")
    .requiredOption('--to <format>', `output format: ${WRITABLE.join(', ')}`, choiceOption(WRITABLE))
    .option('--from <format>', 'input format (default: detected)', choiceOption(READABLE))
    .option('--quant <type>', `quantize linear weights: ${QUANT_TYPES.join(', ')}`, choiceOption(QUANT_TYPES))
    .option('--group-size <n>', 'Q8_0 group size', intOption(1))
    .option('--dtype <type>', 'float type where the format offers a choice: f32 or f16', choiceOption(['f32', 'f16'] as const))
    .option('--parts <spec>', 'sepweight input: parts to read')
    .option('--force', "replace files beside the output that belong to another model (config.json, tokenizer files)")
    .option('--no-progress', 'no progress bar')
    .action(
      interruptible(async (signal, input: string, output: string, opts: Record<string, unknown>) => {
        const to = opts.to as FormatName;
        const showBar = opts.progress !== false && process.stderr.isTTY;
        const bar = new SingleBar(
          { format: 'converting [{bar}] {percentage}% | {value}/{total} MiB | {tensor}', hideCursor: true, stream: process.stderr },
          Presets.shades_classic,
        );
        let started = false;
        const onProgress = (p: WriteProgress) => {
          if (!showBar) return;
          const mib = (n: number) => Math.round(n / 1048576);
          if (!started) {
            bar.start(mib(p.totalBytes), 0, { tensor: '' });
            started = true;
          }
          bar.update(mib(p.bytesWritten), { tensor: p.tensor ?? '' });
        };
        let notes: string[];
        try {
          ({ notes } = await convert(input, output, {
            to,
            from: opts.from as FormatName | undefined,
            quant: opts.quant as 'q8_0' | undefined,
            groupSize: opts.groupSize as number | undefined,
            dtype: opts.dtype as 'f32' | 'f16' | undefined,
            read: { parts: opts.parts as string | undefined },
            onProgress,
            signal,
            force: opts.force === true,
          }));
        } finally {
          if (started) bar.stop();
        }
        for (const note of notes) process.stderr.write(`weightmap: note: ${note}\n`);
      }),
    );
}
