/** The GGUF format module: the reader (gguf.ts) and the writer (gguf-writer.ts, which builds on the reader's tables, loaded by the first write). */
import { detectGguf, readGguf } from './gguf';
import type { FormatModule } from '../types';

export const ggufFormat: FormatModule = {
  name: 'gguf',
  title: 'GGUF (llama.cpp)',
  detect: detectGguf,
  read: readGguf,
  write: (weights, path, options) => (require('../writing/gguf-writer') as typeof import('../writing/gguf-writer')).writeGguf(weights, path, options),
  quantTypes: ['q8_0'],
};
