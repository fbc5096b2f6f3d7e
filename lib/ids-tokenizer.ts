/**
 * The tokenizer of a model that has no vocabulary beside it (a TLLM file without vocab.txt +
 * merges.txt): prompts must be token ids, and generated tokens have no text (their ids are in
 * each piece's `token`).
 */
import type { Tokenizer } from './tokenizers';

export function idsOnlyTokenizer(vocabSize: number, where: string): Tokenizer {
  const noText = (): never => {
    throw new TypeError(`${where} has no tokenizer (vocab.txt + merges.txt beside it, or { tokenizer }): give the prompt as token ids`);
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
