/** The GGUF format module: the reader (gguf.ts) and the writer (gguf-writer.ts, which builds on the reader's tables). */
import { detectGguf, readGguf } from './gguf';
import { writeGguf } from './gguf-writer';
import type { FormatModule } from './types';

export const ggufFormat: FormatModule = {
  name: 'gguf',
  title: 'GGUF (llama.cpp)',
  detect: detectGguf,
  read: readGguf,
  write: writeGguf,
  quantTypes: ['q8_0'],
};
