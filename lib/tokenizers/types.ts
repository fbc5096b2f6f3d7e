/**
 * The contract every tokenizer of weightmap fulfils. Reference semantics: Hugging Face's Rust
 * `tokenizers` reading the model's tokenizer.json (llama.cpp for the SentencePiece vocabularies
 * that only exist as llama2.c/GGUF files).
 */

export interface EncodeOptions {
  /** Add the model's special tokens around the text ([CLS] ... [SEP] for BERT, BOS for Llama). Default true. */
  addSpecialTokens?: boolean;
  /**
   * Match special tokens' text (`<|im_end|>`, `</s>`) as those tokens. Default true; false encodes
   * it as ordinary text (HF's split_special_tokens), as chat prompts encode message content.
   */
  parseSpecialTokens?: boolean;
  /**
   * Truncate to at most this many ids, special tokens included (the text's pieces are cut, the
   * special tokens kept). Defaults to the tokenizer's own `truncation` (tokenizer.json), if any.
   */
  maxLength?: number;
}

/** Options of `decode()` and of stream decoders. */
export interface DecodeOptions {
  /** Leave out special tokens (BOS/EOS, [CLS]/[SEP], `<|im_end|>`, ...). Default false. */
  skipSpecialTokens?: boolean;
}

/** Turns ids into text one at a time, yielding only complete UTF-8 characters. */
export interface StreamDecoder {
  /** Text that became complete with this id (possibly ''). */
  push(id: number): string;
  /** Whatever is still pending (incomplete UTF-8 becomes U+FFFD) and resets the decoder. */
  flush(): string;
}

/** The ids of a vocabulary's special tokens, where it has them. */
export interface SpecialTokenIds {
  bos?: number;
  eos?: number;
  pad?: number;
  unk?: number;
  cls?: number;
  sep?: number;
  mask?: number;
}

/** 'none': a model without a vocabulary (lib/models/ids-tokenizer.ts): prompts are token ids. */
export type TokenizerKind = 'byte-level-bpe' | 'byte-fallback-bpe' | 'wordpiece' | 'sentencepiece-bpe' | 'unigram' | 'tllm' | 'none';

/** Text to token ids and back, token for token as Hugging Face's `tokenizers` does for the same vocabulary. */
export interface Tokenizer {
  readonly kind: TokenizerKind;
  /** One past the largest id this tokenizer can produce or decode. */
  readonly vocabSize: number;
  readonly specialIds: Readonly<SpecialTokenIds>;
  /** The default truncation length (from tokenizer.json), if the source sets one. */
  readonly truncation: number | undefined;
  /** The ids of `text`, with the special tokens the vocabulary adds around it (BOS, [CLS]/[SEP]) unless `addSpecialTokens` is false. */
  encode(text: string, options?: EncodeOptions): number[];
  /** The text of `ids`. */
  decode(ids: ArrayLike<number>, options?: DecodeOptions): string;
  /** The token's string as the vocabulary stores it (e.g. `Ġthe`, `##ing`, `▁the`), or undefined. */
  idToToken(id: number): string | undefined;
  /** The id of a token string as the vocabulary stores it, or undefined. */
  tokenToId(token: string): number | undefined;
  /** True for the ids that `skipSpecialTokens` leaves out. */
  isSpecial(id: number): boolean;
  /** A decoder fed one id at a time, for streaming text. */
  createStreamDecoder(options?: DecodeOptions): StreamDecoder;
}
