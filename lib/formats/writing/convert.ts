/** Conversion between any two formats: a reader plus a writer, never a pairwise converter. */
import { formatModule, outputPathOf, readWeights, writeWeights } from '../';
import type { ReadOptions, WriteOptions } from '../types';
import { hasVocabulary } from '../vocabulary/vocab-convert';
import { closeWeights, type FormatName } from '../../addon/weights';

/** Options of `convert()`: the output format, the writer's options and the reader's. */
export interface ConvertOptions extends WriteOptions {
  /** Output format. */
  to: FormatName;
  /** Input format (default: detected). */
  from?: FormatName;
  /** Reader options (e.g. sepweight parts). */
  read?: ReadOptions;
}

/** What `convert()` reports once the output is in place. */
export interface ConvertResult {
  /** The file or folder written (OUT/ or an existing folder OUT: the file inside it). */
  output: string;
  /** What the output leaves out, one line each (a vocabulary the output format cannot hold). */
  notes: string[];
}

/** Reads `input` in any format and writes it to `output` as `options.to`. The output appears only once complete (a failure or abort leaves the destination as it was) and never replaces the input; a model the format cannot hold is an UnsupportedError. */
export async function convert(input: string, output: string, options: ConvertOptions): Promise<ConvertResult> {
  const weights = await readWeights(input, { ...options.read, format: options.from });
  try {
    output = outputPathOf(output, options.to);
    await writeWeights(weights, output, { ...options, format: options.to });
    const notes: string[] = [];
    if (formatModule(options.to).holdsVocabulary === false && hasVocabulary(weights)) {
      notes.push(`${formatModule(options.to).title} holds no vocabulary: the tokenizer of ${input} was not written (name it as the tokenizer when loading ${output})`);
    }
    return { output, notes };
  } finally {
    closeWeights(weights);
  }
}
