/** `weightmap convert IN OUT --to FORMAT [--quant q8_0] [--group-size N]` with a progress bar. */
import { SingleBar, Presets } from 'cli-progress';
import type { Command } from 'commander';
import { convert } from '../convert';
import type { WriteProgress } from '../formats/types';
import type { FormatName } from '../weights';
import { action, intOption } from './run-command';

const WRITABLE: FormatName[] = ['tllm', 'moon', 'embd', 'sepweight', 'ajc1', 'safetensors', 'llama2c', 'npy', 'gguf'];

export function registerConvert(program: Command): void {
  program
    .command('convert')
    .description('convert weights between formats (any reader + any writer)')
    .argument('<input>', 'weight file or folder')
    .argument('<output>', 'file or folder to write')
    .requiredOption('--to <format>', `output format: ${WRITABLE.join(', ')}`)
    .option('--from <format>', 'input format (default: detected)')
    .option('--quant <type>', 'quantize linear weights: q8_0')
    .option('--group-size <n>', 'Q8_0 group size', intOption('group-size', 1))
    .option('--dtype <type>', 'float type where the format offers a choice: f32 or f16')
    .option('--parts <spec>', 'sepweight input: parts to read')
    .option('--no-progress', 'no progress bar')
    .action(
      action(async (input: string, output: string, opts: Record<string, unknown>) => {
        const to = opts.to as FormatName;
        if (!WRITABLE.includes(to)) throw new RangeError(`--to must be one of ${WRITABLE.join(', ')}, got '${to}'`);
        if (opts.quant !== undefined && opts.quant !== 'q8_0') throw new RangeError(`--quant must be q8_0, got '${opts.quant}'`);
        if (opts.dtype !== undefined && opts.dtype !== 'f32' && opts.dtype !== 'f16') {
          throw new RangeError(`--dtype must be f32 or f16, got '${opts.dtype}'`);
        }
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
        try {
          await convert(input, output, {
            to,
            from: opts.from as FormatName | undefined,
            quant: opts.quant as 'q8_0' | undefined,
            groupSize: opts.groupSize as number | undefined,
            dtype: opts.dtype as 'f32' | 'f16' | undefined,
            read: { parts: opts.parts as string | undefined },
            onProgress,
          });
        } finally {
          if (started) bar.stop();
        }
      }),
    );
}
