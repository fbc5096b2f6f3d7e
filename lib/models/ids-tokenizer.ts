/**
 * The tokenizer of a model that has no vocabulary in or beside it (a MOON file, a TLLM file without
 * vocab.txt + merges.txt): prompts must be token ids, and generated tokens have no text (their ids
 * are in each piece's `token`). Text raises NoTokenizerError.
 */
import { NoTokenizerError } from '../base/errors';
import type { Tokenizer } from '../tokenizers';

export function idsOnlyTokenizer(vocabSize: number, where: string): Tokenizer {
  const noText = (): never => {
    throw new NoTokenizerError(where);
  };
  return {
    kind: 'none',
    vocabSize,
    specialIds: {},
    truncation: undefined,
    encode: noText,
    decode: () => '',
    idToToken: () => undefined,
    tokenToId: () => undefined,
    isSpecial: () => false,
    createStreamDecoder: () => ({ push: () => '', flush: () => '' }),
  };
}
