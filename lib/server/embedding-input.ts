/**
 * What /v1/embeddings and /api/embed take besides texts: OpenAI's token-id inputs (one sequence
 * or several, used as given) and `dimensions` (Matryoshka truncation), each checked against the
 * embedder with a 400 naming the field.
 */
import type { Embedder } from '../models/embedder';
import { invalidRequest } from './api-error';

/** One sequence of ids per input, each id in the vocabulary and each sequence within the model's length. */
export function embeddingTokenIds(embedder: Embedder, input: number[] | number[][]): number[][] {
  const nested = Array.isArray(input[0]);
  const sequences = nested ? (input as number[][]) : [input as number[]];
  const vocab = embedder.config.vocabSize;
  sequences.forEach((ids, i) => {
    const field = nested ? `input[${i}]` : 'input';
    if (ids.length > embedder.maxSeqLength) {
      throw invalidRequest(`${field} has ${ids.length} tokens; the model takes at most ${embedder.maxSeqLength}`, field);
    }
    const bad = ids.findIndex((id) => id >= vocab);
    if (bad >= 0) throw invalidRequest(`${field}[${bad}] is token ${ids[bad]}, outside the vocabulary [0, ${vocab})`, field);
  });
  return sequences;
}

/** `dimensions` as embedTokens takes it: undefined (all of them) or 1 to the embedder's dimension. */
export function embeddingDimensions(embedder: Embedder, dimensions: number | undefined): number | undefined {
  if (dimensions !== undefined && dimensions > embedder.dimension) {
    throw invalidRequest(`dimensions is ${dimensions}; the model's vectors have ${embedder.dimension}`, 'dimensions');
  }
  return dimensions;
}
