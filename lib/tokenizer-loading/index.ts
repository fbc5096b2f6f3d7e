/** Loading tokenizers from files (on the tokenizer worker where the work is long), and encoding long texts there. */
export { loadTokenizer, loadTokenizerSync, loadAjc1Tokenizer, loadWeightsTokenizer, wordPieceFromVocabTxt } from './load';
export { encodeAsync, WORKER_MIN_CHARS } from './worker-client';
