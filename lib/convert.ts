/** Conversion between any two formats: a reader plus a writer, never a pairwise converter. */
import { formatModule, readWeights, writeWeights } from './formats';
import type { ReadOptions, WriteOptions } from './formats/types';
import { hasVocabulary } from './formats/vocab-convert';
import { closeWeights, type FormatName } from './weights';

export interface ConvertOptions extends WriteOptions {
  /** Output format. */
  to: FormatName;
  /** Input format (default: detected). */
  from?: FormatName;
  /** Reader options (e.g. sepweight parts). */
  read?: ReadOptions;
}

export interface ConvertResult {
  /** What the output leaves out, one line each (a vocabulary the output format cannot hold). */
  notes: string[];
}

export async function convert(input: string, output: string, options: ConvertOptions): Promise<ConvertResult> {
  const weights = await readWeights(input, { ...options.read, format: options.from });
  try {
    await writeWeights(weights, output, { ...options, format: options.to });
    const notes: string[] = [];
    if (formatModule(options.to).holdsVocabulary === false && hasVocabulary(weights)) {
      notes.push(`${formatModule(options.to).title} holds no vocabulary: the tokenizer of ${input} was not written (name it as the tokenizer when loading ${output})`);
    }
    return { notes };
  } finally {
    closeWeights(weights);
  }
}
