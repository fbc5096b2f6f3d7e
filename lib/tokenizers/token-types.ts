/** llama.cpp's token types (GGUF tokenizer.ggml.token_type; sentencepiece's piece types, the same numbers). */
export const TOKEN_NORMAL = 1;
export const TOKEN_UNKNOWN = 2;
export const TOKEN_CONTROL = 3;
export const TOKEN_USER_DEFINED = 4;
export const TOKEN_UNUSED = 5;
export const TOKEN_BYTE = 6;
