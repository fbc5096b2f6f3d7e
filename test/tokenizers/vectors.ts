/** llama.cpp's tokenizer test vectors (`.inp` / `.out`, see fixtures/tokenizers/README.md). */
import * as fs from 'node:fs';
import { fixture } from '../helpers/fixtures';

export interface VectorCase {
  text: string;
  ids: number[];
}

export function llamaCppVectors(vocab: 'qwen2' | 'llama-spm' | 'bert-bge'): VectorCase[] {
  const base = fixture('tokenizers', 'llama.cpp-vocab', `ggml-vocab-${vocab}.gguf`);
  const texts = fs.readFileSync(`${base}.inp`, 'utf8').split('\n__ggml_vocab_test__\n');
  texts.pop(); // the piece after the last separator is empty
  const lines = fs.readFileSync(`${base}.out`, 'utf8').split('\n');
  return texts.map((text, i) => {
    const line = lines[i].trim();
    return { text, ids: line === '' ? [] : line.split(' ').map(Number) };
  });
}
