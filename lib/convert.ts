/** Conversion between any two formats: a reader plus a writer, never a pairwise converter. */
import { readWeights, writeWeights } from './formats';
import type { ReadOptions, WriteOptions } from './formats/types';
import { closeWeights, type FormatName } from './weights';

export interface ConvertOptions extends WriteOptions {
  /** Output format. */
  to: FormatName;
  /** Input format (default: detected). */
  from?: FormatName;
  /** Reader options (e.g. sepweight parts). */
  read?: ReadOptions;
}

export async function convert(input: string, output: string, options: ConvertOptions): Promise<void> {
  const weights = await readWeights(input, { ...options.read, format: options.from });
  try {
    await writeWeights(weights, output, { ...options, format: options.to });
  } finally {
    closeWeights(weights);
  }
}
