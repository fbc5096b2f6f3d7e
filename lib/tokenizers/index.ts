/** weightmap tokenizers: exact (Hugging Face / llama.cpp-identical) tokenization in TypeScript. */
export type { Tokenizer, TokenizerKind, EncodeOptions, DecodeOptions, StreamDecoder, SpecialTokenIds } from './types';
export type { AddedToken } from './added-tokens';
export { tokenizerFromData, tokenizerFromDataAsync } from './from-data';
export { tokenizerFromJson, tokenizerFromVocabMerges } from './hf-json';
export { ByteLevelBpeTokenizer } from './byte-level-bpe';
export { ByteFallbackBpeTokenizer } from './byte-fallback-bpe';
export { WordPieceTokenizer } from './wordpiece';
export { SentencePieceBpeTokenizer } from './sentencepiece-bpe';
export { UnigramTokenizer } from './unigram';
export { TllmTokenizer } from './tllm';
export { QWEN2_PATTERN, LLAMA3_PATTERN, O200K_PATTERN, GPT2_PATTERN } from './pretokenizers';
