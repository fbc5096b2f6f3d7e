/** The contract of a format module (lib/formats/<format>.ts): one reader and, where the format can hold the model, one writer. */
import type { FormatName, ModelWeights } from '../weights';

export interface ReadOptions {
  /** sepweight: which parts to map ("f", "b 0-5", "7-12", "75-80 e"); default "f". */
  parts?: string;
  /** Verify checksums where the format has them (EMBD). Default true. */
  verifyChecksums?: boolean;
  /** false: leave vocabulary sidecars unread (ajc1 .tokenizer, llama2.c tokenizer.bin, a sepweight tree's), as when the caller brings its own tokenizer. */
  vocabulary?: boolean;
  /**
   * GGUF and ajc1: start mapping the tensors into the process (native prefaultGgufWeights,
   * prefaultWeightSpans) while the rest is read, for an engine about to read them all in place
   * (loadModel). Default false.
   */
  prefaultWeights?: boolean;
}

export interface WriteProgress {
  bytesWritten: number;
  totalBytes: number;
  tensor?: string;
}

export interface WriteOptions {
  /** Quantize linear weights on the way out (ajc1 always stores Q8_0). */
  quant?: 'q8_0';
  /** Q8_0 group size; default per format (ajc1: 64, halved until it divides every row). */
  groupSize?: number;
  /** Element type for float tensors where the format offers a choice (sepweight/npy: f32 or f16). */
  dtype?: 'f32' | 'f16';
  onProgress?: (progress: WriteProgress) => void;
  signal?: AbortSignal;
}

/** What detect() gets to look at: the path, whether it is a folder, and the first bytes of a file. */
export interface Probe {
  path: string;
  isDirectory: boolean;
  /** Up to the first 64 bytes of the file (empty for a folder). */
  head: Buffer;
  /** Names of the entries of a folder (empty for a file). */
  entries: string[];
}

export interface FormatModule {
  name: FormatName;
  /** Human name, e.g. "ajc1 (qwen3.c)". */
  title: string;
  detect(probe: Probe): boolean;
  read(path: string, options?: ReadOptions): Promise<ModelWeights>;
  /** Writes `weights` as this format; absent for read-only formats. */
  write?(weights: ModelWeights, path: string, options?: WriteOptions): Promise<void>;
  /** false: the format stores no vocabulary (a conversion into it leaves the source's tokenizer behind); absent: it does. */
  holdsVocabulary?: false;
  /** The WriteOptions.quant values (and so groupSize) the writer honours; absent: none. */
  quantTypes?: readonly NonNullable<WriteOptions['quant']>[];
}
